import pytest

from fabscope.fabric.generators import itasca


@pytest.fixture(scope="session")
def itasca_fabric():
    return itasca()


@pytest.fixture
def tmpfs():
    """``make(size, mode=None)``: a new folder with a tmpfs of that size mounted on it (root only; skipped
    otherwise), a disk that fills; every one unmounted and removed at the end.  ``mode`` (e.g. 0o755): the
    folder's, for a server run as another user (pytest's own folders are 0700)."""
    import os
    import shutil
    import subprocess
    import tempfile

    made = []

    def make(size: str, mode: int | None = None):
        from pathlib import Path

        if os.geteuid() != 0 or not shutil.which("mount"):
            pytest.skip("mounting a tmpfs needs root")
        d = Path(tempfile.mkdtemp(prefix="fabscope-tmpfs-"))
        opts = f"size={size}" + (f",mode={mode:o}" if mode is not None else "")
        if mode is not None:
            os.chmod(d, mode)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(d)], capture_output=True, text=True)
        if r.returncode != 0:
            os.rmdir(d)
            pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
        made.append(d)
        return d

    yield make
    for d in made:
        subprocess.run(["umount", "-l", str(d)], check=True)
        os.rmdir(d)
