"""Scan a whole hub: every GGUF file of a list validated from its metadata,
one Parquet row per file, resumable, duplicates fetched once.

    python -m gguf_validate.scan SOURCES --output DIR [--engine local|ray]
        [--concurrency N] [--profile P] [--llama-cpp R|R..] [--rate R]
        [--timeout S] [--retry-failed]
    python -m gguf_validate.scan report DIR --output PAGE.html

`SOURCES` is a text file of URLs, a `.parquet`/`.csv` file with a `url`
column, or `hub:QUERY` (the GGUF files the hub at `HF_ENDPOINT` lists for
QUERY). The same scan runs as `scan(...)`.

How a file is read: one `HEAD` (the hub's revision, SHA-256 and size), then,
unless a file with that SHA-256 was judged already (in this run or in the
output folder) or the file was scanned at that revision already, its
metadata in a few range requests, validated once per profile from the one
read (strict, spec, ggml); with `--llama-cpp R` (`R..`: every known release
from R to the newest) `strict` is also judged against those llama.cpp
releases, as the command line's `--llama-cpp`. Every row says which releases
load the file (`loads_from`, `loads_until`). Work goes in chunks of `CHUNK_FILES`: all of a
chunk is probed, then one copy of each file in it is read, so copies met at
the same moment are still fetched once (a copy of one whose read failed in a
way that may pass is read itself). A rerun over the same folder finishes
what a run left undone: it scans again every file whose latest row is a
failure that may pass (`TRANSIENT_CLASSES`; every failure with
`--retry-failed`) or a verdict judged under another `--llama-cpp` setting
(each row records its own, `llama_cpp`), and skips the rest. Requires `pyarrow` (and `ray` for
`--engine ray`): `pip install 'gguf-validate[scan]'`.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO, cast

from gguf_validate import __version__, _native
from gguf_validate._errors import _translate
from gguf_validate.scan import _work
from gguf_validate.scan.engine import make
from gguf_validate.scan.schema import MAX_FINDINGS, PROFILES, TRANSIENT_CLASSES
from gguf_validate.scan.sources import ListingError, Source, read_sources, repo_of
from gguf_validate.scan.store import VERDICT_COLUMNS, Store

__all__ = ["CHUNK_FILES", "ScanSummary", "main", "scan"]

#: Files probed, then read, per step of a scan.
CHUNK_FILES = 2048

#: Seconds between two progress lines at most once a second.
PROGRESS_SECONDS = 1.0

#: Files read at once by default (local engine: threads; Ray: tasks).
DEFAULT_CONCURRENCY = 16

#: Threads per Ray task by default.
DEFAULT_THREADS = 8


@dataclass(frozen=True, slots=True)
class ScanSummary:
    """What a scan did."""

    output: str
    #: Sources named (each URL once).
    files: int
    #: Rows written by this run.
    rows: int
    #: Files read and judged (their metadata fetched).
    judged: int
    #: Files recorded from an earlier judgement of the same SHA-256.
    duplicates: int
    #: Files skipped: already in the output at the same revision.
    skipped: int
    #: Files that could not be read.
    unreadable: int
    #: Of those, the failures that may pass (`TRANSIENT_CLASSES`): a rerun
    #: scans them again.
    transient: int
    #: Files scanned again because their latest row was such a failure (or
    #: any failure, with `retry_failed`).
    retried: int
    bytes: int
    requests: int
    seconds: float
    #: Why a hub listing stopped before its end (the files listed before
    #: it were scanned; a rerun lists again and scans the rest), or None.
    listing_error: str | None = None
    #: Files scanned again because their latest row was judged under
    #: another `llama_cpp` setting than this run's.
    rejudged: int = 0
    #: The run's `llama_cpp` setting as recorded in its rows (`R`, `R..`),
    #: or None.
    llama_cpp: str | None = None


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _llama_cpp_setting(llama_cpp: str | None) -> str | None:
    """A `--llama-cpp` setting (`R`, `R..`) as rows record it (`R..` where R
    is the newest release reads `R`), or None; an unknown release is a
    `UsageError` naming the known ones, as the command line's."""
    if llama_cpp is None:
        return None
    try:
        judged = _native.llama_cpp_releases(llama_cpp)
    except ValueError as e:
        raise _translate(e) from None
    return judged[0] if len(judged) == 1 else f"{judged[0]}.."


