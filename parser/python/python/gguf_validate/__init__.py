"""gguf-validate: a strict validator for GGUF model files, from Python.

Every function calls the Rust library (the same code as the
`gguf-validate` command line) with the GIL released, so threads run in
parallel. An invalid file is a `Report` with `valid == False`; exceptions
(`GGUFValidateError` and its subclasses) are for inputs that cannot be read
and for bad arguments.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, ParamSpec, TypedDict, TypeVar, Union, Unpack, cast

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
    "Options",
    "Report",
    "Rewritten",
    "SetReport",
    "Source",
    "UnreadableError",
    "UsageError",
    "__version__",
    "dequantize",
    "derive",
    "dump",
    "edit",
    "fix",
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


class _Entry:
    """What a file's and a set's reports share: the command line's JSON entry."""

    __slots__ = ()
    valid: bool
    _entry: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The command line's JSON entry (`--format json`'s `files[i]`), as Python objects."""
        return cast(dict[str, Any], json.loads(json.dumps(self._entry)))

    def to_json(self, indent: int | None = None) -> str:
        """The command line's JSON entry, as text."""
        return json.dumps(self._entry, indent=indent, ensure_ascii=False)

    def __bool__(self) -> bool:
        return self.valid


@dataclass(frozen=True, slots=True)
class Report(_Entry):
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
    #: Which llama.cpp releases load the file (`loads_from`, `loads_until`,
    #: `judged_against`, `because`), for a model or a projector.
    llama_cpp: Mapping[str, Any] | None
    #: The loader the file was judged against (`llama.cpp`, `sd.cpp`,
    #: `comfyui-gguf`): the one asked for, or the one the file is for.
    loader: str | None
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
            llama_cpp=summary.get("llama_cpp"),
            loader=summary.get("loader"),
            _entry=entry,
        )



@dataclass(frozen=True, slots=True)
class SetReport(_Entry):
    """The verdict on a split set as a whole (`validate_many` yields it
    after the set's shards, each a `Report` whose `split_set` is this
    `path`): the command line's `"kind": "split-set"` entry.

    `valid` holds when the set's own findings have no error and every shard
    is readable and valid; `shards` lists each shard (`name`, `position`, `readable`,
    `valid`, ...) in set order; `diagnostics` are the set's own findings
    (shard count, tensors across shards, ...). `to_dict()` and `to_json()`
    give the entry exactly.
    """

    path: str
    valid: bool
    profile: str
    shards: tuple[Mapping[str, Any], ...]
    errors: int
    warnings: int
    diagnostics: tuple[Diagnostic, ...]
    summary: Mapping[str, Any]
    _entry: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def _of(cls, entry: Mapping[str, Any]) -> SetReport:
        counts = entry.get("counts") or {}
        return cls(
            path=entry["path"],
            valid=bool(entry["valid"]),
            profile=entry["profile"],
            shards=tuple(entry.get("shards", ())),
            errors=int(counts.get("errors", 0)),
            warnings=int(counts.get("warnings", 0)),
            diagnostics=tuple(Diagnostic._of(d) for d in entry.get("diagnostics", ())),
            summary=entry.get("summary") or {},
            _entry=entry,
        )


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


class Options(TypedDict, total=False):
    """The options of a run: the keyword arguments of `validate`, which
    `validate_many` takes too (same names, same defaults)."""

    profile: str | None
    check_data: bool
    container_only: bool
    config: str | os.PathLike[str] | bool | None
    deny_warnings: bool
    timeout: float | None
    headers: Mapping[str, str] | None
    ca_certs: Sequence[str | os.PathLike[str]] | None
    http_timeout: float | None
    with_models: Sequence[str | os.PathLike[str]] | None
    llama_cpp: str | None
    loader: str | None


def _http(
    headers: Mapping[str, str] | None, ca_certs: Sequence[str | os.PathLike[str]] | None, http_timeout: float | None
) -> dict[str, Any]:
    """The HTTP items of `_native`'s options (read for URLs only)."""
    return {
        "headers": [(str(k), str(v)) for k, v in (headers or {}).items()],
        "ca_certs": [os.fspath(c) for c in (ca_certs or ())],
        "http_timeout": None if http_timeout is None else float(http_timeout),
    }


