"""The report of a hub scan: one static HTML page from a scan's Parquet folder.

`python -m gguf_validate.scan report DIR --output PAGE.html` reads every
`part-*.parquet` file under DIR (rows of `gguf_validate.scan.schema.SCHEMA`)
and writes one self-contained page: no network, no script, plots embedded
as base64 PNG (matplotlib, Agg). It shows the totals (files, verdicts under
each profile, duplicates, bytes, requests and seconds), verdicts by
architecture and by file type, the most frequent rules, files per chat
template hash with the template rules found in them, files per minimum
llama.cpp release (`loads_from`) with the files the newest release refuses
(`loads_until`), bytes per file, and unreadable files by error class.

A URL with more than one row (a rerun that read it again) counts once, with
its latest row (by `attempts`, then `scanned_at`, then by the order the part
files are read in). Every number in a table is in an element with a stable `id` or a
`data-` attribute (`data-value` holds it unformatted), so that a test or a
script can read the page back; every string from the data (URLs, rule ids,
messages, architecture names) is escaped, since the data is untrusted.

`write_report` returns the figures the page shows, as plain Python values.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import os
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.dataset as ds  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from gguf_validate.scan.schema import PROFILES, SCHEMA, TRANSIENT_CLASSES

__all__ = ["FILE_TYPE_NAMES", "main", "read_scan", "summarize", "write_report"]

#: The part files of a scan, under its output folder.
PART_GLOB = "part-*.parquet"

#: How many rows the architecture and file-type tables list (the rest is
#: one "others" row).
MAX_GROUPS = 40
#: How many rule ids the rule table lists.
MAX_RULES = 50
#: How many chat template hashes the template table lists.
MAX_TEMPLATES = 50
#: How many template rules one template's row names.
MAX_TEMPLATE_RULES = 20
#: How many error classes the unreadable table lists.
MAX_ERROR_CLASSES = 30
#: How many bars and rows the llama.cpp release histogram has at most
#: (the known releases with files, then names of other versions' rows).
MAX_RELEASES = 80
#: How many files the newest llama.cpp release refuses the page lists.
MAX_REFUSED = 100
#: How many bars a bar chart has.
MAX_BARS = 20
#: How many characters of a label a chart shows.
MAX_LABEL = 40
#: How many characters of an example URL or error message a table shows.
MAX_EXAMPLE = 300
#: The number of logarithmic bins of the bytes-per-file histogram.
HISTOGRAM_BINS = 40
#: Chart resolution (dots per inch of a PNG).
DPI = 96

#: `general.file_type` names: gguf-py 0.19.0's `gguf.constants.LlamaFileType`
#: (the values of llama.cpp's `enum llama_ftype` in include/llama.h, without
#: its `LLAMA_FTYPE_` prefix); numbers missing here were removed upstream.
FILE_TYPE_NAMES: dict[int, str] = {
    0: "ALL_F32",
    1: "MOSTLY_F16",
    2: "MOSTLY_Q4_0",
    3: "MOSTLY_Q4_1",
    7: "MOSTLY_Q8_0",
    8: "MOSTLY_Q5_0",
    9: "MOSTLY_Q5_1",
    10: "MOSTLY_Q2_K",
    11: "MOSTLY_Q3_K_S",
    12: "MOSTLY_Q3_K_M",
    13: "MOSTLY_Q3_K_L",
    14: "MOSTLY_Q4_K_S",
    15: "MOSTLY_Q4_K_M",
    16: "MOSTLY_Q5_K_S",
    17: "MOSTLY_Q5_K_M",
    18: "MOSTLY_Q6_K",
    19: "MOSTLY_IQ2_XXS",
    20: "MOSTLY_IQ2_XS",
    21: "MOSTLY_Q2_K_S",
    22: "MOSTLY_IQ3_XS",
    23: "MOSTLY_IQ3_XXS",
    24: "MOSTLY_IQ1_S",
    25: "MOSTLY_IQ4_NL",
    26: "MOSTLY_IQ3_S",
    27: "MOSTLY_IQ3_M",
    28: "MOSTLY_IQ2_S",
    29: "MOSTLY_IQ2_M",
    30: "MOSTLY_IQ4_XS",
    31: "MOSTLY_IQ1_M",
    32: "MOSTLY_BF16",
    36: "MOSTLY_TQ1_0",
    37: "MOSTLY_TQ2_0",
    38: "MOSTLY_MXFP4_MOE",
    39: "MOSTLY_NVFP4",
    40: "MOSTLY_Q1_0",
    1024: "GUESSED",
}

#: The columns the report reads (the others, `findings` above all, are not
#: loaded).
COLUMNS = (
    "url",
    "sha256",
    "size",
    "status",
    "valid_strict",
    "valid_spec",
    "valid_ggml",
    "rules",
    "architecture",
    "kind",
    "file_type",
    "template_hashes",
    "template_rules",
    "bytes",
    "requests",
    "seconds",
    "error_class",
    "error",
    "duplicate_of",
    "tool_version",
    "scanned_at",
    "attempts",
    "loads_from",
    "loads_until",
    "loads_because",
    "llama_cpp",
)

#: The rows of the llama.cpp release histogram after the releases: a file
#: judged for releases that no known release loads, one not judged for
#: them (not a model or projector llama.cpp loads, or a shard of a split
#: set), one whose row predates the columns, one not read.
RELEASE_NONE = "none"
RELEASE_NOT_MODEL = "not a model"
RELEASE_NOT_RECORDED = "not recorded"
RELEASE_NOT_READ = "not read"

#: The `status` values, in the order the page gives them.
STATUSES = ("valid", "invalid", "unreadable")

#: The verdict columns of the architecture and file-type tables.
VERDICT_COLUMNS = (
    "files",
    *(f"{p}_{v}" for p in PROFILES for v in ("valid", "invalid")),
    "unreadable",
    "duplicates",
)

_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; color: #222; }
h1 { margin-bottom: .2em; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: .8em 0 1.6em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; vertical-align: top; }
th { background: #f3f3f3; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.s { max-width: 40em; overflow-wrap: anywhere; }
code { font-size: 90%; }
img { max-width: 100%; height: auto; display: block; margin: .5em 0; }
.muted { color: #666; }
"""


