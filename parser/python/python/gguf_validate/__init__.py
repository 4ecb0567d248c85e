"""gguf-validate: a strict validator for GGUF model files, from Python.

Every function calls the Rust library (the same code as the
`gguf-validate` command line) with the GIL released, so threads run in
parallel. An invalid file is a `Report` with `valid == False`; exceptions
(`GGUFValidateError` and its subclasses) are for inputs that cannot be read
and for bad arguments.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, ParamSpec, TypeVar, Union, cast

from gguf_validate import _native
from gguf_validate._errors import GGUFValidateError, NotGGUFError, UnreadableError, UsageError, _translate

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "Diagnostic",
    "GGMLType",
    "GGUFValidateError",
    "NotGGUFError",
    "Report",
    "Source",
    "UnreadableError",
    "UsageError",
    "__version__",
    "dequantize",
    "derive",
    "dump",
    "ggml_types",
    "hash",
    "quantize",
    "rules",
    "validate",
    "validate_many",
]

__version__: str = _native.__version__

#: A path (`str` or `os.PathLike`), a URL (`http://`, `https://`,
#: `hf://ORG/REPO/FILE@REV`), or bytes-like (`bytes`, `bytearray`,
#: `memoryview`, a NumPy array: any C-contiguous buffer) validated in memory.
Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Any]

_PROFILES = ("strict", "spec", "ggml")


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding: the rule, its severity under the profile, where it is."""

    rule: str
    severity: str
    offset: int | None
    length: int | None
    path: str | None
    message: str

    @classmethod
    def _of(cls, d: Mapping[str, Any]) -> Diagnostic:
        return cls(d["rule"], d["severity"], d.get("offset"), d.get("length"), d.get("path"), d["message"])


@dataclass(frozen=True, slots=True)
class Report:
    """The verdict on one file, as the command line's JSON entry has it.

    `to_dict()` and `to_json()` give that entry exactly (`gguf-validate
    --format json`'s `files[i]` for the same file and options).
    """

    path: str
    valid: bool
    profile: str
    format: str | None
    examined: tuple[Mapping[str, Any], ...]
    errors: int
    warnings: int
    diagnostics: tuple[Diagnostic, ...]
    remote: Mapping[str, Any] | None
    split_set: str | None
    _entry: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def _of(cls, entry: Mapping[str, Any]) -> Report:
        summary = entry.get("summary") or {}
        counts = entry.get("counts") or {}
        return cls(
            path=entry["path"],
            valid=bool(entry["valid"]),
            profile=entry["profile"],
            format=entry.get("format"),
            examined=tuple(summary.get("examined", ())),
            errors=int(counts.get("errors", 0)),
            warnings=int(counts.get("warnings", 0)),
            diagnostics=tuple(Diagnostic._of(d) for d in entry.get("diagnostics", ())),
            remote=summary.get("remote"),
            split_set=entry.get("split_set"),
            _entry=entry,
        )

    def to_dict(self) -> dict[str, Any]:
        """The command line's JSON entry of this file, as Python objects."""
        return cast(dict[str, Any], json.loads(json.dumps(self._entry)))

    def to_json(self, indent: int | None = None) -> str:
        """The command line's JSON entry of this file, as text."""
        return json.dumps(self._entry, indent=indent, ensure_ascii=False)

    def __bool__(self) -> bool:
        return self.valid


class GGMLType(NamedTuple):
    """A row of ggml's type table."""

    name: str
    id: int
    block_size: int
    type_size: int
    status: str


_P = ParamSpec("_P")
_T = TypeVar("_T")


