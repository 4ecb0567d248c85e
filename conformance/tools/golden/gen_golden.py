#!/usr/bin/env python3
"""Generate the numerics golden vectors under corpus/golden/ from ggml's C reference.

ggml is loaded from the `libggml-base.so` that the `llama-cpp-python`
wheel installs (site-packages/llama_cpp/lib/). Through ctypes this script calls

* `ggml_get_type_traits(type)->to_float` (dequantize) for every type that
  has one, and the exported `dequantize_row_q8_K` for Q8_K;
* `ggml_get_type_traits(type)->from_float_ref` (the `quantize_row_*_ref`
  functions) and the exported `quantize_row_q8_K_ref`;
* `ggml_validate_row_data` on every dequantize input block;
* `ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row, imatrix)`, the
  quantizer llama-quantize calls, without and with importance matrices
  (quant/chunk/: see `chunk_goldens`).

Types ggml cannot decode (Q8_1, F32, F64, I8..I64) get their expected output
from the documented layout in numpy and are marked `"reference": "layout"`.
gguf-py's `gguf.quants` (pip package `gguf`) is used as a second, independent
reference: its results are compared with ggml's and the agreement is recorded
in the manifest (no file depends on it).

Output (all little-endian):
  dequant/<type>.bin   input blocks, then the f32 output (F16/BF16: output of
                       every u16 bit pattern 0..65535 only)
  quant/input.f32      the quantizer input rows (ROW_LEN f32 each)
  quant/<type>.bin     ggml's blocks for every row, rows concatenated (IQ4_NL
                       blocks whose nibbles ggml leaves uninitialised are
                       written with nibbles 0 and listed in the manifest)
  quant/chunk/<set>/   input.f32 (rows of n_per_row f32), imatrix<k>.f32 (n_per_row
                       f32 weights each), <type>.bin (ggml_quantize_chunk of all rows
                       at once, imatrix NULL; not for the types ggml requires an
                       imatrix for), <type>.imatrix<k>.bin (with weights k; only for
                       the types whose quantize_<type> reads them). For the IQ lattice
                       types ggml aborts on some rows: those run in a child process,
                       and each file holds the rows listed in its "rows".
  manifest.json        versions, seeds, row kinds, per-file sha256

Usage: . "$VENV/bin/activate" && python gen_golden.py [--out DIR]   (VENV: a venv with llama-cpp-python==0.3.36)
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[3]
SEED = 20261122
ROW_LEN = 256

# name, id, elements per block, bytes per block
TYPES = [
    ("f32", 0, 1, 4), ("f16", 1, 1, 2), ("q4_0", 2, 32, 18), ("q4_1", 3, 32, 20),
    ("q5_0", 6, 32, 22), ("q5_1", 7, 32, 24), ("q8_0", 8, 32, 34), ("q8_1", 9, 32, 36),
    ("q2_K", 10, 256, 84), ("q3_K", 11, 256, 110), ("q4_K", 12, 256, 144), ("q5_K", 13, 256, 176),
    ("q6_K", 14, 256, 210), ("q8_K", 15, 256, 292), ("iq2_xxs", 16, 256, 66), ("iq2_xs", 17, 256, 74),
    ("iq3_xxs", 18, 256, 98), ("iq1_s", 19, 256, 50), ("iq4_nl", 20, 32, 18), ("iq3_s", 21, 256, 110),
    ("iq2_s", 22, 256, 82), ("iq4_xs", 23, 256, 136), ("i8", 24, 1, 1), ("i16", 25, 1, 2),
    ("i32", 26, 1, 4), ("i64", 27, 1, 8), ("f64", 28, 1, 8), ("iq1_m", 29, 256, 56),
    ("bf16", 30, 1, 2), ("tq1_0", 34, 256, 54), ("tq2_0", 35, 256, 66), ("mxfp4", 39, 32, 17),
    ("nvfp4", 40, 64, 36), ("q1_0", 41, 128, 18), ("q2_0", 42, 64, 18),
]
BY_NAME = {t[0]: t for t in TYPES}

# Scale fields per type: (byte offset, kind). kind: f16 | f32 | e8m0 | ue4m3 | iq1m
SCALES = {
    "q4_0": [(0, "f16")], "q5_0": [(0, "f16")], "q8_0": [(0, "f16")], "q1_0": [(0, "f16")], "q2_0": [(0, "f16")],
    "q4_1": [(0, "f16"), (2, "f16")], "q5_1": [(0, "f16"), (2, "f16")], "q8_1": [(0, "f16"), (2, "f16")],
    "q2_K": [(80, "f16"), (82, "f16")], "q3_K": [(108, "f16")], "q4_K": [(0, "f16"), (2, "f16")],
    "q5_K": [(0, "f16"), (2, "f16")], "q6_K": [(208, "f16")], "q8_K": [(0, "f32")],
    "iq2_xxs": [(0, "f16")], "iq2_xs": [(0, "f16")], "iq2_s": [(0, "f16")], "iq3_xxs": [(0, "f16")],
    "iq3_s": [(0, "f16")], "iq1_s": [(0, "f16")], "iq4_nl": [(0, "f16")], "iq4_xs": [(0, "f16")],
    "iq1_m": [(48, "iq1m")], "tq1_0": [(52, "f16")], "tq2_0": [(64, "f16")],
    "mxfp4": [(0, "e8m0")], "nvfp4": [(0, "ue4m3"), (1, "ue4m3"), (2, "ue4m3"), (3, "ue4m3")],
}

F16_SPECIAL = [0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE55, 0x0000, 0x8000, 0x0001, 0x83FF, 0x7BFF, 0xFBFF, 0x0400]
F32_SPECIAL = [0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC12345, 0x80000000, 0x00000001, 0x7F7FFFFF]
E8M0_SPECIAL = [0x00, 0x01, 0x02, 0xFE, 0xFF, 0x7F, 0x80, 0x3F]

# Types whose ggml reference quantizer is reproduced (must match the Rust side).
QUANT_TYPES = ["f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q8_1", "q2_K", "q3_K", "q4_K",
               "q5_K", "q6_K", "q8_K", "iq4_nl", "iq4_xs", "tq1_0", "tq2_0", "mxfp4", "nvfp4", "q1_0", "q2_0",
               "iq3_xxs", "iq3_s", "iq2_s"]
# The lattice types: ggml aborts on some inputs (GGML_ASSERT / GGML_ABORT on
# NaN scales, points off the grid), so they run in a child process and the
# rows it aborts on are left out and listed ("rows").
LATTICE_TYPES = ["iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq1_s", "iq1_m"]
# ggml_quantize_requires_imatrix: no golden without weights (ggml asserts).
REQUIRES_IMATRIX = ["iq2_xxs", "iq2_xs", "iq1_s"]


# Types ggml_quantize_chunk handles among QUANT_TYPES (it has no case for Q8_1 / Q8_K),
# and those of them whose quantize_<type> reads the importance matrix.
CHUNK_TYPES = [t for t in QUANT_TYPES if t not in ("q8_1", "q8_K")] + ["iq2_xxs", "iq2_xs", "iq1_s", "iq1_m"]
IMATRIX_TYPES = ["q4_0", "q4_1", "q5_0", "q5_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_nl", "iq4_xs"] \
    + LATTICE_TYPES


def in_child(fn) -> bytes | None:
    """fn() in a forked child; its bytes, or None when the child dies (ggml aborted)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 0
        try:
            data = fn()
            view = memoryview(data)
            while view:
                view = view[os.write(w, view):]
        except BaseException:  # noqa: BLE001 - any failure is reported through the exit code
            code = 3
        os._exit(code)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 1 << 16)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return b"".join(chunks)
    return None


