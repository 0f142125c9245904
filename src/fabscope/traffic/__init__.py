"""fabscope.traffic"""
