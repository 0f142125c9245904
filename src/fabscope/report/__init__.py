"""fabscope.report"""
