"""`python3 -m trainwreck.ci`: runs the CI script shipped in this package (ci.sh, the one the
GitHub Action runs) with the binary this package was installed with. Configured by the
TRAINWRECK_* variables ci.sh documents; exits with its status."""

import os
import sys

from trainwreck import find_binary


def main():
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ci.sh")
    if not os.environ.get("TRAINWRECK_BIN"):
        os.environ["TRAINWRECK_BIN"] = find_binary()
    os.execvp("sh", ["sh", script, *sys.argv[1:]])


if __name__ == "__main__":
    main()
