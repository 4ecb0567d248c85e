"""The output folder of a scan: Parquet part files, one row per file.

Rows are written as they are done, a part file at a time (at most
`PART_ROWS` rows, or every `PART_SECONDS` seconds), each written under a
temporary name and renamed into place: a scan killed at any moment leaves
whole part files and loses only the rows not yet written. A rerun over the
same folder reads what is there: a file already scanned at the same
revision is skipped unless its latest row is a failure that may pass
(`TRANSIENT_CLASSES`: it is scanned again, its `attempts` counted up; any
failure with `retry_failed`) or a verdict judged under another llama.cpp
setting than the rerun's (`llama_cpp`: judged again), and a file whose
SHA-256 was judged already under the same setting is recorded from that
row without being fetched.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from gguf_validate.scan.schema import SCHEMA, TRANSIENT_CLASSES

#: Rows per part file at most (`GGUF_VALIDATE_SCAN_PART_ROWS` sets another
#: number: smaller parts lose fewer rows to a crash, at more files).
PART_ROWS = int(os.environ.get("GGUF_VALIDATE_SCAN_PART_ROWS") or 1000)

#: Seconds rows wait at most before they are written.
PART_SECONDS = 5.0

#: The columns a duplicate copies from the row it duplicates.
VERDICT_COLUMNS = (
    "status",
    "valid_strict",
    "valid_spec",
    "valid_ggml",
    "errors",
    "warnings",
    "rules",
    "findings",
    "format",
    "architecture",
    "parameters",
    "file_type",
    "tensor_count",
    "template_hashes",
    "template_rules",
    "profile",
    "loads_from",
    "loads_until",
    "loads_because",
    "llama_cpp",
    "kind",
)


class Store:
    """The rows of one output folder: what is there, and what is added."""

    def __init__(self, folder: str, retry_failed: bool = False, llama_cpp: str | None = None) -> None:
        self.folder = folder
        #: The run's `--llama-cpp` setting: a verdict judged under another
        #: (its row's `llama_cpp`; null before the column) is no answer to
        #: this run, neither for its URL nor for a copy of its file.
        self.llama_cpp = llama_cpp
        os.makedirs(folder, exist_ok=True)
        self.done: set[tuple[str, str | None]] = set()
        self.done_urls: set[str] = set()
        #: How many times each URL was scanned so far (its latest row's
        #: `attempts`; 1 for a row written before the column existed).
        self.attempts: dict[str, int] = {}
        #: URLs whose latest row is a failure this run scans again: a
        #: transient one (`TRANSIENT_CLASSES`), or any with `retry_failed`.
        self.retrying: set[str] = set()
        #: URLs whose latest row is a verdict judged under another
        #: `llama_cpp` setting: this run judges them again.
        self.rejudging: set[str] = set()
        self._by_sha: dict[str, int] = {}
        self._old: pa.Table | None = None
        self._pending: list[dict[str, Any]] = []
        self._since = time.monotonic()
        self.written = 0
        self.part_rows = max(1, PART_ROWS)
        parts = self.parts()
        if parts:
            table = pq.read_table(parts, schema=SCHEMA)
            self._old = table
            urls = table.column("url").to_pylist()
            revs = table.column("revision").to_pylist()
            shas = table.column("sha256").to_pylist()
            status = table.column("status").to_pylist()
            dups = table.column("duplicate_of").to_pylist()
            classes = table.column("error_class").to_pylist()
            attempts = table.column("attempts").to_pylist()
            scanned = table.column("scanned_at").to_pylist()
            settings = table.column("llama_cpp").to_pylist()
            # The latest row of a URL counts (by `attempts`, which each
            # scan of it counts up, then `scanned_at`, then the order the
            # part files are read), as in the report. Not `scanned_at`
            # first: a rerun within the second of a run's last row ties.
            latest: dict[str, tuple[tuple[int, int, str], int]] = {}
            for i, (u, at) in enumerate(zip(urls, scanned, strict=True)):
                key = (attempts[i] or 1, 0, "") if at is None else (attempts[i] or 1, 1, at)
                if u not in latest or key >= latest[u][0]:
                    latest[u] = (key, i)
            for u, (_, i) in latest.items():
                self.attempts[u] = attempts[i] or 1
                if status[i] == "unreadable" and (retry_failed or classes[i] in TRANSIENT_CLASSES):
                    self.retrying.add(u)
                    continue
                if status[i] != "unreadable" and settings[i] != llama_cpp:
                    self.rejudging.add(u)
                    continue
                self.done.add((u, revs[i]))
                self.done_urls.add(u)
            for i, (s, st, d) in enumerate(zip(shas, status, dups, strict=True)):
                if s and st != "unreadable" and d is None and settings[i] == llama_cpp:
                    self._by_sha.setdefault(s, i)

    def parts(self) -> list[str]:
        """The part files in the folder, by name."""
        return sorted(
            os.path.join(self.folder, n)
            for n in os.listdir(self.folder)
            if n.startswith("part-") and n.endswith(".parquet")
        )

    def judged(self, sha256: str) -> dict[str, Any] | None:
        """The verdict columns (and URL) of an earlier run's row for a file
        with this SHA-256 judged under this run's `llama_cpp`, if there is
        one."""
        i = self._by_sha.get(sha256)
        if i is None or self._old is None:
            return None
        row = self._old.slice(i, 1).to_pylist()[0]
        return {k: row[k] for k in (*VERDICT_COLUMNS, "url")}

    def add(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Queues rows (each counted as one more attempt at its URL); writes
        a part when enough are queued or have waited."""
        for r in rows:
            row = dict(r)
            row["attempts"] = self.attempts.get(row["url"], 0) + 1
            self._pending.append(row)
        if len(self._pending) >= self.part_rows or (self._pending and time.monotonic() - self._since >= PART_SECONDS):
            self.flush()

    def flush(self) -> None:
        """Writes the queued rows as one part file (atomically)."""
        self._since = time.monotonic()
        while self._pending:
            batch, self._pending = self._pending[: self.part_rows], self._pending[self.part_rows :]
            table = pa.Table.from_pylist(batch, schema=SCHEMA)
            name = f"part-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:12]}.parquet"
            tmp = os.path.join(self.folder, f".{name}.tmp")
            pq.write_table(table, tmp)
            os.replace(tmp, os.path.join(self.folder, name))
            self.written += len(batch)
            for r in batch:
                self.done.add((r["url"], r.get("revision")))
                self.done_urls.add(r["url"])
