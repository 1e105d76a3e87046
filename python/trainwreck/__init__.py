"""trainwreck's Python package: only a way to find and run the binary the wheel installed.

The diagnosis is all in the binary (`trainwreck` on PATH after `pip install trainwreck`);
this package adds `python -m trainwreck` and `trainwreck.find_binary()` and must not grow
any analysis of its own.
"""

import os
import sys
import sysconfig

__all__ = ["find_binary"]


def _candidates():
    exe = "trainwreck" + (".exe" if sys.platform == "win32" else "")
    # Where pip put the wheel's scripts: the environment's own scheme first, then the
    # user scheme (`pip install --user`), then the prefix scheme a --target/--prefix
    # install may have used.
    schemes = [None]
    if sys.platform != "win32":
        schemes.append("posix_user")
        schemes.append("posix_prefix")
    for scheme in schemes:
        try:
            path = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        if path:
            yield os.path.join(path, exe)
    # A `pip install --target DIR`: the scripts land in DIR/bin beside the package.
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    yield os.path.join(here, "bin", exe)


def find_binary():
    """The path of the `trainwreck` binary this package was installed with."""
    for path in _candidates():
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError(
        "trainwreck: the trainwreck binary is not where pip installs it "
        "(looked in: " + ", ".join(_candidates()) + "); reinstall with `pip install trainwreck`"
    )