def _options(given: Mapping[str, Any]) -> dict[str, Any]:
    """`_native`'s options from a run's keyword arguments (`Options`), the
    ones not given at `validate`'s defaults: the one place they are read."""
    unknown = set(given) - set(_DEFAULTS)
    if unknown:
        raise TypeError(f"unexpected keyword argument {sorted(unknown)[0]!r}")
    o = {**_DEFAULTS, **given}
    profile, config = o["profile"], o["config"]
    if profile is not None and profile not in _PROFILES:
        raise UsageError(f"profile {profile!r}: expected one of {', '.join(_PROFILES)}")
    if config is None or isinstance(config, bool):
        explicit, discover = None, config is True
    else:
        explicit, discover = os.fspath(config), False
    return {
        "profile": profile,
        "check_data": bool(o["check_data"]),
        "container_only": bool(o["container_only"]),
        "config": explicit,
        "discover_config": discover,
        "deny_warnings": bool(o["deny_warnings"]),
        "timeout": None if o["timeout"] is None else float(o["timeout"]),
        "with_models": [os.fspath(m) for m in (o["with_models"] or ())],
        "llama_cpp": None if o["llama_cpp"] is None else str(o["llama_cpp"]),
        "loader": None if o["loader"] is None else str(o["loader"]),
        **_http(o["headers"], o["ca_certs"], o["http_timeout"]),
    }


def _unreadable(entry: Mapping[str, Any]) -> UnreadableError:
    return UnreadableError(f"{entry['path']}: {entry.get('error', 'unreadable')}")


def _result(kind: str, text: str) -> Report | SetReport | UnreadableError:
    entry = json.loads(text)
    if kind == "unreadable":
        return _unreadable(entry)
    return SetReport._of(entry) if kind == "set" else Report._of(entry)


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
    with_models: Sequence[str | os.PathLike[str]] | None = None,
    llama_cpp: str | None = None,
    loader: str | None = None,
) -> Report:
    """Validates one file and returns its `Report`.

    `profile` is `strict` (valid by the spec and loadable by ggml),
    `spec` or `ggml`; `None` takes the config's. `config` is a
    `gguf-validate.toml` to apply, `True` to find the nearest one from the
    working directory up (as the command line does without `--config`),
    `None` (the default) or `False` for none. `timeout` bounds the whole file in seconds. `headers`,
    `ca_certs` and `http_timeout` apply to URLs (`HF_TOKEN` and
    `HF_ENDPOINT` are read as the command line reads them). `with_models`
    are the models (paths or URLs) a projector, LoRA adapter or control
    vector is paired with, as the command line's `--with` (without them,
    the models of its folder). `llama_cpp` judges `strict` against a
    llama.cpp release too (`"b4600"`), or every known release from one to
    the newest (`"b4600.."`), as the command line's `--llama-cpp`; every
    report says which releases load the file (`summary["llama_cpp"]`).
    `loader` (`"llama.cpp"`, `"sd.cpp"`, `"comfyui-gguf"`) judges every
    file against that loader, as the command line's `--loader`; without
    it, each file against the one it is for (`Report.loader` says which).

    Raises `UnreadableError` when the input cannot be read and `UsageError`
    for bad arguments; an invalid file is a report, never an exception.
    """
    opts = _options({k: v for k, v in locals().items() if k != "source"})
    result = _result(*_call(_native.validate, _source(source), opts))
    if isinstance(result, UnreadableError):
        raise result
    return cast(Report, result)


#: `validate`'s keyword arguments and their defaults: the options of a run.
_DEFAULTS: dict[str, Any] = {
    p.name: p.default for p in inspect.signature(validate).parameters.values() if p.kind is p.KEYWORD_ONLY
}


