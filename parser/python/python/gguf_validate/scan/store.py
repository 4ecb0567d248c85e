"""The output folder of a scan: Parquet part files, one row per file.

Rows are written as they are done, a part file at a time (at most
`PART_ROWS` rows, or every `PART_SECONDS` seconds), each written under a
temporary name and renamed into place: a scan killed at any moment leaves
whole part files and loses only the rows not yet written. A rerun over the
same folder reads what is there: a file already scanned at the same
revision is skipped, and a file whose SHA-256 was judged already is
recorded from that row without being fetched.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from gguf_validate.scan.schema import SCHEMA

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
)


class Store:
    """The rows of one output folder: what is there, and what is added."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        os.makedirs(folder, exist_ok=True)
        self.done: set[tuple[str, str | None]] = set()
        self.done_urls: set[str] = set()
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
            for i, (u, r, s, st, d) in enumerate(zip(urls, revs, shas, status, dups, strict=True)):
                self.done.add((u, r))
                self.done_urls.add(u)
                if s and st != "unreadable" and d is None:
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
        with this SHA-256, if there is one."""
        i = self._by_sha.get(sha256)
        if i is None or self._old is None:
            return None
        row = self._old.slice(i, 1).to_pylist()[0]
        return {k: row[k] for k in (*VERDICT_COLUMNS, "url")}

    def add(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Queues rows; writes a part when enough are queued or have waited."""
        for r in rows:
            self._pending.append(dict(r))
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