# --- reading -----------------------------------------------------------------


def part_files(output_dir: str | os.PathLike[str]) -> list[Path]:
    """The part files of a scan's output folder, in the order they are read."""
    return sorted(p for p in Path(output_dir).glob(PART_GLOB) if p.is_file())


def read_scan(output_dir: str | os.PathLike[str]) -> tuple[Any, int, int]:
    """The scan's rows, one per URL (its latest), as a `pyarrow.Table` of
    COLUMNS; with the number of rows read and of part files."""
    files = part_files(output_dir)
    if not files:
        raise FileNotFoundError(f"no {PART_GLOB} file under {os.fspath(output_dir)}")
    fields = [SCHEMA.field(c) for c in COLUMNS]
    dataset = ds.dataset([str(f) for f in files], format="parquet", schema=SCHEMA)
    table = dataset.to_table(columns=list(COLUMNS)).cast(pa.schema(fields))
    rows = table.num_rows
    # Rows of part files written before the release columns existed (their
    # nulls say nothing), in the order the files were read.
    recorded = []
    for f in files:
        meta = pq.read_metadata(f)
        recorded += [bool("loads_from" in meta.schema.names)] * meta.num_rows
    table = table.append_column("releases_recorded", pa.array(recorded, pa.bool_()))
    return latest_per_url(table), rows, len(files)


def latest_per_url(table: Any) -> Any:
    """One row per URL: the one with the greatest `attempts` (each scan of
    a URL counts it up; null, from before the column, is 1), then
    `scanned_at` (null is the oldest), then the last read."""
    n = table.num_rows
    if n == 0:
        return table
    attempts = table["attempts"] if "attempts" in table.column_names else pa.nulls(n, pa.int64())
    order = pa.table(
        {
            "url": table["url"],
            "attempts": pc.fill_null(pc.cast(attempts, pa.int64()), 1),
            "at": pc.fill_null(table["scanned_at"], ""),
            "i": pa.array(np.arange(n, dtype=np.int64)),
        }
    )
    idx = pc.sort_indices(
        order,
        sort_keys=[("url", "ascending"), ("attempts", "ascending"), ("at", "ascending"), ("i", "ascending")],
    )
    if n == 1:
        return table
    urls = pc.take(table["url"], idx)
    if isinstance(urls, pa.ChunkedArray):
        urls = urls.combine_chunks()
    # The last row of each run of one URL: where the next URL differs.
    differs = pc.fill_null(pc.not_equal(urls.slice(0, n - 1), urls.slice(1)), True)
    keep = pc.filter(idx, pa.concat_arrays([differs, pa.array([True])]))
    return table.take(pc.take(keep, pc.sort_indices(keep)))


# --- figures -----------------------------------------------------------------


def _int(value: Any) -> int:
    v = value.as_py() if hasattr(value, "as_py") else value
    return int(v) if v is not None else 0


def _flag(column: Any, want: bool) -> Any:
    """1 where a nullable boolean column is `want`, else 0."""
    hit = pc.equal(column, pa.scalar(want)) if want else pc.invert(column)
    return pc.cast(pc.fill_null(hit, False), pa.int64())


def _verdicts(table: Any) -> Any:
    """The per-row 0/1 columns summed by the verdict tables."""
    cols: dict[str, Any] = {}
    for p in PROFILES:
        cols[f"{p}_valid"] = _flag(table[f"valid_{p}"], True)
        cols[f"{p}_invalid"] = _flag(table[f"valid_{p}"], False)
    cols["unreadable"] = pc.cast(pc.fill_null(pc.equal(table["status"], "unreadable"), False), pa.int64())
    cols["duplicates"] = pc.cast(pc.is_valid(table["duplicate_of"]), pa.int64())
    return cols


def _grouped(table: Any, key: str) -> list[dict[str, Any]]:
    """Verdict counts per value of `key` (null is a group), most files
    first, then by key."""
    cols = _verdicts(table)
    t = pa.table({"key": table[key], **cols})
    agg = t.group_by("key", use_threads=False).aggregate(
        [([], "count_all"), *((c, "sum") for c in cols)]
    )
    # Columns come out as `count_all`, `NAME_sum`, then `key`.
    agg = agg.rename_columns(["files" if c == "count_all" else c.removesuffix("_sum") for c in agg.column_names])
    agg = agg.sort_by([("files", "descending"), ("key", "ascending")])
    out: list[dict[str, Any]] = agg.select(["key", *VERDICT_COLUMNS]).to_pylist()
    for row in out:
        for c in VERDICT_COLUMNS:
            row[c] = int(row[c] or 0)
    return out


