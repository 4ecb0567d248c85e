# Stubs of the extension module (parser/python/src/lib.rs). The public API
# is `gguf_validate` (typed inline); these are its private calls.
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__version__: str

_Source = str | memoryview
# The options dict of `gguf_validate._options` (the run's settings and the
# HTTP items) and of `_http` (the HTTP items alone).
_Options = dict[str, Any]
# (kind, JSON entry): kind is "file", "unreadable" or "set".
_Entry = tuple[str, str]

class Results(Iterator[_Entry]):
    def __iter__(self) -> Results: ...
    def __next__(self) -> _Entry: ...

def validate(source: _Source, options: _Options) -> _Entry: ...
def validate_many(sources: list[_Source], jobs: int, options: _Options) -> Results: ...
def rules() -> str: ...
def rewrite(
    source: _Source,
    output: str | None,
    in_place: bool,
    requests: list[tuple[str, str, str]] | None,
    unsafe_fixes: bool,
    dry_run: bool,
    force: bool,
    options: _Options,
) -> tuple[str, bytes | None]: ...
def dump(source: _Source, full: bool, http: _Options, timeout: float | None = None) -> tuple[str, bool]: ...
def derive(
    base: _Source, quant: _Source, imatrix: _Source | None, http: _Options, timeout: float | None = None
) -> str: ...
def hash(
    source: _Source, algo: str, per_tensor: bool, http: _Options, timeout: float | None = None
) -> tuple[str, list[tuple[str, str]]]: ...
def ggml_types() -> list[tuple[str, int, int, int, str]]: ...
def dequantize(ggml_type_name: str, data: np.ndarray[Any, np.dtype[np.uint8]]) -> np.ndarray[Any, np.dtype[np.float32]]: ...
def quantize(
    ggml_type_name: str,
    data: np.ndarray[Any, np.dtype[np.float32]],
    n_per_row: int | None = None,
    imatrix: np.ndarray[Any, np.dtype[np.float32]] | None = None,
    reference: str = "chunk",
    experts: int = 1,
) -> np.ndarray[Any, np.dtype[np.uint8]]: ...
def fuzz_writer(
    write: Callable[[Any, Any], object],
    cases: int,
    seed: int,
    profile: str,
    work_dir: str,
    findings_dir: str | None = None,
) -> tuple[str, str]: ...

class Scanner:
    """One HTTP client per process for `gguf_validate.scan` (see src/scan.rs)."""

    def __init__(
        self,
        rate_per_host: float | None = None,
        timeout: float | None = None,
        connections: int = 8,
        llama_cpp: str | None = None,
    ) -> None: ...
    def probe(self, url: str) -> str: ...
    def scan(self, url: str, profiles: list[str]) -> str: ...

def llama_cpp_releases(setting: str | None = None) -> list[str]: ...
