"""fabscope.mapping"""