def _limited(groups: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The first `limit` groups and one row summing the rest (None if none)."""
    if len(groups) <= limit:
        return groups, None
    rest = groups[limit:]
    others: dict[str, Any] = {"key": None, "groups": len(rest)}
    for c in VERDICT_COLUMNS:
        others[c] = sum(int(g[c]) for g in rest)
    return groups[:limit], others


def _pairs(table: Any, column: str) -> Any:
    """Distinct (row, element) pairs of a list column, null elements dropped."""
    col = table[column].combine_chunks() if isinstance(table[column], pa.ChunkedArray) else table[column]
    values = pc.list_flatten(col)
    parents = pc.list_parent_indices(col)
    t = pa.table({"row": parents, "value": values}).filter(pc.is_valid(values))
    return t.group_by(["row", "value"], use_threads=False).aggregate([])


def _counted(pairs: Any) -> list[dict[str, Any]]:
    """Files per element of a list column, most files first, then by value."""
    agg = pairs.group_by("value", use_threads=False).aggregate([([], "count_all")])
    agg = agg.rename_columns(["value", "files"]).sort_by([("files", "descending"), ("value", "ascending")])
    rows: list[dict[str, Any]] = agg.to_pylist()
    return rows


def _stats(column: Any) -> dict[str, Any]:
    """Total, count, mean, median, 90th percentile and maximum of the
    non-null values (quantiles are values of the column: `lower`)."""
    values = pc.drop_null(column)
    count = len(values)
    if count == 0:
        return {"count": 0, "total": 0, "mean": None, "median": None, "p90": None, "max": None}
    q = pc.quantile(values, q=[0.5, 0.9], interpolation="lower").to_pylist()
    return {
        "count": count,
        "total": pc.sum(values).as_py(),
        "mean": float(pc.mean(values).as_py()),
        "median": q[0],
        "p90": q[1],
        "max": pc.max(values).as_py(),
    }


def summarize(table: Any, rows_read: int | None = None, part_count: int = 0) -> dict[str, Any]:
    """The figures of the page, from the rows of `read_scan`."""
    n = table.num_rows
    status_counts = {s: 0 for s in STATUSES}
    status_other = 0
    for row in pc.value_counts(table["status"]).to_pylist():
        if row["values"] in status_counts:
            status_counts[row["values"]] = int(row["counts"])
        else:
            status_other += int(row["counts"])
    cols = _verdicts(table)
    profiles = {
        p: {
            "valid": _int(pc.sum(cols[f"{p}_valid"])),
            "invalid": _int(pc.sum(cols[f"{p}_invalid"])),
            "unknown": n - _int(pc.sum(cols[f"{p}_valid"])) - _int(pc.sum(cols[f"{p}_invalid"])),
        }
        for p in PROFILES
    }

    architectures, arch_others = _limited(_grouped(table, "architecture"), MAX_GROUPS)
    kinds = _grouped(table, "kind")
    file_types, ft_others = _limited(_grouped(table, "file_type"), MAX_GROUPS)
    for g in file_types:
        g["name"] = _file_type_name(g["key"])

    rule_pairs = _pairs(table, "rules")
    rules = _counted(rule_pairs)
    hash_pairs = _pairs(table, "template_hashes")
    templates = _counted(hash_pairs)
    listed_templates = templates[:MAX_TEMPLATES]
    _template_rules(table, hash_pairs, listed_templates)

    unreadable = table.filter(pc.fill_null(pc.equal(table["status"], "unreadable"), False))
    classes = (
        unreadable.group_by("error_class", use_threads=False)
        .aggregate([([], "count_all"), ("url", "first"), ("error", "first")])
        .rename_columns(["error_class", "files", "example_url", "example_error"])
        .sort_by([("files", "descending"), ("error_class", "ascending")])
        .to_pylist()
    )

    read_bytes = pc.drop_null(table["bytes"])
    positive = pc.filter(read_bytes, pc.greater(read_bytes, 0)).to_numpy(zero_copy_only=False)
    histogram = _histogram(positive)

    scanned = pc.drop_null(table["scanned_at"])
    versions = pc.unique(pc.drop_null(table["tool_version"])).to_pylist()
    releases, refused, refused_count, settings = _releases(table)

    return {
        "part_files": part_count,
        "rows": n if rows_read is None else rows_read,
        "files": n,
        "status": status_counts,
        "status_other": status_other,
        "profiles": profiles,
        "duplicates": _int(pc.sum(cols["duplicates"])),
        "distinct_sha256": len(pc.unique(pc.drop_null(table["sha256"]))),
        "bytes": _stats(table["bytes"]),
        "requests": _stats(table["requests"]),
        "seconds": _stats(table["seconds"]),
        "size": _stats(table["size"]),
        "kinds": kinds,
        "architectures": architectures,
        "architectures_others": arch_others,
        "architectures_distinct": len(pc.unique(pc.drop_null(table["architecture"]))),
        "file_types": file_types,
        "file_types_others": ft_others,
        "rules": rules[:MAX_RULES],
        "rules_distinct": len(rules),
        "templates": listed_templates,
        "templates_distinct": len(templates),
        "files_with_template": len(pc.unique(hash_pairs["row"])),
        "error_classes": classes[:MAX_ERROR_CLASSES],
        "error_classes_distinct": len(classes),
        "unreadable": unreadable.num_rows,
        "unreadable_may_pass": _count_in(unreadable["error_class"], TRANSIENT_CLASSES),
        "bytes_histogram": histogram,
        "bytes_zero": int(pc.sum(pc.cast(pc.equal(read_bytes, 0), pa.int64())).as_py() or 0),
        "bytes_zero_causes": _zero_byte_causes(table),
        "scanned_from": pc.min(scanned).as_py() if len(scanned) else None,
        "scanned_to": pc.max(scanned).as_py() if len(scanned) else None,
        "tool_versions": sorted(v for v in versions if v is not None),
        "releases": releases,
        "refused": refused,
        "refused_count": refused_count,
        "llama_cpp_settings": settings,
    }


def _known_releases() -> list[str]:
    """The llama.cpp releases this version knows, oldest first."""
    from gguf_validate import _native

    return list(_native.llama_cpp_releases())


def _releases(table: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int, list[dict[str, Any]]]:
    """Files per minimum llama.cpp release (`loads_from`): the known
    releases with files, oldest first, then names this version does not
    know (rows of another version), then RELEASE_NONE, RELEASE_NOT_MODEL,
    RELEASE_NOT_RECORDED and RELEASE_NOT_READ (always listed); the files the
    newest release refuses (`loads_until` set, at most MAX_REFUSED, by
    URL) and how many; and files per `llama_cpp` setting."""
    cols = ["url", "status", "architecture", "loads_from", "loads_until", "loads_because", "releases_recorded",
            "llama_cpp"]
    counts: dict[str, int] = {}
    extra = {RELEASE_NONE: 0, RELEASE_NOT_MODEL: 0, RELEASE_NOT_RECORDED: 0, RELEASE_NOT_READ: 0}
    settings: dict[str | None, int] = {}
    refused: list[dict[str, Any]] = []
    for r in table.select(cols).to_pylist():
        if r["status"] == "unreadable":
            extra[RELEASE_NOT_READ] += 1
            continue
        settings[r["llama_cpp"]] = settings.get(r["llama_cpp"], 0) + 1
        if r["loads_from"] is not None:
            counts[r["loads_from"]] = counts.get(r["loads_from"], 0) + 1
        elif r["loads_because"] is not None:
            extra[RELEASE_NONE] += 1
        elif r["releases_recorded"] is False:
            extra[RELEASE_NOT_RECORDED] += 1
        else:
            extra[RELEASE_NOT_MODEL] += 1
        if r["loads_until"] is not None:
            refused.append({k: r[k] for k in ("url", "architecture", "loads_from", "loads_until")})
    known = _known_releases()
    order = [k for k in known if k in counts] + sorted(k for k in counts if k not in known)
    rows = [{"release": k, "files": counts[k], "known": k in known} for k in order[:MAX_RELEASES]]
    rows += [{"release": k, "files": n, "known": False, "group": True} for k, n in extra.items()]
    refused.sort(key=lambda r: r["url"])
    by_setting = [{"llama_cpp": k, "files": n} for k, n in sorted(settings.items(), key=lambda kv: (-kv[1], kv[0] or ""))]
    return rows, refused[:MAX_REFUSED], len(refused), by_setting


def _count_in(column: Any, values: Iterable[str]) -> int:
    """How many of a column's values are among `values`."""
    inside = pc.is_in(column, value_set=pa.array(sorted(values), pa.string()))
    return int(pc.sum(pc.cast(inside, pa.int64())).as_py() or 0)


def _zero_byte_causes(table: Any) -> list[dict[str, Any]]:
    """Why the files that fetched no byte fetched none, from their rows: a
    duplicate (its SHA-256 seen before: the HEAD only), an empty file, or
    an unreadable one by error class; most files first."""
    zero = table.filter(pc.fill_null(pc.equal(table["bytes"], 0), False))
    causes: dict[str, int] = {}
    for row in zero.select(["duplicate_of", "size", "status", "error_class"]).to_pylist():
        if row["duplicate_of"] is not None:
            cause = "duplicate (SHA-256 seen before: the HEAD only)"
        elif row["status"] == "unreadable":
            cause = f"unreadable: {row['error_class'] or 'unknown'}"
        elif row["size"] == 0:
            cause = "empty file"
        else:
            cause = f"status {row['status']}"
        causes[cause] = causes.get(cause, 0) + 1
    return [{"cause": c, "files": n} for c, n in sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))]


