"""Every picture of a report as PNG and SVG, for papers and slides (kaleido).

kaleido (>= 1) drives a Chrome or Chromium through the DevTools protocol; it
finds Debian's ``chromium`` on the PATH, or the browser named by the
``BROWSER_PATH`` environment variable.  Nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from typing import Sequence

from fabscope.errors import FabscopeError
from fabscope.report.picture import Picture

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_browser() -> str | None:
    """The Chromium kaleido (and the report's own browser checks) will use, or None."""
    env = os.environ.get("BROWSER_PATH")
    if env and os.access(env, os.X_OK):
        return env
    for name in BROWSERS:
        p = shutil.which(name)
        if p:
            return p
    return None


def export_images(pictures: Sequence[Picture], folder: str, formats: Sequence[str] = ("png", "svg"),
                  prefix: str = "") -> list[str]:
    """Write each picture as ``folder/prefix+name.fmt``; returns the paths written."""
    browser = find_browser()
    if browser is None:
        raise FabscopeError("static export needs Chromium (Debian: apt-get install chromium) "
                            "or BROWSER_PATH naming a Chrome")
    os.environ.setdefault("BROWSER_PATH", browser)     # how kaleido's choreographer is told which browser
    import plotly.io as pio

    made = not os.path.isdir(folder)
    try:
        os.mkdir(folder)          # its parent only: a missing parent is refused, not created
    except FileExistsError:
        if not os.path.isdir(folder):
            raise FabscopeError(f"--images {folder}: not a folder (give a folder for the pictures)") from None
    except OSError as err:
        raise FabscopeError(f"--images {folder}: cannot create it ({err.strerror})") from None
    figs, paths, seen = [], [], set()
    for p in pictures:
        stem = prefix + p.name
        k = 2
        while stem in seen:
            stem, k = f"{prefix}{p.name}-{k}", k + 1
        seen.add(stem)
        for fmt in formats:
            figs.append((p, fmt, os.path.join(folder, f"{stem}.{fmt}")))
    # write to temporary names, then rename: a failed export leaves no half-written picture
    tmp = [path + ".part." + fmt for (_, fmt, path) in figs]
    try:
        pio.write_images([p.fig for p, _, _ in figs], tmp, format=[fmt for _, fmt, _ in figs],
                         width=[p.width for p, _, _ in figs], height=[p.height for p, _, _ in figs])
        for t, (_, _, path) in zip(tmp, figs):
            os.replace(t, path)
            paths.append(path)
    except BaseException as err:
        for t in tmp:
            if os.path.exists(t):
                os.unlink(t)
        if made:                  # the folder this call made goes too: a failure leaves nothing
            for path in paths:
                os.unlink(path)
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        if not isinstance(err, Exception):
            raise
        if isinstance(err, FabscopeError):
            raise
        raise FabscopeError(f"static export failed: {type(err).__name__}: {err}".splitlines()[0]) from err
    return paths
