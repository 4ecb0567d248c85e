#!/usr/bin/env python3
"""Conformance adapter for gguf-py's GGUFReader (PyPI `gguf`, pinned in
install.sh). Usage: gguf_py.py FILE | --version

Opens the file with GGUFReader, reads every field's contents, and touches
every tensor's data (numpy view over the memmap: its full byte length is
read and summed, so short or out-of-range data fails here).

Exit 0 = accepted, 1 = rejected (the reader raised an ordinary exception,
which is how this library refuses a file). RecursionError and MemoryError
are not refusals but resource exhaustion: exit 3, a crash for the runner.
A hang is cut off by the runner's time limit.
"""
import sys


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--version":
        from importlib.metadata import version

        print(f"gguf {version('gguf')} (numpy {version('numpy')})")
        return 0
    if len(sys.argv) != 2:
        print("usage: gguf_py.py FILE | --version", file=sys.stderr)
        return 2
    import numpy as np
    from gguf import GGUFReader

    try:
        reader = GGUFReader(sys.argv[1], "r")
        for field in reader.fields.values():
            field.contents()
        for tensor in reader.tensors:
            data = np.asarray(tensor.data)
            raw = data.view(np.uint8) if data.dtype != np.uint8 else data
            if raw.size != int(tensor.n_bytes):
                raise ValueError(f"tensor {tensor.name}: {raw.size} data bytes, expected {tensor.n_bytes}")
            int(raw.sum(dtype=np.uint64))
    except (RecursionError, MemoryError) as e:
        print(f"gguf-py: {type(e).__name__}: {e}", file=sys.stderr)
        return 3
    except Exception as e:  # noqa: BLE001 - any exception is the reader refusing the file
        print(f"gguf-py: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