def _file_type_name(value: Any) -> str | None:
    if value is None:
        return None
    return FILE_TYPE_NAMES.get(int(value), f"unknown ({int(value)})")


def _template_rules(table: Any, hash_pairs: Any, listed: list[dict[str, Any]]) -> None:
    """Adds to each listed template its `rules`: the template rules found in
    the files carrying it, with how many of those files each is in."""
    for t in listed:
        t["rules"] = []
    if not listed:
        return
    wanted = hash_pairs.filter(pc.is_in(hash_pairs["value"], value_set=pa.array([t["value"] for t in listed])))
    rule_pairs = _pairs(table, "template_rules").rename_columns(["row", "rule"])
    joined = wanted.join(rule_pairs, keys="row", join_type="inner")
    agg = (
        joined.group_by(["value", "rule"], use_threads=False)
        .aggregate([([], "count_all")])
        .rename_columns(["value", "rule", "files"])
        .sort_by([("value", "ascending"), ("files", "descending"), ("rule", "ascending")])
    )
    by_hash: dict[str, list[dict[str, Any]]] = {}
    for row in agg.to_pylist():
        by_hash.setdefault(row["value"], []).append({"rule": row["rule"], "files": int(row["files"])})
    for t in listed:
        t["rules"] = by_hash.get(t["value"], [])


def _histogram(values: Any) -> dict[str, Any]:
    """Counts of positive byte counts in logarithmic bins."""
    if len(values) == 0:
        return {"edges": [], "counts": []}
    lo, hi = float(values.min()), float(values.max())
    if lo == hi:
        edges = np.array([lo * 0.9, hi * 1.1])
    else:
        edges = np.geomspace(lo, hi, HISTOGRAM_BINS + 1)
    counts, edges = np.histogram(values, bins=edges)
    return {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]}


# --- charts ------------------------------------------------------------------

_PRINTABLE = re.compile(r"[^\x20-\x7e]")


#: How a group whose key the file did not give (or that was not read) is
#: shown, in the charts and the tables alike.
MISSING_KEY = "(none)"


def _label(value: Any, missing: str = MISSING_KEY) -> str:
    """A chart label: printable ASCII, at most MAX_LABEL characters, every
    `$` escaped (matplotlib never reads it as mathtext)."""
    if value is None:
        return missing
    text = _PRINTABLE.sub("?", str(value))
    text = text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "~"
    return text.replace("$", r"\$")


def _png(fig: Figure) -> str:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _stacked(groups: Sequence[dict[str, Any]], title: str, label_key: str) -> str:
    shown = list(groups[:MAX_BARS])[::-1]
    labels = [_label(g.get(label_key)) for g in shown]
    valid = np.array([g["strict_valid"] for g in shown], dtype=float)
    invalid = np.array([g["strict_invalid"] for g in shown], dtype=float)
    unreadable = np.array([g["unreadable"] for g in shown], dtype=float)
    fig = Figure(figsize=(9, 0.9 + 0.28 * max(len(shown), 3)))
    ax = fig.add_subplot()
    y = np.arange(len(shown))
    ax.barh(y, valid, color="#4c9a52", label="valid (strict)")
    ax.barh(y, invalid, left=valid, color="#d0533f", label="invalid (strict)")
    ax.barh(y, unreadable, left=valid + invalid, color="#9a9a9a", label="unreadable")
    ax.set_yticks(y, labels=labels)
    ax.set_xlabel("files")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize="small")
    return _png(fig)


