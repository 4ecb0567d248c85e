"""`dequantize`/`quantize` against the Rust crate's golden vectors (ggml's
own output, corpus/golden/) and against gguf-py 0.19.0's `gguf.quants`
wherever gguf-py implements the type."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gguf_validate as gv
from conftest import ROOT

GOLDEN = ROOT / "corpus" / "golden"
MANIFEST = json.loads((GOLDEN / "manifest.json").read_text())
TYPES = {t.name: t for t in gv.ggml_types()}


def test_type_table() -> None:
    assert TYPES["q4_K"].block_size == 256 and TYPES["q4_K"].type_size == 144
    assert TYPES["q8_0"] == gv.GGMLType("q8_0", 8, 32, 34, "live")
    assert len(TYPES) == 43


@pytest.mark.parametrize("entry", MANIFEST["dequant"], ids=lambda e: e["type"])
def test_dequantize_golden(entry: dict) -> None:
    raw = (GOLDEN / entry["file"]).read_bytes()
    if entry["in_bytes"] == 0:  # f16/bf16: every bit pattern
        src = np.arange(65536, dtype=np.uint16).tobytes()
        want = np.frombuffer(raw, dtype="<u4")
    else:
        src, want = raw[: entry["in_bytes"]], np.frombuffer(raw[entry["in_bytes"] :], dtype="<u4")
    got = gv.dequantize(entry["type"], src)
    assert got.dtype == np.float32
    # Bit-exact, NaN payloads included.
    assert np.array_equal(got.view(np.uint32), want)


def _chunk_cases() -> list[tuple[str, str, str, int | None]]:
    cases = []
    for s in MANIFEST["chunk"]:
        for t in s["types"]:
            if "chunk" in t:
                cases.append((s["set"], t["type"], t["chunk"]["file"], None))
            for k, im in enumerate(t.get("imatrix", ())):
                cases.append((s["set"], t["type"], im["file"], k))
    return cases


@pytest.mark.parametrize("case", _chunk_cases(), ids=lambda c: f"{c[0]}-{c[1]}-{c[3]}")
def test_quantize_golden(case: tuple[str, str, str, int | None]) -> None:
    set_name, ty, file, k = case
    s = next(x for x in MANIFEST["chunk"] if x["set"] == set_name)
    n = s["n_per_row"]
    rows = np.fromfile(GOLDEN / s["input"]["file"], dtype="<f4").reshape(-1, n)
    entry = next(t for t in s["types"] if t["type"] == ty)
    listed = (entry["chunk"] if k is None else entry["imatrix"][k])["rows"]
    imatrix = None if k is None else np.fromfile(GOLDEN / s["imatrix"][k]["file"], dtype="<f4")
    got = gv.quantize(ty, rows[listed], imatrix=imatrix)
    assert got.dtype == np.uint8
    assert got.tobytes() == (GOLDEN / file).read_bytes()


def test_numerics_errors() -> None:
    with pytest.raises(gv.UsageError):
        gv.dequantize("q4_K", b"\x00" * 143)  # not whole blocks
    with pytest.raises(gv.UsageError):
        gv.dequantize("q9_9", b"")
    with pytest.raises(gv.UsageError):
        gv.quantize("q4_K", np.zeros(100, dtype=np.float32))
    with pytest.raises(gv.UsageError):
        gv.quantize("iq2_xxs", np.zeros(256, dtype=np.float32))  # needs an importance matrix
    assert gv.quantize(8, np.zeros((2, 32))).size == 2 * 34  # an id, and float64 converted


def _cargo_cli(cli: list[str]) -> list[str]:
    """The cargo-built command line (GGUF_VALIDATE_CARGO_BIN, as CI sets it),
    else the one the other tests compare with."""
    binary = os.environ.get("GGUF_VALIDATE_CARGO_BIN")
    return [binary] if binary else cli


def test_quantize_is_the_command_lines_for_every_type(cli: list[str], tmp_path: Path) -> None:
    """`quantize` and the command line's `quantize` are one function of
    gguf-numerics (`quantize_tensor`): the same bytes for every type, with
    and without a row length, an importance matrix and the row reference,
    and a refusal (UsageError, exit 2) in the same cases."""
    exe = _cargo_cli(cli)
    rng = np.random.default_rng(20260)
    rows, n = 4, 256
    x = (rng.standard_normal(rows * n) * rng.uniform(0.01, 20.0)).astype(np.float32)
    w = rng.uniform(0.01, 4.0, n).astype(np.float32)
    x.astype("<f4").tofile(tmp_path / "x.f32")
    w.astype("<f4").tofile(tmp_path / "w.f32")
    cases: list[tuple[list[str], dict[str, Any], bool]] = [
        ([], {}, False),
        (["--row-length", str(n)], {}, True),
        (["--imatrix", "w.f32"], {"imatrix": w}, False),
        (["--row-length", str(n), "--imatrix", "w.f32"], {"imatrix": w}, True),
        (["--reference", "row"], {"reference": "row"}, False),
    ]
    quantized = []
    # Every id, the removed ones too (both refuse those).
    for t in gv.ggml_types():
        ok = 0
        for args, kwargs, as_rows in cases:
            out = subprocess.run(
                [*exe, "quantize", "--type", t.name, "--input", "x.f32", "--output", "-", *args],
                cwd=tmp_path,
                capture_output=True,
                check=False,
            )
            try:
                ours = gv.quantize(t.name, x.reshape(-1, n) if as_rows else x, **kwargs)
            except gv.UsageError as e:
                assert out.returncode == 2, (t.name, args, str(e))
                continue
            assert out.returncode == 0, (t.name, args, out.stderr)
            assert ours.tobytes() == out.stdout, (t.name, args)
            ok += 1
        if ok:
            quantized.append(t.name)
    assert len(quantized) == 30, quantized


# ------------------------------------------------------------- gguf-py

gguf = pytest.importorskip("gguf")
from gguf import quants  # noqa: E402
from gguf.constants import GGMLQuantizationType as QT  # noqa: E402

# What gguf-py 0.19.0 implements (found by calling it: NotImplementedError
# for the rest). Every type it implements is compared below.
GGUF_PY_DEQUANT = {
    "F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
    "TQ1_0", "TQ2_0", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "IQ4_NL", "IQ4_XS",
    "MXFP4", "NVFP4",
}
GGUF_PY_QUANT = {"F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4"}


def _gguf_py_implements(qt: QT, what: str) -> bool:
    bs, ts = gguf.GGML_QUANT_SIZES[qt]
    try:
        if what == "dequant":
            quants.dequantize(np.zeros(ts * 2, dtype=np.uint8), qt)
        else:
            quants.quantize(np.zeros((1, bs), dtype=np.float32), qt)
    except (NotImplementedError, KeyError):
        return False
    return True


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_gguf_py_coverage_is_what_we_say() -> None:
    lower = {n.lower() for n in TYPES}
    names = [qt for qt in QT if qt.name.lower() in lower]
    dq = {qt.name for qt in names if _gguf_py_implements(qt, "dequant")}
    q = {qt.name for qt in names if _gguf_py_implements(qt, "quant")}
    assert dq == GGUF_PY_DEQUANT
    assert q == GGUF_PY_QUANT


def _gguf_py_types(names: set[str]) -> list[QT]:
    return [QT[n] for n in sorted(names)]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # gguf-py on NaN and infinite scales
@pytest.mark.parametrize("qt", _gguf_py_types(GGUF_PY_DEQUANT), ids=lambda q: q.name)
def test_dequantize_equals_gguf_py(qt: QT) -> None:
    entry = next((e for e in MANIFEST["dequant"] if e["id"] == int(qt)), None)
    assert entry is not None
    raw = (GOLDEN / entry["file"]).read_bytes()
    src = np.arange(65536, dtype=np.uint16).view(np.uint8) if entry["in_bytes"] == 0 else np.frombuffer(
        raw[: entry["in_bytes"]], dtype=np.uint8
    )
    ours = gv.dequantize(int(qt), src)
    theirs = quants.dequantize(src, qt).astype(np.float32).reshape(-1)
    same = ours.view(np.uint32) == theirs.view(np.uint32)
    both_nan = np.isnan(ours) & np.isnan(theirs)
    # gguf-py computes in float32 numpy; NaN payloads may differ.
    assert np.all(same | both_nan), f"{qt.name}: {np.count_nonzero(~(same | both_nan))} elements differ"


@pytest.mark.parametrize("qt", _gguf_py_types(GGUF_PY_QUANT - {"F32"}), ids=lambda q: q.name)
def test_quantize_equals_gguf_py(qt: QT) -> None:
    rng = np.random.default_rng(25)
    rows = rng.standard_normal((16, 256), dtype=np.float32) * rng.uniform(0.01, 100, (16, 1)).astype(np.float32)
    ours = gv.quantize(int(qt), rows)
    theirs = quants.quantize(rows, qt).reshape(-1).view(np.uint8)
    assert ours.tobytes() == theirs.tobytes()
