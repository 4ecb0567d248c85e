"""`gguf_validate.testing`: the assertion for writer tests and the writer
fuzzer with a Python callable as the writer under test."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import gguf_validate as gv
from gguf_validate import testing
from conftest import ROOT, cli_exe


def test_assert_valid_passes_and_lists_findings() -> None:
    valid = next(p for p in sorted((ROOT / "corpus/gguf").glob("y_*.gguf")) if gv.validate(p).valid)
    assert testing.assert_valid(valid).valid
    with pytest.raises(AssertionError) as e:
        testing.assert_valid(ROOT / "corpus/gguf/i_alignment_1.gguf")
    msg = str(e.value)
    assert "not valid under the strict profile" in msg and "[alignment-multiple-of-8]" in msg
    assert "offset 98" in msg


def reference_writer(model: Path, out: Path) -> None:
    """The project's own writer (`gguf-validate write-model`, the wheel's binary)."""
    subprocess.run([cli_exe(), "write-model", str(model), str(out)], check=True)


def test_fuzz_writer_finds_nothing_in_the_reference_writer() -> None:
    r = testing.fuzz_writer(reference_writer, cases=8, seed=3)
    assert r.ok and r.cases == 8 - r.skipped and r.cases_with_findings == 0, r.text


def test_fuzz_writer_reports_a_broken_writer(tmp_path: Path) -> None:
    def truncating(model: Path, out: Path) -> None:
        reference_writer(model, out)
        data = out.read_bytes()
        out.write_bytes(data[: len(data) // 2])

    def raising(model: Path, out: Path) -> None:
        raise RuntimeError("writer crashed")

    r = testing.fuzz_writer(truncating, cases=4, seed=1, findings_dir=tmp_path)
    assert not r.ok and r.cases_with_findings > 0
    assert any(tmp_path.iterdir())  # a shrunk reproducer
    r = testing.fuzz_writer(raising, cases=2, seed=1)
    assert not r.ok