def _bars(labels: list[str], counts: list[int], title: str, xlabel: str, color: str | list[str]) -> str:
    """Horizontal bars, largest on top; `color` one for all, or one a bar."""
    colors = color[:MAX_BARS][::-1] if isinstance(color, list) else color
    labels, counts = labels[:MAX_BARS][::-1], counts[:MAX_BARS][::-1]
    fig = Figure(figsize=(9, 0.9 + 0.28 * max(len(labels), 3)))
    ax = fig.add_subplot()
    y = np.arange(len(labels))
    ax.barh(y, counts, color=colors)
    ax.set_yticks(y, labels=labels)
    ax.set_xlabel(xlabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title)
    if isinstance(color, list):
        seen = dict.fromkeys(color)
        handles = [Patch(color=SEVERITY_COLORS[lv], label=lv) for lv in SEVERITY_COLORS if SEVERITY_COLORS[lv] in seen]
        if handles:
            ax.legend(handles=handles, loc="lower right", fontsize="small", title="level under strict")
    return _png(fig)


def _release_chart(releases: list[dict[str, Any]]) -> str:
    """Files per minimum llama.cpp release, oldest on the left, then the
    groups (none, not a model, ...) in grey."""
    labels = [_label(r["release"]) for r in releases]
    counts = [r["files"] for r in releases]
    colors = ["#9a9a9a" if r.get("group") else "#4a78b0" for r in releases]
    fig = Figure(figsize=(9, 4))
    ax = fig.add_subplot()
    x = np.arange(len(labels))
    ax.bar(x, counts, color=colors)
    ax.set_xticks(x, labels=labels, rotation=60, ha="right")
    ax.set_ylabel("files")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Files per minimum llama.cpp release (loads_from)")
    return _png(fig)


def _histogram_chart(histogram: dict[str, Any], stats: dict[str, Any]) -> str:
    fig = Figure(figsize=(9, 4))
    ax = fig.add_subplot()
    edges = np.array(histogram["edges"])
    counts = np.array(histogram["counts"])
    ax.bar(edges[:-1], counts, width=np.diff(edges), align="edge", color="#4a78b0", edgecolor="white")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: _size(x)))
    for q, style in (("median", "-"), ("p90", "--")):
        if stats[q]:
            ax.axvline(stats[q], color="#222", linestyle=style, linewidth=1, label=f"{q} {_size(stats[q])}")
    ax.set_xlabel("bytes fetched per file (log scale; files that fetched none left out)")
    ax.set_ylabel("files")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Bytes per file")
    ax.legend(fontsize="small")
    return _png(fig)


#: A rule's bar, by its level under the strict profile.
SEVERITY_COLORS = {"error": "#d0533f", "warning": "#e0a030", "info": "#4a78b0"}
#: A rule the catalogue does not have (a row of another version).
UNKNOWN_LEVEL_COLOR = "#9a9a9a"


def _strict_levels() -> dict[str, str]:
    """Each rule's level under strict, from the catalogue of this version."""
    import json

    from gguf_validate import _native

    return {r["id"]: r["strict"] for r in json.loads(_native.rules())}


def _charts(fig: dict[str, Any]) -> dict[str, str]:
    """The base64 PNG of each chart with data, by section id."""
    charts: dict[str, str] = {}
    with rc_context({"text.usetex": False, "font.size": 9}):
        if fig["architectures"]:
            charts["architectures"] = _stacked(fig["architectures"], "Files by architecture (strict verdicts)", "key")
        if fig["file_types"]:
            groups = [{**g, "label": g["name"]} for g in fig["file_types"]]
            charts["file-types"] = _stacked(groups, "Files by file type (strict verdicts)", "label")
        if fig["rules"]:
            levels = _strict_levels()
            charts["rules"] = _bars(
                [_label(r["value"]) for r in fig["rules"]], [r["files"] for r in fig["rules"]],
                "Most frequent rules (strict)", "files",
                [SEVERITY_COLORS.get(levels.get(r["value"], ""), UNKNOWN_LEVEL_COLOR) for r in fig["rules"]],
            )
        if any(r["files"] for r in fig["releases"]):
            charts["llama-cpp"] = _release_chart(fig["releases"])
        if fig["bytes_histogram"]["counts"]:
            charts["bytes"] = _histogram_chart(fig["bytes_histogram"], fig["bytes"])
        if fig["error_classes"]:
            charts["unreadable"] = _bars(
                [_label(e["error_class"]) for e in fig["error_classes"]], [e["files"] for e in fig["error_classes"]],
                "Unreadable files by error class", "files", "#9a9a9a",
            )
    return charts


# --- the page ----------------------------------------------------------------


def _e(value: Any) -> str:
    """Text or an attribute value from the data, as HTML: escaped, a CR kept
    as a reference (a parser would turn it into LF), NUL as U+FFFD (what a
    parser makes of it: HTML cannot carry it)."""
    return html.escape(str(value), quote=True).replace("\r", "&#13;").replace("\x00", "\ufffd")


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"  # pragma: no cover