def _base(src: Source, probe: Mapping[str, Any], profile: str, llama_cpp: str | None = None) -> dict[str, Any]:
    repo, _ = repo_of(src.url)
    return {
        "url": src.url.split("?", 1)[0].split("#", 1)[0],
        "repo": src.repo or repo,
        "revision": probe.get("revision") or src.revision,
        "sha256": probe.get("sha256"),
        "size": probe.get("size"),
        "tool_version": __version__,
        "scanned_at": _now(),
        "profile": profile,
        "llama_cpp": llama_cpp,
        "template_hashes": [],
        "template_rules": [],
        "rules": [],
    }


def _unreadable(
    row: dict[str, Any], failure: Mapping[str, Any], probe: Mapping[str, Any], answer: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """`row` for a file that could not be read: `failure` says why (the
    probe's, the read's, or the row of the copy it shares a failure with);
    the cost is the probe's plus the read's `answer`, when there was one."""
    answer = answer or {}
    row.update(
        status="unreadable",
        error_class=failure.get("error_class"),
        error=failure.get("error"),
        requests=int(probe.get("requests", 0)) + int(answer.get("requests", 0)),
        bytes=int(answer.get("bytes", 0)),
        seconds=float(probe.get("seconds", 0.0)) + float(answer.get("seconds", 0.0)),
    )
    return row


#: The kinds of file other than a model, by the layer their report examines
#: instead of the model layer.
KINDS = ("adapter", "projector", "imatrix", "control vector", "diffusion")


def kind_of(summary: Mapping[str, Any]) -> str | None:
    """What kind of file a report examined: one of KINDS, else `model` when
    the model layer is among its layers (checked or not), else None."""
    layers = {e.get("layer") for e in summary.get("examined") or []}
    return next((k for k in KINDS if k in layers), "model" if "model" in layers else None)


def _judged(row: dict[str, Any], answer: Mapping[str, Any], probe: Mapping[str, Any], profile: str) -> dict[str, Any]:
    entries = {e["profile"]: e for e in answer["entries"]}
    main = entries[profile]
    summary = main.get("summary") or {}
    diags = main.get("diagnostics") or []
    rules = sorted({d["rule"] for d in diags})
    facts = answer.get("facts") or {}
    remote = answer.get("remote") or {}
    # Which releases load it: null when the report does not say (not a
    # model or projector llama.cpp loads, a shard).
    loads = summary.get("llama_cpp")
    row.update(
        status="valid" if main["valid"] else "invalid",
        valid_strict=entries["strict"]["valid"] if "strict" in entries else None,
        valid_spec=entries["spec"]["valid"] if "spec" in entries else None,
        valid_ggml=entries["ggml"]["valid"] if "ggml" in entries else None,
        errors=int((main.get("counts") or {}).get("errors", 0)),
        warnings=int((main.get("counts") or {}).get("warnings", 0)),
        rules=rules,
        findings=json.dumps(diags[:MAX_FINDINGS], ensure_ascii=False),
        format=main.get("format"),
        architecture=summary.get("architecture"),
        parameters=summary.get("parameters"),
        file_type=facts.get("file_type"),
        tensor_count=summary.get("tensor_count"),
        template_hashes=[sha for _, sha in facts.get("templates") or []],
        template_rules=[r for r in rules if r.startswith("template-")],
        loads_from=loads.get("loads_from") if loads else None,
        loads_until=loads.get("loads_until") if loads else None,
        loads_because=list(loads.get("because") or []) if loads else None,
        kind=kind_of(summary),
        requests=int(probe.get("requests", 0)) + int(answer.get("requests", 0)),
        bytes=int(answer.get("bytes", 0)),
        seconds=float(probe.get("seconds", 0.0)) + float(answer.get("seconds", 0.0)),
    )
    row["revision"] = row["revision"] or remote.get("revision")
    row["sha256"] = row["sha256"] or remote.get("sha256")
    if row["size"] is None:
        row["size"] = summary.get("file_size")
    return row


def _duplicate(row: dict[str, Any], of: Mapping[str, Any], probe: Mapping[str, Any]) -> dict[str, Any]:
    row.update({k: of.get(k) for k in VERDICT_COLUMNS})
    row.update(
        duplicate_of=of["url"],
        requests=int(probe.get("requests", 0)),
        bytes=0,
        seconds=float(probe.get("seconds", 0.0)),
    )
    return row


def _pack(verdict: dict[str, Any]) -> bytes:
    """A judged row's verdict columns, compressed (a few hundred bytes where
    the dict of Python objects takes a few kilobytes; its findings repeat)."""
    return zlib.compress(pickle.dumps(verdict, protocol=pickle.HIGHEST_PROTOCOL), 1)


def _unpack(packed: bytes) -> dict[str, Any]:
    """What `_pack` packed (this process's own bytes, never a file's)."""
    return cast(dict[str, Any], pickle.loads(zlib.decompress(packed)))


class _Progress:
    """A rate line on a stream, at most once per `PROGRESS_SECONDS`."""

    def __init__(self, total: int, out: TextIO | None) -> None:
        self.total, self.out = total, out
        self.done = self.bytes = 0
        self.start = self._last = time.monotonic()

    def add(self, files: int, nbytes: int) -> None:
        self.done += files
        self.bytes += nbytes
        now = time.monotonic()
        if self.out is not None and (now - self._last >= PROGRESS_SECONDS or self.done == self.total):
            self._last = now
            spent = max(now - self.start, 1e-9)
            rate = self.done / spent
            eta = (self.total - self.done) / rate if rate > 0 else float("inf")
            self.out.write(
                f"scan: {self.done}/{self.total} files, {rate:.1f} files/s, "
                f"{self.bytes / spent / 1e6:.1f} MB/s, ETA {eta:.0f} s\n"
            )
            self.out.flush()


def scan(
    sources: str | Iterable[str | Source],
    output: str | os.PathLike[str],
    *,
    engine: str = "local",
    concurrency: int | None = None,
    threads: int = DEFAULT_THREADS,
    profile: str = "strict",
    rate: float | None = None,
    timeout: float | None = None,
    progress: TextIO | None = None,
    retry_failed: bool = False,
    llama_cpp: str | None = None,
) -> ScanSummary:
    """Scans `sources` (a SOURCES string as on the command line, or URLs)
    into the folder `output` (see the module). `rate` is requests per
    second per host for the whole scan (split evenly among Ray tasks);
    `timeout` is seconds per file; `progress` a stream for rate lines;
    `llama_cpp` the llama.cpp releases `strict` is judged against too
    (`"b4600"`, or `"b4600.."`: every known release from it on), as the
    command line's `--llama-cpp` (an unknown release: `UsageError`)."""
    if profile not in PROFILES:
        raise ValueError(f"profile `{profile}`: expected one of {', '.join(PROFILES)}")
    llama_cpp = _llama_cpp_setting(llama_cpp)
    started = time.monotonic()
    listed = read_sources(sources) if isinstance(sources, str) else (
        s if isinstance(s, Source) else Source(str(s)) for s in sources
    )
    seen: set[str] = set()
    todo: list[Source] = []
    listing_error: str | None = None
    try:
        for s in listed:
            if s.url not in seen:
                seen.add(s.url)
                todo.append(s)
    except ListingError as e:
        # A listing that stopped mid-way: what it listed is scanned (one bad
        # page never loses the rest); the run says so, and a rerun lists again.
        if not todo:
            raise
        listing_error = str(e)
    store = Store(os.fspath(output), retry_failed=retry_failed, llama_cpp=llama_cpp)
    conc = concurrency or DEFAULT_CONCURRENCY
    eng = make(engine, conc, threads)
    per_process_rate = rate / eng.processes if rate else None
    settings = _work.Settings(per_process_rate, timeout, max(conc, threads), PROFILES, llama_cpp)
    counts = dict(rows=0, judged=0, duplicates=0, skipped=0, unreadable=0, transient=0, bytes=0, requests=0)
    retried = sum(s.url in store.retrying for s in todo)
    rejudged = sum(s.url in store.rejudging for s in todo)
    # Judged this run: SHA-256 -> the verdict columns and URL of its row,
    # packed (`_pack`: a run holds one for every file it judged).
    judged_here: dict[str, bytes] = {}
    bar = _Progress(len(todo), progress)

    def emit(rows: list[dict[str, Any]]) -> None:
        store.add(rows)
        for r in rows:
            counts["rows"] += 1
            counts["bytes"] += int(r.get("bytes") or 0)
            counts["requests"] += int(r.get("requests") or 0)
            counts["unreadable"] += r["status"] == "unreadable"
            counts["transient"] += r["status"] == "unreadable" and r.get("error_class") in TRANSIENT_CLASSES
            counts["duplicates"] += r.get("duplicate_of") is not None
        bar.add(len(rows), sum(int(r.get("bytes") or 0) for r in rows))

    try:
        # Pinned to a revision already scanned: skipped without a request.
        fresh = [s for s in todo if not (s.revision and (s.url, s.revision) in store.done)]
        counts["skipped"] += len(todo) - len(fresh)
        bar.add(len(todo) - len(fresh), 0)
        for at in range(0, len(fresh), CHUNK_FILES):
            chunk = fresh[at : at + CHUNK_FILES]
            probes: dict[int, dict[str, Any]] = dict(eng.map("probe", settings, [s.url for s in chunk]))
            rows: list[dict[str, Any]] = []
            first: dict[str, int] = {}
            waiting: dict[int, list[int]] = {}
            to_read: list[int] = []
            for i, src in enumerate(chunk):
                p = probes[i]
                row = _base(src, p, profile, llama_cpp)
                if (src.url, row["revision"]) in store.done:
                    counts["skipped"] += 1
                    bar.add(1, 0)
                    continue
                if p.get("error_class"):
                    rows.append(_unreadable(row, p, p))
                    continue
                sha = p.get("sha256")
                here = judged_here.get(sha) if sha else None
                earlier = _unpack(here) if here is not None else store.judged(sha) if sha else None
                if earlier is not None:
                    rows.append(_duplicate(row, earlier, p))
                elif sha and sha in first:
                    waiting.setdefault(first[sha], []).append(i)
                else:
                    if sha:
                        first[sha] = i
                    to_read.append(i)
            emit(rows)

            def judge(indices: list[int]) -> list[int]:
                """Reads `indices` of the chunk; the copies waiting on a read
                that failed in a way that may pass, to be read themselves."""
                again: list[int] = []
                for j, answer in eng.map("judge", settings, [chunk[i].url for i in indices]):
                    i = indices[j]
                    src, p = chunk[i], probes[i]
                    row = _base(src, p, profile, llama_cpp)
                    if answer.get("error_class"):
                        out = [_unreadable(row, answer, p, answer)]
                    else:
                        counts["judged"] += 1
                        out = [_judged(row, answer, p, profile)]
                        if row["sha256"]:
                            judged_here[row["sha256"]] = _pack({k: row.get(k) for k in (*VERDICT_COLUMNS, "url")})
                    for k in waiting.pop(i, []):
                        copy = _base(chunk[k], probes[k], profile, llama_cpp)
                        if out[0]["status"] != "unreadable":
                            out.append(_duplicate(copy, out[0], probes[k]))
                        elif out[0].get("error_class") in TRANSIENT_CLASSES:
                            # A copy never inherits a failure that may pass:
                            # it is read itself.
                            again.append(k)
                        else:
                            # It shares the lasting failure of the copy read.
                            out.append(_unreadable(copy, out[0], probes[k]))
                    emit(out)
                return again

            again = judge(to_read)
            while again:
                again = judge(again)
        store.flush()
    finally:
        store.flush()
        eng.close()
    return ScanSummary(
        output=os.fspath(output),
        files=len(todo),
        rows=counts["rows"],
        judged=counts["judged"],
        duplicates=counts["duplicates"],
        skipped=counts["skipped"],
        unreadable=counts["unreadable"],
        transient=counts["transient"],
        retried=retried,
        bytes=counts["bytes"],
        requests=counts["requests"],
        seconds=time.monotonic() - started,
        listing_error=listing_error,
        rejudged=rejudged,
        llama_cpp=llama_cpp,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (`python -m gguf_validate.scan`); the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["report"]:
        from gguf_validate.scan.report import main as report_main

        return int(report_main(args[1:]))
    ap = argparse.ArgumentParser(
        prog="python -m gguf_validate.scan",
        description="Validate every GGUF file of a list or a hub listing into Parquet (one row per file). "
        "`python -m gguf_validate.scan report DIR --output PAGE.html` draws a scan's report.",
    )
    ap.add_argument("sources", help="a text file of URLs, a .parquet/.csv with a `url` column, or hub:QUERY")
    ap.add_argument("--output", required=True, help="the folder of Parquet part files (a rerun resumes it)")
    ap.add_argument("--engine", choices=("local", "ray"), default="local")
    ap.add_argument("--concurrency", type=int, default=None, help=f"files read at once (default {DEFAULT_CONCURRENCY}; Ray: tasks)")
    ap.add_argument("--threads", type=int, default=DEFAULT_THREADS, help="threads per Ray task")
    ap.add_argument("--profile", choices=PROFILES, default="strict", help="the profile of `status` and the findings")
    ap.add_argument(
        "--llama-cpp",
        metavar="RELEASE[..]",
        default=None,
        help="judge strict against this llama.cpp release's loader too (`b4600`), or with `RELEASE..` against every "
        "known release from it to the newest; a rerun judges again the files judged under another setting",
    )
    ap.add_argument("--rate", type=float, default=None, help="requests per second per host, for the whole scan")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per file")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    ap.add_argument(
        "--retry-failed",
        action="store_true",
        help="a rerun scans again every file whose latest row is unreadable (by default only the failures that "
        "may pass: timeout, rate_limited, network, server_error, read, changed)",
    )
    o = ap.parse_args(args)
    if o.concurrency is not None and o.concurrency < 1:
        ap.error("--concurrency: at least 1")
    try:
        s = scan(
            o.sources,
            o.output,
            engine=o.engine,
            concurrency=o.concurrency,
            threads=o.threads,
            profile=o.profile,
            rate=o.rate,
            timeout=o.timeout,
            progress=None if o.quiet else sys.stderr,
            retry_failed=o.retry_failed,
            llama_cpp=o.llama_cpp,
        )
    except (OSError, ValueError) as e:
        print(f"gguf_validate.scan: {e}", file=sys.stderr)
        return 2
    transient = f" ({s.transient} of them may pass: a rerun retries them)" if s.transient else ""
    retried = f"{s.retried} retried, " if s.retried else ""
    if s.rejudged:
        retried += f"{s.rejudged} judged again under --llama-cpp {s.llama_cpp or '(none)'}, "
    print(
        f"{s.files} files: {s.judged} read, {s.duplicates} duplicates, {retried}{s.skipped} skipped, "
        f"{s.unreadable} unreadable{transient}; {s.rows} rows into {s.output}; "
        f"{s.requests} requests, {s.bytes} bytes, {s.seconds:.1f} s"
    )
    if s.listing_error:
        print(
            f"gguf_validate.scan: the listing stopped early ({s.listing_error}): the {s.files} files listed "
            "before it were scanned; a rerun lists again and scans the rest",
            file=sys.stderr,
        )
        return 2
    return 0
