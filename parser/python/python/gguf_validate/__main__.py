"""`python -m gguf_validate`: the `gguf-validate` command line.

The wheel's `gguf-validate` command is the command line's own binary (the
CLI crate, built for the wheel's platform), installed by pip next to the
interpreter's scripts; this module runs that binary with the same
arguments, so it prints the same and exits with the same code. A build
without the binary (`maturin develop`, or a wheel built from the sdist)
falls back to a `gguf-validate` on PATH (`cargo install gguf-validate`), and
says how to get one when there is none.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig

_MISSING = """\
gguf-validate: this install of the Python package has no command-line binary \
(a `maturin develop` build or a wheel built from the sdist has only the \
Python API), and there is no `gguf-validate` on PATH.
Get the command line with one of:
  pip install --force-reinstall --only-binary :all: gguf-validate   (the wheel, binary included)
  cargo install gguf-validate                                       (built from crates.io)
  parser/python/cli-binary.sh, then build the wheel                 (in the repository)
"""


def _scripts_dirs() -> list[str]:
    """Where pip installs the wheel's scripts: this environment's, then the
    user scheme's (`pip install --user`)."""
    dirs = [sysconfig.get_path("scripts")]
    try:
        dirs.append(sysconfig.get_path("scripts", sysconfig.get_preferred_scheme("user")))
    except (KeyError, ValueError):
        pass
    return [d for d in dirs if d]


def binary() -> str | None:
    """The `gguf-validate` binary this module runs: the wheel's, else the
    first on PATH; `None` when there is none."""
    for d in _scripts_dirs():
        exe = shutil.which("gguf-validate", path=d)
        if exe:
            return exe
    return shutil.which("gguf-validate")


def main() -> int:
    """Runs the command line on `sys.argv`; returns its exit code where it
    cannot replace this process (Windows), 2 when there is no binary."""
    exe = binary()
    if exe is None:
        sys.stderr.write(_MISSING)
        return 2
    argv = ["gguf-validate", *sys.argv[1:]]
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        # The binary replaces this process: same signals, same exit code.
        os.execv(exe, argv)
    return subprocess.call([exe, *argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
