"""`python -m trainwreck ARGS`: runs the binary with ARGS, its exit status unchanged."""

import os
import sys

from trainwreck import find_binary


def main():
    binary = find_binary()
    if sys.platform == "win32":
        import subprocess

        sys.exit(subprocess.call([binary, *sys.argv[1:]]))
    # exec: the binary takes this process's place, so signals, stdin and the exit status
    # are its own.
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()