def _shown(value: Any) -> str:
    """How a number reads in a cell (`data-value` holds it exactly)."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.1f}"
    return f"{value:,}"


def _num(value: Any, *, id: str | None = None, col: str | None = None) -> str:
    attrs = ' class="n"'
    if id is not None:
        attrs += f' id="{_e(id)}"'
    if col is not None:
        attrs += f' data-col="{_e(col)}"'
    raw = "" if value is None else repr(value) if isinstance(value, float) else str(value)
    return f'<td{attrs} data-value="{_e(raw)}">{_e(_shown(value))}</td>'


#: Characters a table cell shows as `<U+XXXX>`: controls and the bidi
#: overrides and isolates (which would reorder what is shown around them).
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _visible(s: str) -> str:
    return _INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", s)


def _count(n: int, noun: str, plural: str | None = None) -> str:
    """`1 file`, `2 files`, `1,234 files`."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def _text(value: Any, missing: str = "(none)", limit: int = MAX_EXAMPLE) -> str:
    """A cell of text from the data: at most `limit` characters, invisible
    characters made visible, escaped (attributes keep the exact value)."""
    if value is None:
        return f'<td class="s muted">{_e(missing)}</td>'
    s = str(value)
    if len(s) > limit:
        s = s[:limit] + "…"
    s = _visible(s)
    return f'<td class="s"><code>{_e(s)}</code></td>'


def _img(charts: dict[str, str], key: str, alt: str) -> str:
    if key not in charts:
        return '<p class="muted">Nothing to plot.</p>'
    return f'<img id="chart-{key}" alt="{_e(alt)}" src="data:image/png;base64,{charts[key]}">'


def _verdict_header(first: Iterable[str]) -> str:
    cells = "".join(f"<th>{_e(c)}</th>" for c in first)
    cells += "<th>files</th>"
    cells += "".join(f"<th>{p} valid</th><th>{p} invalid</th>" for p in PROFILES)
    cells += "<th>unreadable</th><th>duplicates</th>"
    return f"<tr>{cells}</tr>"


def _verdict_cells(row: dict[str, Any]) -> str:
    return "".join(_num(row[c], col=c) for c in VERDICT_COLUMNS)


def _group_table(
    table: str, attr: str, head: list[str], groups: list[dict[str, Any]], others: dict[str, Any] | None,
    key_cells: Any, key_attr: Any = str,
) -> str:
    """Verdicts per group (architecture, file type): a row per group keyed
    by `data-{attr}` (`data-{attr}-missing` for a file that did not say),
    then one row for the groups left out."""
    out = [f'<table id="{table}">', _verdict_header(head)]
    blanks = "<td></td>" * (len(head) - 1)
    for g in groups:
        if g["key"] is None:
            out.append(f'<tr data-{attr}-missing="">{_text(None, MISSING_KEY)}{blanks}{_verdict_cells(g)}</tr>')
        else:
            out.append(f"<tr data-{attr}=\"{_e(key_attr(g['key']))}\">{key_cells(g)}{_verdict_cells(g)}</tr>")
    if others:
        out.append(
            f'<tr data-{attr}-others="{others["groups"]}"><td class="muted" colspan="{len(head)}">'
            f'{others["groups"]:,} others</td>{_verdict_cells(others)}</tr>'
        )
    out.append("</table>")
    return "\n".join(out)


def _kind_table(fig: dict[str, Any]) -> str:
    return _group_table("kind-table", "kind", ["kind"], fig["kinds"], None, lambda g: _text(g["key"]))


def _architecture_table(fig: dict[str, Any]) -> str:
    return _group_table(
        "architecture-table", "architecture", ["architecture"], fig["architectures"], fig["architectures_others"],
        lambda g: _text(g["key"]),
    )


def _file_type_table(fig: dict[str, Any]) -> str:
    return _group_table(
        "file-type-table", "file-type", ["file_type", "name"], fig["file_types"], fig["file_types_others"],
        lambda g: f"{_num(int(g['key']), col='file_type')}<td><code>{_e(g['name'])}</code></td>",
        key_attr=lambda k: str(int(k)),
    )


def _totals(fig: dict[str, Any]) -> str:
    rows = [
        ("total-rows", "rows read", fig["rows"]),
        ("total-files", "files (distinct URLs)", fig["files"]),
        *((f"status-{s}", f"status {s}", fig["status"][s]) for s in STATUSES),
        ("status-other", "status other or missing", fig["status_other"]),
        ("unreadable-may-pass", "unreadable, a failure that may pass (a rerun retries it)", fig["unreadable_may_pass"]),
        ("duplicates", "duplicates (SHA-256 seen before: HEAD only)", fig["duplicates"]),
        ("distinct-sha256", "distinct SHA-256", fig["distinct_sha256"]),
        ("distinct-architectures", "distinct architectures", fig["architectures_distinct"]),
        ("distinct-rules", "distinct rules", fig["rules_distinct"]),
        ("distinct-templates", "distinct chat templates", fig["templates_distinct"]),
        ("files-with-template", "files with a chat template", fig["files_with_template"]),
    ]
    out = ['<table id="totals-table">']
    out += [f"<tr><th>{_e(label)}</th>{_num(v, id=i)}</tr>" for i, label, v in rows]
    out.append("</table>")

    out.append('<h3 id="profiles">Verdicts per profile</h3>')
    out.append(
        '<table id="profile-table"><tr><th>profile</th><th>valid</th><th>invalid</th>'
        "<th>no verdict (unreadable)</th></tr>"
    )
    for p in PROFILES:
        v = fig["profiles"][p]
        out.append(
            f'<tr data-profile="{p}"><th>{p}</th>'
            f'{_num(v["valid"], id=f"profile-{p}-valid")}{_num(v["invalid"], id=f"profile-{p}-invalid")}'
            f'{_num(v["unknown"], id=f"profile-{p}-unknown")}</tr>'
        )
    out.append("</table>")

    out.append('<h3 id="cost">What reading cost</h3>')
    out.append(
        '<table id="cost-table"><tr><th></th><th>files with a value</th><th>total</th><th>per file (mean)</th>'
        "<th>median</th><th>90th percentile</th><th>max</th></tr>"
    )
    for key, label in (
        ("bytes", "bytes fetched"),
        ("requests", "HTTP requests (HEAD included)"),
        ("seconds", "seconds"),
        ("size", "file size (as served)"),
    ):
        s = fig[key]
        cells = "".join(_num(s[c], id=f"{key}-{c}") for c in ("count", "total", "mean", "median", "p90", "max"))
        out.append(f'<tr data-cost="{key}"><th>{_e(label)}</th>{cells}</tr>')
    out.append("</table>")
    return "\n".join(out)


