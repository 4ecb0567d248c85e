#!/usr/bin/env python3
"""Time ggml on the buffers the Rust benchmarks wrote.

Usage: bench_ggml.py DIR            (dequantize)
       bench_ggml.py --quant DIR    (quantize)

Dequantize: reads DIR/rust.tsv (type, in_bytes, elems, median_ns) and
DIR/<type>.bin, calls ggml's to_float (or dequantize_row_q8_K) through ctypes
RUNS times on the same bytes, and writes DIR/ggml.tsv with the median. Types
ggml cannot decode (Q8_1, F32, F64, I8..I64) show "-".

Quantize: reads DIR/rust.tsv (type, mode, elems, n_per_row, median_ns),
DIR/input.f32 and DIR/imatrix.f32, runs ggml_quantize_chunk (one thread, all
rows in one call, after one warm-up call that also builds the IQ lattice
maps) QUANT_RUNS times per type and mode, checks that its bytes equal ours
(DIR/<type>.<mode>.bin) and writes DIR/ggml.tsv.

Both print one table with both medians and the ratio ours/ggml (time; < 1
means ours is faster). Both sides time the CPU time of the calling thread
(Rust: CLOCK_THREAD_CPUTIME_ID, Python: time.thread_time_ns), so that other
processes on a shared machine do not inflate one side.
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
QUANT_RUNS = 7


def quant(d: pathlib.Path) -> int:
    g = Ggml(lib_path())
    rows = [line.split("\t") for line in (d / "rust.tsv").read_text().splitlines()[1:] if line]
    x = np.fromfile(d / "input.f32", dtype="<f4")
    w = np.fromfile(d / "imatrix.f32", dtype="<f4")
    out = ["type\tmode\tmedian_ns"]
    print(f"{'type':<8} {'mode':<8} {'ours Melem/s':>13} {'ggml Melem/s':>13} {'time ours/ggml':>15} {'bytes':>6}")
    for name, mode, elems, npr, rust_ns in rows:
        npr = int(npr)
        rows_x = x.reshape(-1, npr)
        qw = w if mode == "imatrix" else None
        g.quantize_chunk(name, rows_x, qw)
        times = []
        for _ in range(QUANT_RUNS):
            t = time.thread_time_ns()
            got = g.quantize_chunk(name, rows_x, qw)
            times.append(time.thread_time_ns() - t)
        ggml_ns = sorted(times)[QUANT_RUNS // 2]
        same = "same" if got == (d / f"{name}.{mode}.bin").read_bytes() else "DIFFER"
        out.append(f"{name}\t{mode}\t{ggml_ns}")
        ne, rn = int(elems), int(rust_ns)
        print(f"{name:<8} {mode:<8} {ne * 1e3 / rn:>13.2f} {ne * 1e3 / ggml_ns:>13.2f} {rn / ggml_ns:>15.2f} {same:>6}")
    (d / "ggml.tsv").write_text("\n".join(out) + "\n")
    return 0


def main() -> int:
    if sys.argv[1] == "--quant":
        return quant(pathlib.Path(sys.argv[2]))
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
                t = time.thread_time_ns()
                fn(ctypes.addressof(src), dst.ctypes.data, int(elems))
                times.append(time.thread_time_ns() - t)
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