def _call(fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    try:
        return fn(*args, **kwargs)
    except ValueError as e:
        err = _translate(e)
        if err is e:
            raise
        raise err from None


def _source(source: Source) -> Any:
    """A path or URL as text, or a buffer of bytes (`B` items) for `_native`."""
    if isinstance(source, (str, os.PathLike)):
        p = os.fspath(source)
        return os.fsdecode(p) if isinstance(p, bytes) else p
    try:
        view = memoryview(source)
    except TypeError:
        raise UsageError(
            f"source: expected a path, a URL or a bytes-like object, not {type(source).__name__}"
        ) from None
    if not view.c_contiguous:
        view = memoryview(view.tobytes())
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def _options(
    profile: str | None,
    check_data: bool,
    container_only: bool,
    config: str | os.PathLike[str] | bool | None,
    deny_warnings: bool,
    timeout: float | None,
    headers: Mapping[str, str] | None,
    ca_certs: Sequence[str | os.PathLike[str]] | None,
    http_timeout: float | None,
) -> tuple[Any, ...]:
    if profile is not None and profile not in _PROFILES:
        raise UsageError(f"profile {profile!r}: expected one of {', '.join(_PROFILES)}")
    if config is None or isinstance(config, bool):
        explicit, discover = None, config is True
    else:
        explicit, discover = os.fspath(config), False
    return (
        profile,
        bool(check_data),
        bool(container_only),
        explicit,
        discover,
        bool(deny_warnings),
        None if timeout is None else float(timeout),
        [(str(k), str(v)) for k, v in (headers or {}).items()],
        [os.fspath(c) for c in (ca_certs or ())],
        None if http_timeout is None else float(http_timeout),
    )


def _unreadable(entry: Mapping[str, Any]) -> UnreadableError:
    return UnreadableError(f"{entry['path']}: {entry.get('error', 'unreadable')}")


def validate(
    source: Source,
    *,
    profile: str | None = "strict",
    check_data: bool = False,
    container_only: bool = False,
    config: str | os.PathLike[str] | bool | None = None,
    deny_warnings: bool = False,
    timeout: float | None = None,
    headers: Mapping[str, str] | None = None,
    ca_certs: Sequence[str | os.PathLike[str]] | None = None,
    http_timeout: float | None = None,
) -> Report:
    """Validates one file and returns its `Report`.

    `profile` is `strict` (valid by the spec and loadable by ggml),
    `spec` or `ggml`; `None` takes the config's. `config` is a
    `gguf-validate.toml` to apply, `True` to find the nearest one from the
    working directory up (as the command line does without `--config`),
    `None` (the default) or `False` for none. `timeout` bounds the whole file in seconds. `headers`,
    `ca_certs` and `http_timeout` apply to URLs (`HF_TOKEN` and
    `HF_ENDPOINT` are read as the command line reads them).

    Raises `UnreadableError` when the input cannot be read and `UsageError`
    for bad arguments; an invalid file is a report, never an exception.
    """
    opts = _options(profile, check_data, container_only, config, deny_warnings, timeout, headers, ca_certs, http_timeout)
    unreadable, text = _call(_native.validate, _source(source), *opts)
    entry = json.loads(text)
    if unreadable:
        raise _unreadable(entry)
    return Report._of(entry)


def validate_many(
    sources: Iterable[Source],
    jobs: int | None = None,
    *,
    profile: str | None = "strict",
    check_data: bool = False,
    container_only: bool = False,
    config: str | os.PathLike[str] | bool | None = None,
    deny_warnings: bool = False,
    timeout: float | None = None,
    headers: Mapping[str, str] | None = None,
    ca_certs: Sequence[str | os.PathLike[str]] | None = None,
    http_timeout: float | None = None,
) -> Iterator[Report | UnreadableError]:
    """Validates many files, `jobs` at a time (default: the CPUs), and
    yields each file's `Report` in input order as soon as it and those
    before it are done. A file that cannot be read is yielded as an
    `UnreadableError` (not raised), so one bad input does not end the run.
    A shard of a split set brings its sibling shards, each yielded with
    `split_set` set, as the command line does.
    """
    opts = _options(profile, check_data, container_only, config, deny_warnings, timeout, headers, ca_certs, http_timeout)
    n = jobs if jobs is not None else (os.cpu_count() or 1)
    if n < 1:
        raise UsageError(f"jobs {n}: at least 1")
    results = _call(_native.validate_many, [_source(s) for s in sources], n, *opts)
    for unreadable, text in results:
        entry = json.loads(text)
        yield _unreadable(entry) if unreadable else Report._of(entry)


def rules() -> list[dict[str, Any]]:
    """The rule catalogue (`gguf-validate rules --format json`): id, group,
    whether it is fatal, its level under each profile, citation,
    description and divergence from ggml."""
    return cast(list[dict[str, Any]], json.loads(_native.rules()))


def dump(source: str | os.PathLike[str], *, full: bool = False) -> dict[str, Any]:
    """A GGUF file's header, metadata and tensor table (`gguf-validate dump`):
    long arrays are cut unless `full`. Raises `NotGGUFError` for a file that
    is not GGUF v2/v3."""
    text, _complete = _call(_native.dump, os.fspath(source), full)
    return cast(dict[str, Any], json.loads(text))


def hash(  # noqa: A001 - the command line's name
    source: str | os.PathLike[str], algo: str = "sha256", *, per_tensor: bool = False
) -> str | dict[str, str]:
    """The digest of a file's tensor data as `llama-gguf-hash` computes it
    (`xxh64`, `sha1`, `sha256`, or `uuid`), in lower-case hex. With
    `per_tensor`, a dict of tensor name to digest, and the whole model under
    the key `""`."""
    model, tensors = _call(_native.hash, os.fspath(source), algo, per_tensor)
    if not per_tensor:
        return model
    return {**dict(tensors), "": model}


def derive(
    base: str | os.PathLike[str],
    quant: str | os.PathLike[str],
    imatrix: str | os.PathLike[str] | None = None,
) -> list[dict[str, Any]]:
    """Whether each tensor of `quant` is `ggml_quantize_chunk` of the
    `base`'s tensor of the same name (with `imatrix`'s weights when given):
    one dict per tensor with `name`, `type` and `verdict` (`identical`,
    `differs` or `not-derivable`, with details)."""
    text = _call(_native.derive, os.fspath(base), os.fspath(quant), None if imatrix is None else os.fspath(imatrix))
    return cast(list[dict[str, Any]], json.loads(text))


def ggml_types() -> list[GGMLType]:
    """ggml's type table: every type id with its block size and bytes per
    block (both 0 for removed ids)."""
    return [GGMLType(*row) for row in _native.ggml_types()]


def _type_name(ggml_type: str | int) -> str:
    if isinstance(ggml_type, int):
        for t in _native.ggml_types():
            if t[1] == ggml_type and t[2] > 0:
                return t[0]
        raise UsageError(f"ggml type id {ggml_type}: see ggml_types()")
    return str(ggml_type)


def dequantize(ggml_type: str | int, data: Any) -> np.ndarray[Any, np.dtype[np.float32]]:
    """Blocks of `ggml_type` (a name such as `"q4_K"` or an id) to a 1-D
    float32 array, bit-exact with ggml's `to_float`. `data` is any
    bytes-like object, read without copying."""
    import numpy as np

    buf = np.frombuffer(_source(data), dtype=np.uint8)
    return _call(_native.dequantize, _type_name(ggml_type), buf)


def quantize(
    ggml_type: str | int, array: npt.ArrayLike, *, imatrix: npt.ArrayLike | None = None
) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """Float values to blocks of `ggml_type`, byte for byte what
    `ggml_quantize_chunk` writes. A 2-D `array` is rows (its last axis a
    multiple of the block size); a 1-D array is one row. `imatrix` is one
    importance weight per column (required by some IQ types)."""
    import numpy as np

    a = np.ascontiguousarray(array, dtype=np.float32)
    if a.ndim not in (1, 2):
        raise UsageError(f"array: expected 1 or 2 dimensions, got {a.ndim}")
    n_per_row = a.shape[-1]
    w = None if imatrix is None else np.ascontiguousarray(imatrix, dtype=np.float32).reshape(-1)
    return _call(_native.quantize, _type_name(ggml_type), a.reshape(-1), n_per_row, w)
