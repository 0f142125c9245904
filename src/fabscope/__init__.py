"""fabscope: measure, model and map HPC interconnects.

The three parts share one model of the machine, :class:`fabscope.fabric.Fabric`.
"""

__version__ = "0.1.0"
