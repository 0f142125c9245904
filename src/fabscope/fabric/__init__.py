"""The fabric model, its generators, importers and exporters."""

from fabscope.fabric.model import MB, Fabric, FabricBuilder, Level
from fabscope.fabric.placement import Placement

__all__ = ["MB", "Fabric", "FabricBuilder", "Level", "Placement"]
