"""The supervisor between fabscope and the launcher starts no job once fabscope is gone."""

import os
import signal
import subprocess


def test_no_launcher_is_started_once_fabscope_is_gone(tmp_path):
    """A Ctrl-C while fabscope starts the supervisor (inside its fork and exec) ends fabscope before the
    supervisor is up: the pipe it watches is closed already.  It must not start the launcher then (it
    used to, and ended the job only after fabscope had said it was interrupted).  The launcher here
    does not exist, so a supervisor that tries to start it says so and exits 127."""
    from fabscope.measure.runner import _supervisor_env, supervised

    missing = str(tmp_path / "no-such-launcher")
    r, w = os.pipe()
    os.close(w)                                     # fabscope gone: nobody holds the write end
    p = subprocess.run(supervised([missing], r), env=_supervisor_env(dict(os.environ)), pass_fds=(r,),
                       capture_output=True, text=True, timeout=60)
    os.close(r)
    assert (p.returncode, p.stderr) == (128 + signal.SIGKILL, "")
    r, w = os.pipe()                                # fabscope there: it tries, and says it cannot
    p = subprocess.run(supervised([missing], r), env=_supervisor_env(dict(os.environ)), pass_fds=(r,),
                       capture_output=True, text=True, timeout=60)
    os.close(r)
    os.close(w)
    assert p.returncode == 127 and "cannot start" in p.stderr
