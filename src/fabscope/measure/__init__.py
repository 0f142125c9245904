"""fabscope.measure"""
