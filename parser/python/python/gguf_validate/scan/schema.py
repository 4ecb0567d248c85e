"""The table a scan writes: one row per source file (Parquet).

This is the contract between the scan (`gguf_validate.scan`), its report
(`gguf_validate.scan.report`) and whoever queries the output folder with
DuckDB or pandas. Columns are only ever added, never renamed.
"""

from __future__ import annotations

import pyarrow as pa  # type: ignore[import-untyped]

#: The profiles every file is judged under (one read, three verdicts).
PROFILES = ("strict", "spec", "ggml")

#: Error classes of a failure that may pass (a timeout, a rate limit, the
#: network, a server's 5xx, a read that broke off, a file that changed
#: while it was read): a rerun scans such a row's URL again. The others
#: (not_found, http_status, protocol, refused) are kept unless a rerun is
#: asked to retry them too (`--retry-failed`).
TRANSIENT_CLASSES = frozenset({"timeout", "rate_limited", "network", "server_error", "read", "changed"})

#: How many findings (under the scan's profile) a row keeps in `findings`.
MAX_FINDINGS = 10

SCHEMA = pa.schema(
    [
        # Where the file is: the URL as listed (any query dropped), the hub
        # repository (`org/name`) when the URL is a hub's, and the revision
        # the hub resolved it to (`X-Repo-Commit`).
        pa.field("url", pa.string(), nullable=False),
        pa.field("repo", pa.string()),
        pa.field("revision", pa.string()),
        # The LFS SHA-256 of the whole file (`X-Linked-Etag`), when given.
        pa.field("sha256", pa.string()),
        # The file's size in bytes, as the server gave it.
        pa.field("size", pa.uint64()),
        # "valid", "invalid" (under the scan's profile) or "unreadable" (the
        # file could not be read: see error_class); the verdict under each
        # profile.
        pa.field("status", pa.string(), nullable=False),
        pa.field("valid_strict", pa.bool_()),
        pa.field("valid_spec", pa.bool_()),
        pa.field("valid_ggml", pa.bool_()),
        # Under the scan's profile (the `profile` column; `strict` unless asked
        # otherwise): counts, the distinct rule ids that fired (sorted),
        # and the first MAX_FINDINGS findings as JSON (a list of objects with
        # rule, severity, offset, length, path, message).
        pa.field("errors", pa.int32()),
        pa.field("warnings", pa.int32()),
        pa.field("rules", pa.list_(pa.string())),
        pa.field("findings", pa.string()),
        # What the metadata says (unsigned, as the file declares them: a
        # hostile file may declare up to 2^64 - 1).
        pa.field("format", pa.string()),
        pa.field("architecture", pa.string()),
        pa.field("parameters", pa.uint64()),
        pa.field("file_type", pa.uint32()),
        pa.field("tensor_count", pa.uint64()),
        # The SHA-256 of each chat template (`tokenizer.chat_template` and
        # `tokenizer.chat_template.NAME`), in file order, and the template
        # rules that fired (rule ids starting with `template-`).
        pa.field("template_hashes", pa.list_(pa.string())),
        pa.field("template_rules", pa.list_(pa.string())),
        # What reading cost: response bytes and HTTP requests (the HEAD
        # included), and wall seconds for this file.
        pa.field("bytes", pa.int64()),
        pa.field("requests", pa.int32()),
        pa.field("seconds", pa.float64()),
        # When unreadable: a stable class (not_found, http_status,
        # server_error, rate_limited, timeout, network, protocol, refused,
        # read, changed) and the message (no credentials, no query strings).
        pa.field("error_class", pa.string()),
        pa.field("error", pa.string()),
        # The how-manyth time this URL was scanned (a rerun retries the
        # transient failures, TRANSIENT_CLASSES, and counts up).
        pa.field("attempts", pa.int32()),
        # A file whose SHA-256 was validated already (in this run or an
        # earlier one): the URL of the row whose verdict it copies; its
        # bytes are 0 (only the HEAD was sent).
        pa.field("duplicate_of", pa.string()),
        # The tool version and the UTC time of the row.
        pa.field("tool_version", pa.string()),
        pa.field("scanned_at", pa.string()),
        # The profile `status`, counts, rules and findings are under (the
        # scan's `--profile`; `strict` unless asked otherwise).
        pa.field("profile", pa.string()),
        # Which llama.cpp releases load the file (its report's
        # `summary.llama_cpp`): the oldest release from which every newer
        # one loads it (null: no known release loads it), the newest that
        # loads it where a newer one refuses it (null: the newest loads
        # it), and why `loads_from` is that release (each thing the
        # release before did not know, as `architecture `X` since R`).
        # All three are null when the file was not judged for releases
        # (not a model or projector llama.cpp loads, a shard of a split
        # set, or not read): `loads_because` null tells that apart from a
        # file no known release loads (`loads_because` a list).
        pa.field("loads_from", pa.string()),
        pa.field("loads_until", pa.string()),
        pa.field("loads_because", pa.list_(pa.string())),
        # The scan's `--llama-cpp` setting (`R` or `R..`) the verdicts were
        # judged under (`strict` refuses a file a release of it refuses:
        # `llama-cpp-release`); null without one (the pinned tree alone).
        pa.field("llama_cpp", pa.string()),
        # What kind of file its loader reads it as (the layer its report
        # examined): `model`, `adapter` (LoRA), `projector` (multimodal),
        # `imatrix` (importance matrix) or `control vector`; null when not
        # read, or scanned before the column existed.
        pa.field("kind", pa.string()),
    ]
)