def rows_ggml_survives(fn_rows, n: int) -> tuple[bytes, list[int]]:
    """fn_rows(rows) -> bytes for the given row indices, run in a child; if
    it aborts, each row alone finds the rows it aborts on, and the others
    are run together. Returns (bytes, rows kept)."""
    keep = list(range(n))
    data = in_child(lambda: fn_rows(keep))
    if data is None:
        keep = [i for i in range(n) if in_child(lambda i=i: fn_rows([i])) is not None]
        data = in_child(lambda: fn_rows(keep))
        assert data is not None, "rows that pass alone abort together"
    return data, keep


class Traits(ctypes.Structure):
    # struct ggml_type_traits, ggml/include/ggml.h of the pinned sdist
    _fields_ = [
        ("type_name", ctypes.c_char_p),
        ("blck_size", ctypes.c_int64),
        ("blck_size_interleave", ctypes.c_int64),
        ("type_size", ctypes.c_size_t),
        ("is_quantized", ctypes.c_bool),
        ("to_float", ctypes.c_void_p),
        ("from_float_ref", ctypes.c_void_p),
    ]


TO_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
FROM_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


def lib_path() -> str:
    # Another build of ggml (e.g. with -march=native -ffp-contract=fast, to
    # see whether floating-point contraction changes any byte): its
    # libggml-base.so. See conformance/tools/golden/fp_contract.sh.
    if os.environ.get("GGML_BASE_LIB"):
        return os.environ["GGML_BASE_LIB"]
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llama_cpp (pip package llama-cpp-python) is not installed")
    return os.path.join(spec.submodule_search_locations[0], "lib", "libggml-base.so")