def validate_many(
    sources: Iterable[Source], jobs: int | None = None, **options: Unpack[Options]
) -> Iterator[Report | SetReport | UnreadableError]:
    """Validates many files, `jobs` at a time (default: the CPUs), and
    yields each file's `Report` in input order as soon as it and those
    before it are done. `options` are `validate`'s keyword arguments
    (`profile`, `check_data`, ..., with the same defaults).

    A file that cannot be read is yielded as an `UnreadableError` (not
    raised), so one bad input does not end the run. A shard of a split set
    brings its sibling shards, each yielded with `split_set` set, then the
    set's own `SetReport`, in the command line's order.
    """
    opts = _options(options)
    n = jobs if jobs is not None else (os.cpu_count() or 1)
    if n < 1:
        raise UsageError(f"jobs {n}: at least 1")
    results = _call(_native.validate_many, [_source(s) for s in sources], n, opts)
    for kind, text in results:
        yield _result(kind, text)


def rules() -> list[dict[str, Any]]:
    """The rule catalogue (`gguf-validate rules --format json`): id, group,
    whether it is fatal, its level under each profile, citation,
    description and divergence from ggml."""
    return cast(list[dict[str, Any]], json.loads(_native.rules()))


@dataclass(frozen=True, slots=True)
class Rewritten:
    """What `fix` or `edit` did: the command line's `--format json` document.

    `fixes` lists each finding's fix (`rule`, `kind` `safe`/`unsafe`,
    `path`, `before`, `after`, `applied`: False for an unsafe fix held
    back); `changes` each key changed (`key`, `before`, `after`);
    `before` is the input's report (for `fix`), `report` the result's;
    `tensor_data` the digests of all tensor data before and after and
    whether they are equal. `written` says whether `output` (or the file,
    in place) was written; `data` holds the new file's bytes when the
    source was bytes.
    """

    valid: bool
    written: bool
    output: str | None
    fixes: tuple[Mapping[str, Any], ...]
    changes: tuple[Mapping[str, Any], ...]
    before: Report | None
    report: Report
    tensor_data: Mapping[str, Any]
    data: bytes | None = field(default=None, repr=False)
    _doc: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document, as Python objects."""
        return cast(dict[str, Any], json.loads(json.dumps(self._doc)))

    def __bool__(self) -> bool:
        return self.valid


def _rewritten(text: str, data: bytes | None, name: str) -> Rewritten:
    doc = json.loads(text)
    path = doc.get("output") or doc.get("input") or name

    def report(r: Mapping[str, Any] | None) -> Report | None:
        return None if r is None else Report._of({"path": path, **r})

    after = report(doc["report"])
    assert after is not None
    return Rewritten(
        valid=bool(doc["valid"]),
        written=bool(doc.get("written", False)),
        output=doc.get("output") if doc.get("written") else None,
        fixes=tuple(doc.get("fixes", ())),
        changes=tuple(doc.get("changes", ())),
        before=report(doc.get("before")),
        report=after,
        tensor_data=doc["tensor_data"],
        data=data,
        _doc=doc,
    )


def _rewrite(
    source: Source,
    output: str | os.PathLike[str] | None,
    in_place: bool,
    requests: list[tuple[str, str, str]] | None,
    unsafe: bool,
    dry_run: bool,
    force: bool,
    opts: dict[str, Any],
) -> Rewritten:
    """`_native.rewrite` (an edit with `requests`, else the fixes) and its `Rewritten`."""
    name = "<bytes>" if not isinstance(source, (str, os.PathLike)) else os.fspath(source)
    out = None if output is None else os.fspath(output)
    text, data = _call(_native.rewrite, _source(source), out, in_place, requests, unsafe, dry_run, force, opts)
    return _rewritten(text, None if data is None else bytes(data), str(name))


def _rewrite_options(profile: str | None, deny_warnings: bool, container_only: bool, loader: str | None) -> dict[str, Any]:
    return _options(
        {"profile": profile, "deny_warnings": deny_warnings, "container_only": container_only, "loader": loader}
    )


def fix(
    source: Source,
    output: str | os.PathLike[str] | None = None,
    *,
    in_place: bool = False,
    unsafe: bool = False,
    dry_run: bool = False,
    force: bool = False,
    profile: str | None = "strict",
    deny_warnings: bool = False,
    container_only: bool = False,
    loader: str | None = None,
) -> Rewritten:
    """Fixes the findings of `source` whose rule has a fix (`gguf-validate
    fix`; `rules()` lists each rule's `fixes`).

    A path is written to `output` (or, with `in_place`, replaces the file
    once the fixed copy is complete and validated); `dry_run` writes
    nothing. Unsafe fixes are made only with `unsafe`, and listed as held
    back otherwise. Bytes are fixed in memory: the result's `data`. The
    result is validated under `profile`; it is written only when valid,
    or with `force`. Tensor bytes are never changed (`tensor_data`).
    """
    opts = _rewrite_options(profile, deny_warnings, container_only, loader)
    return _rewrite(source, output, in_place, None, unsafe, dry_run, force, opts)


def edit(
    source: Source,
    output: str | os.PathLike[str] | None = None,
    *,
    in_place: bool = False,
    set: Mapping[str, str] | None = None,  # noqa: A002 - the command line's --set
    remove: Sequence[str] = (),
    chat_template: str | None = None,
    chat_templates: Mapping[str, str] | None = None,
    pre_tokenizer: str | None = None,
    special_tokens: Mapping[str, int | str] | None = None,
    force: bool = False,
    profile: str | None = "strict",
    deny_warnings: bool = False,
    container_only: bool = False,
    loader: str | None = None,
) -> Rewritten:
    """Changes the metadata of `source` (`gguf-validate edit`): `set` maps
    keys to values as the command line's `--set KEY=VALUE` writes them
    (`{"general.name": "str:My model"}`, or without a prefix the key's
    well-known type), `remove` lists keys, `chat_template` is the template's
    text, `pre_tokenizer` a name llama.cpp knows, `special_tokens` maps
    roles (`eos`, `eot`, ...) to an id or a token's text.

    A path is written to `output` (or in place); bytes are rewritten in
    memory (the result's `data`). The result is validated under `profile`
    and written only when valid, or with `force`; tensor data is copied
    byte for byte (`tensor_data`). Raises `UsageError` for a change that
    cannot be made.
    """
    requests: list[tuple[str, str, str]] = []
    for key, value in (set or {}).items():
        requests.append(("set", str(key), str(value)))
    requests += [("remove", str(key), "") for key in remove]
    if chat_template is not None:
        requests.append(("chat_template", str(chat_template), ""))
    for template_name, text in (chat_templates or {}).items():
        requests.append(("named_chat_template", str(template_name), str(text)))
    if pre_tokenizer is not None:
        requests.append(("pre_tokenizer", str(pre_tokenizer), ""))
    for role, token in (special_tokens or {}).items():
        requests.append(("special_token", str(role), str(token)))
    if not requests:
        raise UsageError(
            "nothing to change: give set, remove, chat_template, chat_templates, pre_tokenizer or special_tokens"
        )
    opts = _rewrite_options(profile, deny_warnings, container_only, loader)
    return _rewrite(source, output, in_place, requests, False, False, force, opts)


def _seconds(timeout: float | None) -> float | None:
    return None if timeout is None else float(timeout)


def dump(
    source: Source,
    *,
    full: bool = False,
    headers: Mapping[str, str] | None = None,
    ca_certs: Sequence[str | os.PathLike[str]] | None = None,
    http_timeout: float | None = None,
    timeout: float | None = None,
) -> dict[str, Any]:
    """A GGUF file's header, metadata and tensor table (`gguf-validate dump`):
    long arrays are cut unless `full`. `source` is a path, a URL or
    bytes-like, as for `validate` (`headers`, `ca_certs`, `http_timeout`
    for URLs). `timeout` bounds the whole call in seconds. Raises
    `NotGGUFError` for a file that is not GGUF v2/v3 and `UnreadableError`
    for one that cannot be read (or when `timeout` passed)."""
    text, _complete = _call(
        _native.dump, _source(source), full, _http(headers, ca_certs, http_timeout), _seconds(timeout)
    )
    return cast(dict[str, Any], json.loads(text))


def hash(  # noqa: A001 - the command line's name
    source: Source,
    algo: str = "sha256",
    *,
    per_tensor: bool = False,
    headers: Mapping[str, str] | None = None,
    ca_certs: Sequence[str | os.PathLike[str]] | None = None,
    http_timeout: float | None = None,
    timeout: float | None = None,
) -> str | dict[str, str]:
    """The digest of a file's tensor data as `llama-gguf-hash` computes it
    (`xxh64`, `sha1`, `sha256`, or `uuid`), in lower-case hex, equal to
    `gguf-validate hash`'s model line. `source` is a path, a URL (read in
    ranges) or bytes-like, as for `validate`; a shard
    (`NAME-0000k-of-0000n.gguf`) stands for its whole split set, as on the
    command line. With `per_tensor`, a dict of tensor name to digest, and
    the whole model under the key `""`. `timeout` bounds the whole call in
    seconds (`UnreadableError` when it passed)."""
    model, tensors = _call(
        _native.hash, _source(source), algo, per_tensor, _http(headers, ca_certs, http_timeout), _seconds(timeout)
    )
    if not per_tensor:
        return model
    return {**dict(tensors), "": model}


def derive(
    base: Source,
    quant: Source,
    imatrix: Source | None = None,
    *,
    headers: Mapping[str, str] | None = None,
    ca_certs: Sequence[str | os.PathLike[str]] | None = None,
    http_timeout: float | None = None,
    timeout: float | None = None,
) -> list[dict[str, Any]]:
    """Whether each tensor of `quant` is `ggml_quantize_chunk` of the
    `base`'s tensor of the same name (with `imatrix`'s weights when given):
    one dict per tensor with `name`, `type` and `status` (`identical`,
    `differs` or `not-derivable`, with details). Each of the three is a
    path, a URL or bytes-like, as for `validate`. `timeout` bounds the
    whole call in seconds (`UnreadableError` when it passed)."""
    text = _call(
        _native.derive,
        _source(base),
        _source(quant),
        None if imatrix is None else _source(imatrix),
        _http(headers, ca_certs, http_timeout),
        _seconds(timeout),
    )
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


def _no_numpy(function: str) -> ImportError:
    """Why a numerics function cannot run: NumPy (the `numpy` extra) is not
    installed; nothing else needs it."""
    return ImportError(
        f"gguf_validate.{function} needs NumPy, which is not installed: "
        "pip install 'gguf-validate[numpy]' (validation does not need it)"
    )


def dequantize(ggml_type: str | int, data: Any) -> np.ndarray[Any, np.dtype[np.float32]]:
    """Blocks of `ggml_type` (a name such as `"q4_K"` or an id) to a 1-D
    float32 array, bit-exact with ggml's `to_float`. `data` is any
    bytes-like object, read without copying. Needs NumPy (the `numpy`
    extra); raises `ImportError` without it."""
    try:
        import numpy as np
    except ImportError as e:
        raise _no_numpy("dequantize") from e

    buf = np.frombuffer(_source(data), dtype=np.uint8)
    return _call(_native.dequantize, _type_name(ggml_type), buf)


def quantize(
    ggml_type: str | int,
    array: npt.ArrayLike,
    *,
    imatrix: npt.ArrayLike | None = None,
    reference: str = "chunk",
    experts: int = 1,
) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """Float values to blocks of `ggml_type`, byte for byte what
    `ggml_quantize_chunk` writes, and what the command line's `quantize`
    writes for the same values and options. A 2-D `array` is rows (its last
    axis a multiple of the block size); a 1-D array is rows of the
    importance matrix's length, or one row without one (`--row-length`'s
    default). `imatrix` is one importance weight per column (required by
    some IQ types), for each of `experts` slices in turn: the rows are then
    split evenly between the slices, as llama-quantize does for a MoE
    tensor (`--imatrix-tensor`). `reference="row"` selects ggml's
    `quantize_row_*_ref` functions (no importance matrix). Q8_1 and Q8_K,
    which `ggml_quantize_chunk` lacks, always use the row reference. Needs
    NumPy (the `numpy` extra); raises `ImportError` without it."""
    try:
        import numpy as np
    except ImportError as e:
        raise _no_numpy("quantize") from e

    a = np.ascontiguousarray(array, dtype=np.float32)
    if a.ndim not in (1, 2):
        raise UsageError(f"array: expected 1 or 2 dimensions, got {a.ndim}")
    n_per_row = a.shape[-1] if a.ndim == 2 else None
    w = None if imatrix is None else np.ascontiguousarray(imatrix, dtype=np.float32).reshape(-1)
    return _call(_native.quantize, _type_name(ggml_type), a.reshape(-1), n_per_row, w, reference, experts)