def _zero_causes_text(fig: dict[str, Any]) -> str:
    """`: 3 duplicates ..., 1 empty file.` from the rows, or `.`."""
    causes = fig.get("bytes_zero_causes") or []
    if not causes:
        return "."
    parts = [
        f'<span data-zero-cause="{_e(c["cause"])}" data-value="{c["files"]}">{_e(c["cause"])}: {c["files"]:,}</span>'
        for c in causes
    ]
    return ": " + ", ".join(parts) + "."


def _rules_table(fig: dict[str, Any]) -> str:
    out = ['<table id="rule-table"><tr><th>rule</th><th>files</th></tr>']
    for r in fig["rules"]:
        out.append(f'<tr data-rule="{_e(r["value"])}">{_text(r["value"])}{_num(r["files"], col="files")}</tr>')
    out.append("</table>")
    return "\n".join(out)


def _templates_table(fig: dict[str, Any]) -> str:
    out = [
        '<table id="template-table"><tr><th>template SHA-256</th><th>files</th>'
        "<th>template rules in those files (files)</th></tr>"
    ]
    for t in fig["templates"]:
        rules = t["rules"]
        spans = [
            f'<span data-template-rule="{_e(r["rule"])}" data-files="{r["files"]}">'
            f'<code>{_e(_visible(r["rule"]))}</code> ({r["files"]:,})</span>'
            for r in rules[:MAX_TEMPLATE_RULES]
        ]
        more = len(rules) - MAX_TEMPLATE_RULES
        if more > 0:
            spans.append(f'<span class="muted" data-more-rules="{more}">and {more:,} more</span>')
        cell = ", ".join(spans) if spans else '<span class="muted">none</span>'
        out.append(
            f'<tr data-template="{_e(t["value"])}">{_text(t["value"], limit=MAX_LABEL * 2)}'
            f'{_num(t["files"], col="files")}<td class="s">{cell}</td></tr>'
        )
    out.append("</table>")
    return "\n".join(out)


def _errors_table(fig: dict[str, Any]) -> str:
    out = ['<table id="error-table"><tr><th>error class</th><th>files</th><th>example URL</th><th>its error</th></tr>']
    for c in fig["error_classes"]:
        key = c["error_class"]
        attr = 'data-error-class-missing=""' if key is None else f'data-error-class="{_e(key)}"'
        out.append(
            f"<tr {attr}>{_text(key)}{_num(c['files'], col='files')}"
            f"{_text(c['example_url'])}{_text(c['example_error'])}</tr>"
        )
    out.append("</table>")
    return "\n".join(out)


def _releases_table(fig: dict[str, Any]) -> str:
    """Files per minimum release: a row per release keyed by
    `data-release` (`data-release-group` for none, not a model, ...)."""
    out = ['<table id="release-table"><tr><th>loads from llama.cpp release</th><th>files</th></tr>']
    for r in fig["releases"]:
        attr = "data-release-group" if r.get("group") else "data-release"
        label = _text(r["release"]) if not r.get("group") else f'<td class="muted">{_e(r["release"])}</td>'
        if not r.get("group") and not r["known"]:
            label = label.replace("</td>", ' <span class="muted">(not a release this version knows)</span></td>')
        out.append(f'<tr {attr}="{_e(r["release"])}">{label}{_num(r["files"], col="files")}</tr>')
    out.append("</table>")
    return "\n".join(out)


def _refused_table(fig: dict[str, Any]) -> str:
    """The files the newest release refuses: URL, architecture, the
    oldest and the newest release that load it."""
    if not fig["refused"]:
        return '<p class="muted" id="refused-none">The newest release refuses no file.</p>'
    out = ['<table id="refused-table"><tr><th>URL</th><th>architecture</th><th>loads from</th><th>loads until</th></tr>']
    for r in fig["refused"]:
        out.append(
            f'<tr data-refused="{_e(r["url"])}">{_text(r["url"])}{_text(r["architecture"])}'
            f'{_text(r["loads_from"])}{_text(r["loads_until"])}</tr>'
        )
    out.append("</table>")
    return "\n".join(out)


def _settings_text(fig: dict[str, Any]) -> str:
    """Which `--llama-cpp` settings the verdicts were judged under."""
    parts = []
    for st in fig["llama_cpp_settings"]:
        name = "none (the pinned tree alone)" if st["llama_cpp"] is None else f"<code>{_e(_visible(st['llama_cpp']))}</code>"
        key = "" if st["llama_cpp"] is None else _e(st["llama_cpp"])
        parts.append(
            f'<span data-llama-cpp-setting="{key}" data-value="{st["files"]}">{name}: {_count(st["files"], "file")}</span>'
        )
    return ", ".join(parts) if parts else "none"


def _listed(shown: int, total: int) -> str:
    return f"the {shown:,} most frequent" if shown < total else "all"