class Ggml:
    def __init__(self, path: str):
        self.path = path
        self.lib = ctypes.CDLL(path)
        self.lib.ggml_get_type_traits.restype = ctypes.POINTER(Traits)
        self.lib.ggml_get_type_traits.argtypes = [ctypes.c_int]
        self.lib.ggml_version.restype = ctypes.c_char_p
        self.lib.ggml_commit.restype = ctypes.c_char_p
        self.lib.ggml_validate_row_data.restype = ctypes.c_bool
        self.lib.ggml_validate_row_data.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
        self.lib.ggml_quantize_init.argtypes = [ctypes.c_int]
        self.lib.ggml_quantize_init.restype = None
        self.lib.ggml_quantize_chunk.restype = ctypes.c_size_t
        self.lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                                 ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]

    def quantize_chunk(self, name: str, rows: np.ndarray, imatrix: np.ndarray | None) -> bytes:
        """ggml_quantize_chunk(type, rows, dst, 0, nrows, n_per_row, imatrix) over all rows at once."""
        _, tid, bs, ts = BY_NAME[name]
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        nrows, n_per_row = rows.shape
        out = ctypes.create_string_buffer(rows.size // bs * ts)
        qw = None
        if imatrix is not None:
            imatrix = np.ascontiguousarray(imatrix, dtype=np.float32)
            qw = imatrix.ctypes.data
        n = self.lib.ggml_quantize_chunk(tid, rows.ctypes.data, ctypes.addressof(out), 0, nrows, n_per_row, qw)
        assert n == len(out.raw), (name, n, len(out.raw))
        return out.raw

    def traits(self, tid: int) -> Traits:
        return self.lib.ggml_get_type_traits(tid).contents

    def to_float_fn(self, name: str):
        tid = BY_NAME[name][1]
        if name == "q8_K":
            return TO_FLOAT(ctypes.cast(self.lib.dequantize_row_q8_K, ctypes.c_void_p).value)
        ptr = self.traits(tid).to_float
        return TO_FLOAT(ptr) if ptr else None

    def from_float_fn(self, name: str):
        tid = BY_NAME[name][1]
        if name == "q8_K":
            return FROM_FLOAT(ctypes.cast(self.lib.quantize_row_q8_K_ref, ctypes.c_void_p).value)
        ptr = self.traits(tid).from_float_ref
        return FROM_FLOAT(ptr) if ptr else None

    def dequantize(self, name: str, raw: bytes) -> np.ndarray | None:
        fn = self.to_float_fn(name)
        if fn is None:
            return None
        _, _, bs, ts = BY_NAME[name]
        n = len(raw) // ts * bs
        src = ctypes.create_string_buffer(raw, len(raw))
        out = np.zeros(n, dtype=np.float32)
        fn(ctypes.addressof(src), out.ctypes.data, n)
        return out

    def quantize(self, name: str, x: np.ndarray) -> bytes:
        fn = self.from_float_fn(name)
        _, _, bs, ts = BY_NAME[name]
        x = np.ascontiguousarray(x, dtype=np.float32)
        out = ctypes.create_string_buffer(len(x) // bs * ts)  # zero-filled
        fn(x.ctypes.data, ctypes.addressof(out), len(x))
        return out.raw

    def validate(self, name: str, raw: bytes) -> bool:
        buf = ctypes.create_string_buffer(raw, len(raw))
        return bool(self.lib.ggml_validate_row_data(BY_NAME[name][1], ctypes.addressof(buf), len(raw)))


def type_count(g: "Ggml") -> int:
    """GGML_TYPE_COUNT of the library.

    `ggml_get_type_traits` does not bound-check its argument, but
    `ggml_validate_row_data(type, p, 0)` returns false with "invalid type"
    exactly for `type >= GGML_TYPE_COUNT` (ids 39.. are all live, so the
    `nbytes % type_size` before the switch is safe).
    """
    buf = ctypes.create_string_buffer(8)
    for tid in range(39, 128):
        if not g.lib.ggml_validate_row_data(tid, ctypes.addressof(buf), 0):
            return tid
    return -1


# ------------------------------------------------------------------ inputs

def sane_f16(rng) -> int:
    v = np.float16(rng.choice([-1.0, 1.0]) * 2.0 ** rng.uniform(-12, 2))
    return int(v.view(np.uint16))


def sane_f32(rng) -> int:
    v = np.float32(rng.choice([-1.0, 1.0]) * 2.0 ** rng.uniform(-12, 2))
    return int(v.view(np.uint32))


def put_field(block: np.ndarray, off: int, kind: str, bits: int) -> None:
    if kind == "f16":
        block[off:off + 2] = np.frombuffer(np.uint16(bits).tobytes(), np.uint8)
    elif kind == "f32":
        block[off:off + 4] = np.frombuffer(np.uint32(bits).tobytes(), np.uint8)
    elif kind in ("e8m0", "ue4m3"):
        block[off] = bits & 0xFF
    elif kind == "iq1m":
        # fp16 bits spread over the top nibbles of the four u16 scale words
        words = block[off:off + 8].copy().view(np.uint16)
        for k in range(4):
            nib = (bits >> (4 * k)) & 0xF
            words[k] = (int(words[k]) & 0x0FFF) | (nib << 12)
        block[off:off + 8] = words.view(np.uint8)


def dequant_blocks(name: str, n: int, rng) -> bytes:
    _, _, _, ts = BY_NAME[name]
    raw = rng.integers(0, 256, size=(n, ts), dtype=np.uint8)
    special_i = 0
    for i in range(n):
        pattern = i % 8
        if pattern == 6:
            raw[i, :] = 0xFF
        elif pattern == 7:
            raw[i, :] = 0x00
        for off, kind in SCALES.get(name, []):
            if pattern == 5:
                continue  # fully random bytes, scales included
            if pattern == 4:
                special_i += 1
                if kind in ("f16", "iq1m"):
                    bits = F16_SPECIAL[special_i % len(F16_SPECIAL)]
                elif kind == "f32":
                    bits = F32_SPECIAL[special_i % len(F32_SPECIAL)]
                elif kind == "e8m0":
                    bits = E8M0_SPECIAL[special_i % len(E8M0_SPECIAL)]
                else:
                    bits = int(rng.integers(0, 256))
            elif kind in ("f16", "iq1m"):
                bits = sane_f16(rng)
            elif kind == "f32":
                bits = sane_f32(rng)
            elif kind == "e8m0":
                bits = int(rng.integers(100, 141))
            else:
                bits = int(rng.integers(0, 256))
            put_field(raw[i], off, kind, bits)
    return raw.tobytes()


def element_inputs(name: str, rng) -> bytes:
    n = 1024
    if name == "f32":
        v = rng.standard_normal(n).astype(np.float32).view(np.uint32)
        v[: len(F32_SPECIAL)] = F32_SPECIAL
        return v.tobytes()
    if name == "f64":
        v = (rng.standard_normal(n) * 10.0 ** rng.uniform(-45, 45, n)).astype(np.float64)
        spec = [np.inf, -np.inf, np.nan, 0.0, -0.0, 5e-324, 1.7976931348623157e308, 3.4028235677973366e38,
                3.4028235e38 * 1.0000001, 1.401298464324817e-45 / 2, 1 + 2.0 ** -24, 1 + 3 * 2.0 ** -24]
        v[: len(spec)] = spec
        return v.tobytes()
    width = {"i8": 1, "i16": 2, "i32": 4, "i64": 8}[name]
    return rng.integers(0, 256, size=n * width, dtype=np.uint8).tobytes()


def layout_dequant(name: str, raw: bytes) -> np.ndarray:
    """Expected output from the documented layout, for types ggml cannot decode."""
    b = np.frombuffer(raw, np.uint8)
    if name == "f32":
        return np.frombuffer(raw, np.float32).copy()
    if name == "f64":
        with np.errstate(over="ignore"):
            return np.frombuffer(raw, np.float64).astype(np.float32)
    if name in ("i8", "i16", "i32", "i64"):
        dt = {"i8": np.int8, "i16": "<i2", "i32": "<i4", "i64": "<i8"}[name]
        return np.frombuffer(raw, dt).astype(np.float32)
    if name == "q8_1":
        blk = b.reshape(-1, 36)
        d = blk[:, 0:2].copy().view(np.float16).astype(np.float32)
        q = blk[:, 4:36].view(np.int8).astype(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            return (q * d).reshape(-1).astype(np.float32)
    raise ValueError(name)


def quant_rows(rng) -> tuple[np.ndarray, list[str], list[bool]]:
    """Rows of ROW_LEN f32; returns (rows, kinds, finite)."""
    rows: list[np.ndarray] = []
    kinds: list[str] = []

    def add(kind: str, v) -> None:
        rows.append(np.asarray(v, dtype=np.float32).reshape(ROW_LEN))
        kinds.append(kind)

    n = ROW_LEN
    for s in (1.0, 1.0, 1.0, 1.0, 1e-3, 1e3, 0.05, 30.0):
        add(f"normal(sigma={s:g})", rng.standard_normal(n) * s)
    for df in (1.0, 2.0, 3.0):
        add(f"student_t(df={df:g})", rng.standard_t(df, n))
    add("laplace", rng.laplace(0.0, 1.0, n))
    add("zeros", np.zeros(n))
    add("negative zeros", -np.zeros(n))
    add("signed zeros mixed", np.where(rng.random(n) < 0.5, 0.0, -0.0))
    add("constant 1", np.ones(n))
    add("constant -0.37", np.full(n, -0.37))
    add("constant 1e-3", np.full(n, 1e-3))
    add("tiny normal 1e-30", rng.standard_normal(n) * 1e-30)
    add("f32 subnormals", rng.standard_normal(n) * 1e-40)
    add("fp16 subnormal range", rng.standard_normal(n) * 3e-6)
    add("fp16 smallest normal range", rng.standard_normal(n) * 6.1e-5)
    add("huge normal 1e30", rng.standard_normal(n) * 1e30)
    add("+-FLT_MAX", np.where(rng.random(n) < 0.5, -1.0, 1.0) * np.float32(3.4028235e38))
    add("FLT_MAX outlier", np.concatenate([[3.4028235e38], rng.standard_normal(n - 1)]))
    add("+-fp16 max 65504", np.where(rng.random(n) < 0.5, -65504.0, 65504.0))
    add("above fp16 max", rng.standard_normal(n) * 1e5)
    add("single outlier in zeros", np.where(np.arange(n) == 77, 100.0, 0.0))
    add("negative outlier in normal", np.where(np.arange(n) == 200, -1e4, rng.standard_normal(n)))
    add("outlier per 32-block", np.where(np.arange(n) % 32 == 5, 50.0, rng.standard_normal(n)))
    add("ramp -1..1", np.linspace(-1.0, 1.0, n))
    add("uniform [0,1)", rng.random(n))
    add("uniform (-1,0]", -rng.random(n))
    add("uniform [0,1) + 5", rng.random(n) + 5.0)
    add("integers -8..7", rng.integers(-8, 8, n))
    add("integers -127..127", rng.integers(-127, 128, n))
    # Exact ties: with amax = 127 in every 32-block, Q8_0 has id = 1 and
    # x + 0.5 steps land exactly halfway; similar for Q4_0 / Q5_0 with amax 8 / 16.
    t = rng.integers(-120, 120, n) + 0.5
    t[::32] = 127.0
    add("ties q8 (k+0.5, amax 127)", t)
    t = rng.integers(-7, 7, n) + 0.5
    t[::32] = -8.0
    add("ties q4 (k+0.5, max -8)", t)
    t = rng.integers(-15, 15, n) + 0.5
    t[::32] = -16.0
    add("ties q5 (k+0.5, max -16)", t)
    # fp16 / bf16 rounding ties: midpoints between neighbours
    h = rng.integers(0x0400, 0x7BFF, n).astype(np.uint16).view(np.float16).astype(np.float64)
    add("fp16 ties", (h + np.nextafter(np.float16(h), np.float16(np.inf)).astype(np.float64)) / 2)
    bb = (rng.integers(0x3000, 0x5000, n).astype(np.uint32) << 16) | 0x8000
    add("bf16 ties", bb.view(np.float32))
    add("pos/neg alternating 1", np.where(np.arange(n) % 2 == 0, 1.0, -1.0))
    add("ternary {-1,0,1}", rng.integers(-1, 2, n))
    add("powers of two", 2.0 ** rng.integers(-20, 20, n) * np.where(rng.random(n) < 0.5, -1, 1))
    finite = [True] * len(rows)
    # Non-finite values: only for the element types (F16, BF16), where ggml's
    # conversion is defined for them.
    nf = rng.standard_normal(n).astype(np.float32)
    nf[:12] = np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF,
                        0x7FC12345, 0xFFFFFFFF, 0x477FF000, 0x477FEFFF, 0x33000000, 0x33000001],
                       np.uint32).view(np.float32)
    add("non-finite and fp16 edges", nf)
    finite.append(False)
    return np.stack(rows), kinds, finite


def chunk_goldens(g: "Ggml", out: pathlib.Path, rows: np.ndarray, finite: list[bool]) -> list[dict]:
    """quant/chunk/: ggml_quantize_chunk without and with importance matrices.

    Two sets: "edge", the finite rows of quant/input.f32 (n_per_row 256, one
    super-block per row), and "outliers", 16 rows of 1024 normal values with
    1 % of them scaled by 50 and a few whole-row variations (seed SEED + 1, so
    the other files do not move). Three importance matrices per set: uniform
    in [0.1, 10), a typical one (mean of x² over a sample, so widely spread),
    and one with a quarter of the weights exactly 0.
    """
    rng = np.random.default_rng(SEED + 1)
    n = 1024
    outl = rng.standard_normal((16, n))
    outl[rng.random((16, n)) < 0.01] *= 50.0
    outl[1] *= 1e-3
    outl[2] *= 1e3
    outl[3] = np.abs(outl[3])
    outl[4, : n // 2] = 0.0
    outl[5] = -np.abs(outl[5]) - 2.0
    outl[6] *= np.linspace(0.01, 10.0, n)
    outl[7] = rng.integers(-8, 8, n)
    sets = {"edge": rows[[i for i, f in enumerate(finite) if f]], "outliers": outl.astype(np.float32)}
    result = []
    for set_name, x in sets.items():
        npr = x.shape[1]
        d = out / "quant" / "chunk" / set_name
        d.mkdir(parents=True, exist_ok=True)
        (d / "input.f32").write_bytes(x.astype("<f4").tobytes())
        sample = rng.standard_normal((64, npr)) * rng.lognormal(0.0, 1.5, npr)
        zeros = rng.uniform(0.1, 10.0, npr)
        zeros[rng.random(npr) < 0.25] = 0.0
        mats = [("uniform [0.1,10)", rng.uniform(0.1, 10.0, npr)), ("mean x^2 of a sample", (sample ** 2).mean(0)),
                ("uniform with 25% zeros", zeros)]
        entry: dict = {"set": set_name, "n_per_row": npr, "rows": int(x.shape[0]),
                       "input": {"file": f"quant/chunk/{set_name}/input.f32", "sha256": sha256(d / "input.f32")},
                       "imatrix": [], "types": []}
        for k, (kind, w) in enumerate(mats):
            f = d / f"imatrix{k}.f32"
            f.write_bytes(w.astype("<f4").tobytes())
            entry["imatrix"].append({"kind": kind, "file": f"quant/chunk/{set_name}/imatrix{k}.f32", "sha256": sha256(f)})
        for name in CHUNK_TYPES:
            te: dict = {"type": name, "id": BY_NAME[name][1], "uses_imatrix": name in IMATRIX_TYPES,
                        "requires_imatrix": name in REQUIRES_IMATRIX}
            lattice = name in LATTICE_TYPES

            def chunk(wts, name=name):
                if not lattice:
                    return g.quantize_chunk(name, x, wts), list(range(len(x)))
                return rows_ggml_survives(lambda rs: g.quantize_chunk(name, x[rs], wts), len(x))

            if name not in REQUIRES_IMATRIX:
                f = d / f"{name}.bin"
                data, keep = chunk(None)
                f.write_bytes(data)
                te["chunk"] = {"file": f"quant/chunk/{set_name}/{name}.bin", "sha256": sha256(f), "rows": keep}
                row_bytes = len(data) // len(keep)
                if g.from_float_fn(name) is not None:
                    te["differs_from_ref_rows"] = sum(
                        in_child(lambda i=i: g.quantize(name, x[i])) != data[k * row_bytes:(k + 1) * row_bytes]
                        for k, i in enumerate(keep))
            if name in IMATRIX_TYPES:
                te["imatrix"] = []
                for k, (_, w) in enumerate(mats):
                    f = d / f"{name}.imatrix{k}.bin"
                    data, keep = chunk(w.astype(np.float32))
                    f.write_bytes(data)
                    te["imatrix"].append({"file": f"quant/chunk/{set_name}/{name}.imatrix{k}.bin", "sha256": sha256(f),
                                          "rows": keep})
            entry["types"].append(te)
        result.append(entry)
    return result


# ------------------------------------------------------------------ gguf-py

def gguf_dequant(name: str, raw: bytes):
    import gguf
    from gguf import quants
    qtype = getattr(gguf.GGMLQuantizationType, name.upper(), None)
    if qtype is None:
        return None
    try:
        return quants.dequantize(np.frombuffer(raw, np.uint8), qtype).reshape(-1).astype(np.float32)
    except (NotImplementedError, KeyError, ValueError, TypeError, AttributeError):
        return None


def gguf_quant(name: str, x: np.ndarray):
    import gguf
    from gguf import quants
    qtype = getattr(gguf.GGMLQuantizationType, name.upper(), None)
    if qtype is None:
        return None
    try:
        with np.errstate(all="ignore"):
            return quants.quantize(x.reshape(1, -1), qtype).tobytes()
    except (NotImplementedError, KeyError, ValueError, TypeError, AttributeError, quants.QuantError):
        return None


def same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise: identical bits, or both NaN."""
    a = np.asarray(a, np.float32)
    b = np.asarray(b, np.float32)
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


# ------------------------------------------------------------------ main

def sha256(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=pathlib.Path, default=REPO / "corpus" / "golden")
    args = ap.parse_args()
    out: pathlib.Path = args.out
    (out / "dequant").mkdir(parents=True, exist_ok=True)
    (out / "quant").mkdir(parents=True, exist_ok=True)

    path = lib_path()
    g = Ggml(path)
    count = type_count(g)
    # Build the lattice maps once here, not in every child process.
    for name in LATTICE_TYPES:
        g.lib.ggml_quantize_init(BY_NAME[name][1])
    for name, tid, bs, ts in TYPES:
        t = g.traits(tid)
        if t.blck_size != bs or t.type_size != ts:
            raise SystemExit(f"{name}: library says {t.blck_size}/{t.type_size}, table {bs}/{ts}")

    manifest = {
        "generator": "conformance/tools/golden/gen_golden.py",
        "format": {
            "dequant": "dequant/<type>.bin = n_blocks*type_size input bytes, then n_blocks*block_size f32 LE; "
                       "f16/bf16: no input bytes, the output of every u16 bit pattern 0..65535 in order",
            "quant": "quant/input.f32 = rows of row_len f32 LE; quant/<type>.bin = ggml's blocks for the rows "
                     "listed in 'rows', concatenated",
        },
        "reference": {
            "library": ("libggml-base.so from pip llama-cpp-python "
                        + importlib.metadata.version("llama_cpp_python"))
            if not os.environ.get("GGML_BASE_LIB") else "GGML_BASE_LIB=" + os.environ["GGML_BASE_LIB"],
            "ggml_version": g.lib.ggml_version().decode(),
            "ggml_commit": g.lib.ggml_commit().decode(),
            "ggml_type_count": count,
            "missing_types": [],
            "numpy": np.__version__,
            "gguf_py": importlib.metadata.version("gguf"),
            "python": sys.version.split()[0],
        },
        "seed": SEED,
        "row_len": ROW_LEN,
        "dequant": [],
        "quant": [],
    }
    rng = np.random.default_rng(SEED)

    for name, tid, bs, ts in TYPES:
        if tid >= count:
            manifest["reference"]["missing_types"].append(name)
        entry: dict = {"type": name, "id": tid}
        if name in ("f16", "bf16"):
            raw = np.arange(65536, dtype=np.uint16).tobytes()
            expected = g.dequantize(name, raw)
            body = expected.tobytes()
            entry.update(n_blocks=65536, in_bytes=0, input="all u16 bit patterns")
        else:
            if bs == 1:
                raw = element_inputs(name, rng)
            else:
                n = {32: 96, 64: 64, 128: 48, 256: 32}[bs]
                raw = dequant_blocks(name, n, rng)
            expected = g.dequantize(name, raw)
            body = raw + (expected if expected is not None else layout_dequant(name, raw)).tobytes()
            entry.update(n_blocks=len(raw) // ts, in_bytes=len(raw))
        if name == "q8_K":
            entry["reference"] = "ggml dequantize_row_q8_K"
        elif expected is not None:
            entry["reference"] = "ggml to_float"
        else:
            entry["reference"] = "layout (numpy; ggml has no to_float)"
            expected = layout_dequant(name, raw)
        # ggml_validate_row_data per block, for the data-check tests
        if name not in ("f16", "bf16") and bs > 1:
            entry["ggml_valid_blocks"] = "".join(
                "1" if g.validate(name, raw[i * ts:(i + 1) * ts]) else "0" for i in range(len(raw) // ts))
        elif bs == 1:
            src = raw if name not in ("f16", "bf16") else np.arange(65536, dtype=np.uint16).tobytes()
            entry["ggml_valid_elements"] = int(sum(
                g.validate(name, src[i * ts:(i + 1) * ts]) for i in range(len(src) // ts)))
        gp = gguf_dequant(name, raw)
        if gp is not None and len(gp) == len(expected):
            ok = same_bits(gp, expected)
            fin = np.isfinite(expected)
            entry["gguf_py_dequant_agree"] = f"{int(ok.sum())}/{len(ok)} elements bit-exact " \
                                             f"({int(ok[fin].sum())}/{int(fin.sum())} of the finite ones)"
        f = out / "dequant" / f"{name}.bin"
        f.write_bytes(body)
        entry.update(file=f"dequant/{name}.bin", sha256=sha256(f))
        manifest["dequant"].append(entry)

    rows, kinds, finite = quant_rows(rng)
    f = out / "quant" / "input.f32"
    f.write_bytes(rows.astype("<f4").tobytes())
    manifest["quant_input"] = {"file": "quant/input.f32", "sha256": sha256(f), "rows": len(rows),
                               "kinds": kinds, "finite": finite}
    for name in QUANT_TYPES:
        _, tid, bs, ts = BY_NAME[name]
        use = [i for i in range(len(rows)) if finite[i] or name in ("f16", "bf16")]
        if name in LATTICE_TYPES:
            got = [(i, in_child(lambda i=i: g.quantize(name, rows[i]))) for i in range(len(rows))]
            use = [i for i, b in got if b is not None]
            blobs = [b for _, b in got if b is not None]
        else:
            blobs = [g.quantize(name, rows[i]) for i in use]
        entry = {"type": name, "id": tid, "rows": use,
                 "reference": "ggml quantize_row_q8_K_ref" if name == "q8_K" else "ggml from_float_ref"}
        if name == "iq4_nl":
            # ggml reads an uninitialised level buffer for all-zero blocks at the
            # start of a row: those blocks' nibbles are undefined (d is 0).
            undefined = []
            for r, blob in zip(use, blobs):
                for blk in range(ROW_LEN // bs):
                    x = rows[r, blk * bs:(blk + 1) * bs]
                    if np.abs(x).max() >= 1e-15:
                        break
                    undefined.append([r, blk])
            entry["undefined_qs_blocks"] = undefined
            # Write those nibbles as 0 so that the files are reproducible.
            for r, blk in undefined:
                k = use.index(r)
                b = bytearray(blobs[k])
                b[blk * ts + 2:(blk + 1) * ts] = bytes(ts - 2)
                blobs[k] = bytes(b)
        agree, total = 0, 0
        for r, blob in zip(use, blobs):
            gp = gguf_quant(name, rows[r])
            if gp is not None:
                total += 1
                agree += gp == blob
        if total:
            entry["gguf_py_quant_agree"] = f"{agree}/{total} rows byte-identical"
        f = out / "quant" / f"{name}.bin"
        f.write_bytes(b"".join(blobs))
        entry.update(file=f"quant/{name}.bin", sha256=sha256(f))
        manifest["quant"].append(entry)

    manifest["chunk"] = chunk_goldens(g, out, rows, finite)
    manifest["format"]["chunk"] = ("quant/chunk/<set>/: input.f32 rows of n_per_row f32; imatrix<k>.f32 n_per_row "
                                   "weights; <type>.bin = ggml_quantize_chunk(type, rows, dst, 0, nrows, n_per_row, "
                                   "NULL); <type>.imatrix<k>.bin = the same with imatrix k")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote {out} ({total} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
