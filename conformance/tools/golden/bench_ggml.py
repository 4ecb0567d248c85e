#!/usr/bin/env python3
"""Time ggml's `to_float` on the buffers the Rust dequant benchmark wrote.

Usage: bench_ggml.py DIR
Reads DIR/rust.tsv (type, in_bytes, elems, median_ns) and DIR/<type>.bin,
calls ggml's to_float (or dequantize_row_q8_K) through ctypes RUNS times on
the same bytes, and writes DIR/ggml.tsv with the median. Then prints one table
with both medians and the ratio ours/ggml (time; < 1 means ours is faster).
Types ggml cannot decode (Q8_1, F32, F64, I8..I64) show "-".
"""
from __future__ import annotations

import ctypes
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gen_golden import Ggml, lib_path  # noqa: E402

RUNS = 21


def main() -> int:
    d = pathlib.Path(sys.argv[1])
    g = Ggml(lib_path())
    rows = [line.split("\t") for line in (d / "rust.tsv").read_text().splitlines()[1:] if line]
    out = ["type\tmedian_ns"]
    table = []
    for name, in_bytes, elems, rust_ns in rows:
        raw = (d / f"{name}.bin").read_bytes()
        assert len(raw) == int(in_bytes), name
        fn = g.to_float_fn(name)
        ggml_ns = None
        if fn is not None:
            src = ctypes.create_string_buffer(raw, len(raw))
            dst = np.zeros(int(elems), dtype=np.float32)
            times = []
            for _ in range(RUNS):
                t = time.perf_counter_ns()
                fn(ctypes.addressof(src), dst.ctypes.data, int(elems))
                times.append(time.perf_counter_ns() - t)
            ggml_ns = sorted(times)[RUNS // 2]
            out.append(f"{name}\t{ggml_ns}")
        table.append((name, int(in_bytes), int(elems), int(rust_ns), ggml_ns))
    (d / "ggml.tsv").write_text("\n".join(out) + "\n")

    print(f"{'type':<8} {'ours GB/s':>10} {'ggml GB/s':>10} {'ours Melem/s':>13} {'ggml Melem/s':>13} {'time ours/ggml':>15}")
    for name, nb, ne, rn, gn in table:
        ours_gbs = nb / rn
        ours_me = ne * 1e3 / rn
        if gn is None:
            print(f"{name:<8} {ours_gbs:>10.2f} {'-':>10} {ours_me:>13.0f} {'-':>13} {'-':>15}")
        else:
            print(f"{name:<8} {ours_gbs:>10.2f} {nb / gn:>10.2f} {ours_me:>13.0f} {ne * 1e3 / gn:>13.0f} {rn / gn:>15.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
