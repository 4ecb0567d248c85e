"""What runs where the files are read: a thread of this process (the local
engine) or a Ray task (the Ray engine). Top-level functions, so Ray can
ship them to its workers; one `_native.Scanner` per process and settings,
so its rate cap and the pauses servers ask for hold across threads.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from gguf_validate import _native


class Settings(NamedTuple):
    """How files are read (the same in every worker)."""

    #: Requests per second per host, for this process.
    rate: float | None
    #: Seconds per file.
    timeout: float | None
    #: Idle connections kept per host.
    connections: int
    #: Profiles each file is judged under.
    profiles: tuple[str, ...]
    #: The llama.cpp releases `strict` is judged against too (`R`, `R..`),
    #: or None (the pinned tree alone).
    llama_cpp: str | None = None


_scanners: dict[Settings, Any] = {}
_lock = threading.Lock()


def scanner(settings: Settings) -> Any:
    """The process's scanner for these settings."""
    with _lock:
        s = _scanners.get(settings)
        if s is None:
            s = _native.Scanner(settings.rate, settings.timeout, settings.connections, settings.llama_cpp)
            _scanners[settings] = s
        return s


def probe(settings: Settings, url: str) -> dict[str, Any]:
    """One `HEAD` of `url` (see `_native.Scanner.probe`), timed."""
    t = time.monotonic()
    r: dict[str, Any] = json.loads(scanner(settings).probe(url))
    r["seconds"] = time.monotonic() - t
    return r


def judge(settings: Settings, url: str) -> dict[str, Any]:
    """`url` judged under every profile (see `_native.Scanner.scan`), timed."""
    t = time.monotonic()
    r: dict[str, Any] = json.loads(scanner(settings).scan(url, list(settings.profiles)))
    r["seconds"] = time.monotonic() - t
    return r


WORK = {"probe": probe, "judge": judge}


def run_batch(kind: str, settings: Settings, urls: Sequence[str], threads: int) -> list[dict[str, Any]]:
    """`kind` of work on each URL, `threads` at a time; results in order."""
    fn = WORK[kind]
    if threads <= 1 or len(urls) <= 1:
        return [fn(settings, u) for u in urls]
    with ThreadPoolExecutor(max_workers=min(threads, len(urls))) as pool:
        return list(pool.map(lambda u: fn(settings, u), urls))


def ray_batch(batch: Any, kind: str, settings: Settings, threads: int) -> Any:
    """A Ray Data batch (`pyarrow.Table` with `i` and `url`): the results
    as JSON text beside their indices."""
    import pyarrow as pa  # type: ignore[import-untyped]

    urls = batch.column("url").to_pylist()
    results = run_batch(kind, settings, urls, threads)
    return pa.table({"i": batch.column("i"), "result": [json.dumps(r) for r in results]})
