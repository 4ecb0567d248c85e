# Stubs of the extension module (parser/python/src/lib.rs). The public API
# is `gguf_validate` (typed inline); these are its private calls.
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__version__: str

_Source = str | memoryview
_Opts = tuple[
    str | None, bool, bool, str | None, bool, bool, float | None, list[tuple[str, str]], list[str], float | None
]

class Results(Iterator[tuple[bool, str]]):
    def __iter__(self) -> Results: ...
    def __next__(self) -> tuple[bool, str]: ...

def validate(
    source: _Source,
    profile: str | None,
    check_data: bool,
    container_only: bool,
    config: str | None,
    discover_config: bool,
    deny_warnings: bool,
    timeout: float | None,
    headers: list[tuple[str, str]],
    ca_certs: list[str],
    http_timeout: float | None,
) -> tuple[bool, str]: ...
def validate_many(
    sources: list[_Source],
    jobs: int,
    profile: str | None,
    check_data: bool,
    container_only: bool,
    config: str | None,
    discover_config: bool,
    deny_warnings: bool,
    timeout: float | None,
    headers: list[tuple[str, str]],
    ca_certs: list[str],
    http_timeout: float | None,
) -> Results: ...
def main(argv: list[str]) -> int: ...
def rules() -> str: ...
def dump(path: str, full: bool = False) -> tuple[str, bool]: ...
def derive(base: str, quant: str, imatrix: str | None = None) -> str: ...
def hash(path: str, algo: str, per_tensor: bool = False) -> tuple[str, list[tuple[str, str]]]: ...
def ggml_types() -> list[tuple[str, int, int, int, str]]: ...
def dequantize(ggml_type_name: str, data: np.ndarray[Any, np.dtype[np.uint8]]) -> np.ndarray[Any, np.dtype[np.float32]]: ...
def quantize(
    ggml_type_name: str,
    data: np.ndarray[Any, np.dtype[np.float32]],
    n_per_row: int,
    imatrix: np.ndarray[Any, np.dtype[np.float32]] | None = None,
) -> np.ndarray[Any, np.dtype[np.uint8]]: ...
def fuzz_writer(
    write: Callable[[Any, Any], object],
    cases: int,
    seed: int,
    profile: str,
    work_dir: str,
    findings_dir: str | None = None,
) -> tuple[str, str]: ...