def render(fig: dict[str, Any], charts: dict[str, str], source: str) -> str:
    """The page's HTML."""
    versions = ", ".join(fig["tool_versions"]) or "an unknown version"
    span = (
        f"scanned from {_e(_visible(fig['scanned_from']))} to {_e(_visible(fig['scanned_to']))}"
        if fig["scanned_from"] is not None
        else "scan times unknown"
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>GGUF hub scan: {_count(fig['files'], 'file')}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>GGUF hub scan: {_count(fig['files'], 'file')}</h1>",
        f'<p id="provenance">{_count(fig["rows"], "row")} in {_count(fig["part_files"], "part file")} of <code>{_e(_visible(source))}</code>, '
        f"{span}, by gguf-validate {_e(_visible(versions))}. A URL read more than once counts once (its latest row). "
        "Rules and findings are those of the <code>strict</code> profile.</p>",
        '<nav><a href="#totals">Totals</a><a href="#kinds">Kinds</a><a href="#architectures">Architectures</a><a href="#file-types">File types</a>'
        '<a href="#rules">Rules</a><a href="#templates">Chat templates</a><a href="#llama-cpp">llama.cpp releases</a>'
        '<a href="#bytes">Bytes per file</a>'
        '<a href="#unreadable">Unreadable</a></nav>',
        '<section><h2 id="totals">Totals</h2>',
        _totals(fig),
        "</section>",
        '<section><h2 id="kinds">Verdicts by kind of file</h2>',
        "<p>What each file's loader reads it as: a model, a LoRA <code>adapter</code>, a multimodal "
        "<code>projector</code>, an importance matrix (<code>imatrix</code>), a <code>control vector</code> "
        "or a <code>diffusion</code> model (judged for stable-diffusion.cpp) "
        "(none: not read, or scanned before kinds were recorded).</p>",
        _kind_table(fig),
        "</section>",
        '<section><h2 id="architectures">Verdicts by architecture</h2>',
        f"<p>From <code>general.architecture</code>; the {MAX_GROUPS} largest, the rest in one row.</p>",
        _img(charts, "architectures", "files by architecture"),
        _architecture_table(fig),
        "</section>",
        '<section><h2 id="file-types">Verdicts by file type</h2>',
        "<p>From <code>general.file_type</code>, named as in gguf-py's <code>LlamaFileType</code> "
        "(llama.cpp's <code>llama_ftype</code>).</p>",
        _img(charts, "file-types", "files by file type"),
        _file_type_table(fig),
        "</section>",
        '<section><h2 id="rules">Most frequent rules</h2>',
        f"<p>Files in which each rule fired: {_listed(len(fig['rules']), fig['rules_distinct'])} of "
        f'<span id="rules-distinct" data-value="{fig["rules_distinct"]}">{fig["rules_distinct"]:,}</span> rules.</p>',
        _img(charts, "rules", "most frequent rules"),
        _rules_table(fig),
        "</section>",
        '<section><h2 id="templates">Chat templates</h2>',
        f"<p>Files per chat template (SHA-256 of its text): {_listed(len(fig['templates']), fig['templates_distinct'])} "
        f'of <span id="templates-distinct" data-value="{fig["templates_distinct"]}">{fig["templates_distinct"]:,}</span>, '
        "with the template rules that fired in the files carrying it.</p>",
        _templates_table(fig),
        "</section>",
        '<section><h2 id="llama-cpp">Files per minimum llama.cpp release</h2>',
        "<p>The oldest llama.cpp release from which every newer one loads the file (<code>loads_from</code>: what "
        "each release knows of its architecture, tokenizer, pre-tokenizer, projector type and tensor types), "
        f"oldest first; <em>{RELEASE_NONE}</em>: no known release loads it; <em>{RELEASE_NOT_MODEL}</em>: not judged "
        "for releases (not a model or projector llama.cpp loads, or a shard of a split set); "
        f"<em>{RELEASE_NOT_RECORDED}</em>: a row written before the column; <em>{RELEASE_NOT_READ}</em>: unreadable. "
        f"Verdicts judged against <code>--llama-cpp</code>: {_settings_text(fig)}.</p>",
        _img(charts, "llama-cpp", "files per minimum llama.cpp release"),
        _releases_table(fig),
        '<h3 id="refused">Files the newest release refuses</h3>',
        f'<p><span id="refused-files" data-value="{fig["refused_count"]}">{_count(fig["refused_count"], "file")}</span> '
        "loaded by an older release and refused by a newer one (<code>loads_until</code>: the newest that loads it)"
        f"{'; the first ' + format(len(fig['refused']), ',') + ' by URL' if len(fig['refused']) < fig['refused_count'] else ''}.</p>",
        _refused_table(fig),
        "</section>",
        '<section><h2 id="bytes">Bytes per file</h2>',
        f'<p><span id="bytes-zero" data-value="{fig["bytes_zero"]}">{_count(fig["bytes_zero"], "file")}</span> '
        f"fetched no byte{_zero_causes_text(fig)}</p>",
        _img(charts, "bytes", "histogram of bytes per file"),
        "</section>",
        '<section><h2 id="unreadable">Unreadable files</h2>',
        f'<p><span id="unreadable-files" data-value="{fig["unreadable"]}">{fig["unreadable"]:,}</span> files could '
        "not be read, by error class.</p>",
        _img(charts, "unreadable", "unreadable files by error class"),
        _errors_table(fig),
        "</section>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def write_report(output_dir: str | os.PathLike[str], page_path: str | os.PathLike[str]) -> dict[str, Any]:
    """Writes the report page of the scan in `output_dir` to `page_path`
    and returns the figures it shows (with `images`: the charts' section
    ids)."""
    table, rows, parts = read_scan(output_dir)
    fig = summarize(table, rows, parts)
    charts = _charts(fig)
    fig["images"] = sorted(charts)
    page = Path(page_path)
    tmp = page.with_name(page.name + ".tmp")
    tmp.write_text(render(fig, charts, os.path.basename(os.path.abspath(output_dir))), encoding="utf-8")
    os.replace(tmp, page)
    return fig


def main(argv: list[str]) -> int:
    """`python -m gguf_validate.scan report DIR --output PAGE.html`."""
    parser = argparse.ArgumentParser(
        prog="python -m gguf_validate.scan report",
        description="Write the HTML report of a scan's Parquet folder.",
    )
    parser.add_argument("dir", metavar="DIR", help="the scan's output folder (its part-*.parquet files)")
    parser.add_argument("--output", "-o", metavar="PAGE", required=True, help="the HTML page to write")
    args = parser.parse_args(argv)
    try:
        fig = write_report(args.dir, args.output)
    except (FileNotFoundError, pa.ArrowException) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{args.output}: {_count(fig['files'], 'file')}, {_count(len(fig['images']), 'chart')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
