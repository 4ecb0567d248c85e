#!/usr/bin/env python3
"""modelaudit (PyPI modelaudit==0.2.54, promptfoo's scanner): its GGUF
scanner (`modelaudit scan --scanners gguf`, run in-process without the CLI,
cache or telemetry) on FILE.

Verdict: rejected (exit 1) when the scan does not complete or reports an
issue of severity warning or critical (a malformed structure, a size that
does not fit, a chat template with SSTI patterns); accepted (exit 0) when
it reports only info or debug issues. The issues are printed on stderr,
one per line. `--version` prints the package version."""
import os
import sys

os.environ.setdefault("PROMPTFOO_DISABLE_TELEMETRY", "1")
os.environ.setdefault("NO_ANALYTICS", "1")

import logging  # noqa: E402

logging.disable(logging.CRITICAL)


def main() -> int:
    if len(sys.argv) == 2 and sys.argv[1] == "--version":
        from importlib.metadata import version

        print(f"modelaudit {version('modelaudit')}")
        return 0
    if len(sys.argv) != 2:
        print("usage: modelaudit_gguf.py FILE | --version", file=sys.stderr)
        return 2
    from modelaudit.scanners.gguf_scanner import GgufScanner

    result = GgufScanner().scan(sys.argv[1])
    bad = False
    for issue in result.issues:
        sev = getattr(issue.severity, "value", str(issue.severity))
        print(f"modelaudit: {sev}: {issue.message}", file=sys.stderr)
        bad |= sev in ("warning", "critical")
    if not result.success:
        print("modelaudit: scan did not complete", file=sys.stderr)
    return 1 if bad or not result.success else 0


if __name__ == "__main__":
    sys.exit(main())
