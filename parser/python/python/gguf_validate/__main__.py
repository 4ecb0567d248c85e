"""`gguf-validate` and `python -m gguf_validate`: the command line, the same
Rust entry point as the cargo-built binary, with the same exit codes."""

from __future__ import annotations

import signal
import sys


def main() -> int:
    """Runs the command line on `sys.argv` and returns its exit code."""
    from gguf_validate import _native

    # Ctrl-C stops the run as it stops the binary (Python's handler would
    # wait for Rust to return first).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.stdout.flush()
    sys.stderr.flush()
    return _native.main(["gguf-validate", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
