"""Reading screenshots: pixels of a picture's box, how much of it is drawn."""

from __future__ import annotations

import io

import numpy as np


def pixels(png: bytes, box: dict) -> np.ndarray:
    """RGB pixels of a screenshot inside a picture's box."""
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    x, y, w, h = (int(round(box[k])) for k in ("x", "y", "width", "height"))
    return img[y:y + h, x:x + w]


def inked(px: np.ndarray) -> float:
    """Fraction of pixels that are not (near) white background."""
    return float((px.min(axis=2) < 235).mean())


def coloured(px: np.ndarray) -> int:
    """Pixels of a saturated colour (curves, bars), not the grey of axes, grids and text."""
    return int(((px.max(axis=2) - px.min(axis=2)) > 60).sum())
