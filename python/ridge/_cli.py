"""The ``ridge`` console script: runs the command-line tool that ships inside the package."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def executable() -> Path:
    """The ``ridge`` binary inside the installed package (``ridge/bin/ridge``)."""
    return Path(__file__).resolve().parent / "bin" / "ridge"


def main() -> None:
    tool = executable()
    if not os.access(tool, os.X_OK):
        sys.exit(f"ridge: the command-line tool is not in this installation ({tool} is missing); reinstall "
                 "the package with `pip install .` from a ridge checkout, or build it with scripts/setup.sh "
                 "and run build/bin/ridge")
    # exec, not a child: signals, exit codes and `ridge trace -- CMD` behave as with the binary itself.
    os.execv(tool, [str(tool), *sys.argv[1:]])


if __name__ == "__main__":
    main()
