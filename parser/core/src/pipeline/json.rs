//! The JSON form of a run's entries: one object per file (its report, or
//! why it could not be read) and one per split set. The CLI's `json` and
//! `jsonl` formats and the Python bindings' `to_json()` all build them
//! here, so the same file gives the same JSON everywhere.

use serde::Serialize;

use super::Outcome;
use crate::data_scan::DataReport;
use crate::report::Report;
use crate::rules::Profile;
use crate::split_set::SetReport;

/// Version of the JSON report's shape (`--format json` and `jsonl`):
/// 2 added `schema_version`, `jsonl`, and the capped `data.per_tensor`;
/// 3 added split sets: an entry with `"kind": "split-set"` after a set's
/// shards (in `files`, or as a line of its own), and `split_set` on each
/// shard's entry naming it. File entries are otherwise unchanged.
/// 4 added `totals` at the end of the document (files valid, invalid,
/// unreadable, split sets).
/// 5 added URLs: `summary.remote` (the URL without its query, bytes
/// fetched, requests, whether ranges were honoured, revision, ETag) on the
/// entry of a file read over HTTP.
pub const JSON_SCHEMA_VERSION: u32 = 7;

#[derive(Serialize)]
struct JsonFile<'a> {
    path: &'a str,
    /// The split set the file is a shard of (its entry follows the shards).
    #[serde(skip_serializing_if = "Option::is_none")]
    split_set: Option<&'a str>,
    #[serde(flatten)]
    report: &'a Report,
    /// Only with a data scan: per-tensor counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a DataReport>,
}

#[derive(Serialize)]
struct JsonSet<'a> {
    /// `NAME-*-of-0000n.gguf`.
    path: &'a str,
    /// Always `split-set` (file entries have no `kind`).
    kind: &'static str,
    #[serde(flatten)]
    report: &'a SetReport,
}

#[derive(Serialize)]
struct JsonUnreadable<'a> {
    path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    split_set: Option<&'a str>,
    valid: bool,
    profile: Profile,
    error: &'a str,
}

/// A file's entry: `path` as reports name it (`Input::json_name`), the
/// profile of the run (an unreadable file has no report to carry it), and
/// the split set it is a shard of.
pub fn file(path: &str, outcome: &Outcome, profile: Profile, split_set: Option<&str>) -> serde_json::Value {
    let v = match outcome {
        Outcome::Report(r, data) => {
            serde_json::to_value(JsonFile { path, split_set, report: r, data: data.as_deref() })
        }
        Outcome::Unreadable(e) => {
            serde_json::to_value(JsonUnreadable { path, split_set, valid: false, profile, error: e })
        }
    };
    // Serialising plain structs of strings, numbers and maps with string
    // keys cannot fail; an error would still be shown, not lost.
    v.unwrap_or_else(|e| serde_json::json!({ "path": path, "valid": false, "error": e.to_string() }))
}

/// A split set's entry (after its shards').
pub fn set(set: &SetReport) -> serde_json::Value {
    serde_json::to_value(JsonSet { path: &set.name, kind: "split-set", report: set })
        .unwrap_or_else(|e| serde_json::json!({ "path": set.name, "kind": "split-set", "error": e.to_string() }))
}
