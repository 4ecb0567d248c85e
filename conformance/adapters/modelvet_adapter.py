#!/usr/bin/env python3
"""modelvet (PyPI modelvet==0.1.1, tetsuo-ai/modelvet: a freestanding C11
verifier, through its ctypes binding): verify_path(FILE, "gguf").

Exit 0 ACCEPT, 1 REJECT (the violation and its byte offset on stderr).
modelvet's third outcome, "no verdict" (an exception: arena exhaustion or
API misuse), exits 3, which the matrix counts as a crash with the reason
in the excerpt. `--version` prints the package and library versions."""
import sys

import modelvet


def main() -> int:
    if len(sys.argv) == 2 and sys.argv[1] == "--version":
        print(f"modelvet {modelvet.__version__} (library {modelvet.library_version()})")
        return 0
    if len(sys.argv) != 2:
        print("usage: modelvet_adapter.py FILE | --version", file=sys.stderr)
        return 2
    try:
        report = modelvet.verify_path(sys.argv[1], "gguf")
    except Exception as e:  # modelvet's "no verdict"
        print(f"modelvet: no verdict: {type(e).__name__}: {e}", file=sys.stderr)
        return 3
    if report.accepted:
        return 0
    print(f"modelvet: REJECT {report.violation_name} at offset {report.offset}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
