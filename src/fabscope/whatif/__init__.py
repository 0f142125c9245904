"""What-if: which pairs lose bandwidth when cables fail (above the model).

See :mod:`fabscope.whatif.cuts`.
"""

from fabscope.whatif.cuts import WhatIf, cut_cables, parse_cut, whatif

__all__ = ["WhatIf", "cut_cables", "parse_cut", "whatif"]
