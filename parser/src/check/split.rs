//! Rules on one shard of a split set (`gguf-split`): its index inside the
//! set. The set as a whole (siblings, tensor counts) needs the other shards.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::parse::GgufFile;
use crate::report::Sink;
use crate::rules::RuleId;

use super::kv::kv_path;

/// Runs the `split-*` rules that one shard can answer.
pub(crate) fn check(file: &GgufFile<'_>, sink: &mut Sink<'_>) {
    let (Some(no), Some(count)) = (file.get("split.no"), file.get("split.count")) else { return };
    let (Some(n), Some(c)) = (no.value.as_u64(), count.value.as_u64()) else { return };
    if n >= c {
        sink.emit(
            RuleId::SplitIndex,
            no.value_offset(),
            || kv_path(no),
            || format!("split.no is {n} but split.count is {c}: shards are numbered 0..{c}"),
        );
    }
}
