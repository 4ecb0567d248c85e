"""What every table generator under conformance/tools/ does with the text it
renders: write it, or with --check compare it with the committed file."""
import pathlib


def write_or_check(out: pathlib.Path, new: str, script: str, check: bool) -> int:
    """0 written or current, 1 stale (with --check: the file is not what
    `script` renders now)."""
    if check:
        if not out.exists() or out.read_text() != new:
            print(f"{out} is stale: re-run {script}")
            return 1
        return 0
    out.write_text(new)
    print(f"wrote {out}")
    return 0
