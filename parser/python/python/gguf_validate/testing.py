"""Helpers for the tests of GGUF writers: `assert_valid` for files a writer
produced, and `fuzz_writer` to fuzz a writer written in Python (generated
model descriptions, each written by the writer under test, then validated
and compared field by field with what was asked for)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gguf_validate import Report, _call, _native, validate

__all__ = ["FuzzReport", "assert_valid", "fuzz_writer"]


def assert_valid(path: str | os.PathLike[str], profile: str = "strict", **options: Any) -> Report:
    """Asserts that `path` is valid under `profile` (pytest shows the
    message): on failure, an `AssertionError` listing each error and
    warning that decided the verdict, with its rule, offset and field.
    `options` are `validate`'s. Returns the report."""
    report = validate(path, profile=profile, **options)
    if not report.valid:
        lines = [f"{os.fspath(path)} is not valid under the {profile} profile:"]
        for d in report.diagnostics:
            if d.severity in ("error", "warning"):
                where = f" at offset {d.offset}" if d.offset is not None else ""
                lines.append(f"  {d.severity} [{d.rule}]{where} {d.path or ''}: {d.message}")
        raise AssertionError("\n".join(lines))
    return report


@dataclass(frozen=True)
class FuzzReport:
    """A writer campaign's results (`gguf-validate fuzz-writer --json`)."""

    cases: int
    skipped: int
    cases_with_findings: int
    findings: list[dict[str, Any]]
    text: str = field(repr=False)
    raw: dict[str, Any] = field(repr=False)

    @property
    def ok(self) -> bool:
        """No finding."""
        return not self.findings


def fuzz_writer(
    write: Callable[[Path, Path], object],
    *,
    cases: int = 100,
    seed: int = 0,
    profile: str = "strict",
    findings_dir: str | os.PathLike[str] | None = None,
) -> FuzzReport:
    """Fuzzes a GGUF writer written in Python.

    `write(model_description, out_path)` is called once per case (and
    again while a finding is shrunk): `model_description` is the path of a
    JSON model description (the harness's format: metadata key/values and
    tensors, see `gguf-validate write-model`), `out_path` where the GGUF
    file goes. An exception from `write` counts as a failed write. Case
    `i` depends on `(seed, i)` alone. Shrunk reproducers go to
    `findings_dir` when given.
    """
    work = tempfile.mkdtemp(prefix="gguf-validate-fuzz-")
    try:
        fd = None if findings_dir is None else os.fspath(findings_dir)

        def call(model: str, out: str) -> None:
            write(Path(model), Path(out))

        text_json, text = _call(_native.fuzz_writer, call, cases, seed, profile, work, fd)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    raw = json.loads(text_json)
    return FuzzReport(
        cases=raw["cases"],
        skipped=raw["skipped"],
        cases_with_findings=raw["cases_with_findings"],
        findings=raw["findings"],
        text=text,
        raw=raw,
    )
