"""fabscope.model"""
