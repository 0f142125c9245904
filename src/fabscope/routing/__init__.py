"""fabscope.routing"""
