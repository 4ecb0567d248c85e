//! Importance matrices (`general.type` = `imatrix`): what
//! `common_imatrix_load` (common/imatrix-loader.cpp) and `load_imatrix`
//! (tools/quantize/quantize.cpp) require of one file when llama-quantize
//! reads it with `--imatrix`. Each rule has a breaking case and a case at
//! its boundary; the rules against a model need a pair of files
//! (`corpus/models/imatrix/`, `parser/core/tests/pairing.rs`).

use gguf_validate_core::types::{GgmlType, ValueType as T};

use crate::build::*;
use crate::{A, Case, R, case};

/// An importance matrix as llama-imatrix writes it, for a 16-wide model with
/// a 4-expert layer: `imatrix.*` keys, `blk.0.attn_q.weight` (sums [16, 1],
/// counts [1, 1]) and `blk.0.ffn_up_exps.weight` (sums [16, 4], counts
/// [1, 4]). It names its architecture (llama-imatrix writes none), so that
/// only the rule under test differs from a file valid under every profile.
fn imatrix() -> Model {
    let mut m = Model::new();
    m.kv("general.architecture", V::str("llama"));
    m.kv("general.type", V::str("imatrix"));
    m.kv("imatrix.datasets", array(T::String, vec![V::str("calibration.txt")]));
    m.kv("imatrix.chunk_count", V::U32(4));
    m.kv("imatrix.chunk_size", V::U32(64));
    m.tensor(f32_tensor("blk.0.attn_q.weight.in_sum2", &[16, 1]));
    m.tensor(f32_tensor("blk.0.attn_q.weight.counts", &[1, 1]));
    m.tensor(f32_tensor("blk.0.ffn_up_exps.weight.in_sum2", &[16, 4]));
    m.tensor(f32_tensor("blk.0.ffn_up_exps.weight.counts", &[1, 4]));
    m
}

fn imatrix_with(f: impl Fn(&mut Model)) -> Vec<u8> {
    let mut m = imatrix();
    f(&mut m);
    bytes(m)
}

pub fn cases(v: &mut Vec<Case>) {
    const LOADER: &str = "llama.cpp common/imatrix-loader.cpp common_imatrix_load";
    const QUANTIZE: &str = "llama.cpp tools/quantize/quantize.cpp load_imatrix";
    v.push(case(
        "imatrix_as_written",
        [A, A, A],
        &[],
        "An importance matrix as llama-imatrix writes it: imatrix.datasets array[string], chunk_count and chunk_size u32, F32 sums [ne0, n_mat] and counts [1, n_mat] for a dense and a 4-expert tensor (the boundary of every imatrix rule).",
        LOADER,
        || bytes(imatrix()),
    ));
    v.push(case(
        "imatrix_metadata_missing",
        [R, A, A],
        &["imatrix-metadata-missing"],
        "An importance matrix without imatrix.chunk_size: llama-quantize refuses it (\"missing imatrix metadata\").",
        QUANTIZE,
        || imatrix_with(|m| drop_kv(m, "imatrix.chunk_size")),
    ));
    v.push(case(
        "imatrix_chunk_count_i32",
        [R, A, A],
        &["imatrix-key-type"],
        "imatrix.chunk_count as i32: llama.cpp reads it with gguf_get_val_u32, which aborts llama-quantize (GGML_ASSERT).",
        LOADER,
        || imatrix_with(|m| set_kv(m, "imatrix.chunk_count", V::I32(4))),
    ));
    v.push(case(
        "imatrix_chunk_size_string",
        [R, A, A],
        &["imatrix-key-type"],
        "imatrix.chunk_size as the string \"64\": gguf_get_val_u32 aborts llama-quantize (GGML_ASSERT).",
        LOADER,
        || imatrix_with(|m| set_kv(m, "imatrix.chunk_size", V::str("64"))),
    ));
    v.push(case(
        "imatrix_datasets_string",
        [A, A, A],
        &["imatrix-datasets-type"],
        "imatrix.datasets as one string rather than an array of strings: llama-quantize ignores it (the key is present, so the file loads; no dataset is recorded).",
        LOADER,
        || imatrix_with(|m| set_kv(m, "imatrix.datasets", V::str("calibration.txt"))),
    ));
    v.push(case(
        "imatrix_no_tensors",
        [R, A, A],
        &["imatrix-empty"],
        "An importance matrix with its keys and no tensor: llama-quantize refuses it (\"no data in file\").",
        LOADER,
        || {
            let mut m = imatrix();
            for name in [
                "blk.0.attn_q.weight.in_sum2",
                "blk.0.attn_q.weight.counts",
                "blk.0.ffn_up_exps.weight.in_sum2",
                "blk.0.ffn_up_exps.weight.counts",
            ] {
                drop_tensor(&mut m, name);
            }
            bytes(m)
        },
    ));
    v.push(case(
        "imatrix_one_entry",
        [A, A, A],
        &[],
        "An importance matrix with a single entry (two tensors): the boundary of imatrix-empty.",
        LOADER,
        || {
            imatrix_with(|m| {
                drop_tensor(m, "blk.0.ffn_up_exps.weight.in_sum2");
                drop_tensor(m, "blk.0.ffn_up_exps.weight.counts");
            })
        },
    ));
    v.push(case(
        "imatrix_stray_tensor",
        [A, A, A],
        &["imatrix-stray-tensor"],
        "A third tensor `blk.0.attn_q.weight.values`, neither sums nor counts: the loader ignores it.",
        LOADER,
        || imatrix_with(|m| m.tensor(f32_tensor("blk.0.attn_q.weight.values", &[16])).pipe()),
    ));
    v.push(case(
        "imatrix_sums_without_counts",
        [R, A, A],
        &["imatrix-pair-missing"],
        "blk.0.attn_q.weight.in_sum2 without its .counts: llama-quantize refuses the file (\"mismatched sums and counts\").",
        LOADER,
        || imatrix_with(|m| drop_tensor(m, "blk.0.attn_q.weight.counts")),
    ));
    v.push(case(
        "imatrix_counts_without_sums",
        [R, A, A],
        &["imatrix-pair-missing"],
        "blk.0.ffn_up_exps.weight.counts without its .in_sum2: llama-quantize refuses the file (\"mismatched sums and counts\").",
        LOADER,
        || imatrix_with(|m| drop_tensor(m, "blk.0.ffn_up_exps.weight.in_sum2")),
    ));
    v.push(case(
        "imatrix_sums_f16",
        [R, A, A],
        &["imatrix-tensor-type"],
        "F16 sums: llama-quantize refuses the file (\"sums and counts ... must be F32\").",
        LOADER,
        || {
            imatrix_with(|m| {
                drop_tensor(m, "blk.0.attn_q.weight.in_sum2");
                m.tensor(zero_tensor("blk.0.attn_q.weight.in_sum2", &[16, 1], GgmlType::F16));
            })
        },
    ));
    v.push(case(
        "imatrix_counts_empty",
        [R, A, A],
        &["imatrix-counts-empty", "tensor-dim-zero"],
        "blk.0.attn_q.weight.counts of shape [1, 0]: llama-quantize divides the number of sums by the number of counts, 0, and dies (SIGFPE).",
        QUANTIZE,
        || {
            imatrix_with(|m| {
                drop_tensor(m, "blk.0.attn_q.weight.counts");
                m.tensor(f32_tensor("blk.0.attn_q.weight.counts", &[1, 0]));
            })
        },
    ));
    v.push(case(
        "imatrix_sums_not_whole_slices",
        [A, A, A],
        &["imatrix-slices"],
        "18 sums and 4 counts: llama-quantize cuts 4 slices of 4 values and leaves the last 2 at weight 0 (it loads).",
        QUANTIZE,
        || {
            imatrix_with(|m| {
                drop_tensor(m, "blk.0.ffn_up_exps.weight.in_sum2");
                m.tensor(f32_tensor("blk.0.ffn_up_exps.weight.in_sum2", &[18]));
            })
        },
    ));
    v.push(case(
        "imatrix_sums_flat",
        [A, A, A],
        &[],
        "64 sums as one row and 4 counts: the loader reads element counts only, so 4 slices of 16 (the boundary of imatrix-slices).",
        QUANTIZE,
        || {
            imatrix_with(|m| {
                drop_tensor(m, "blk.0.ffn_up_exps.weight.in_sum2");
                m.tensor(f32_tensor("blk.0.ffn_up_exps.weight.in_sum2", &[64]));
            })
        },
    ));
}

/// `Model::tensor` returns `&mut Self`; a closure given to
/// [`imatrix_with`] returns `()`.
trait Pipe {
    fn pipe(&mut self) {}
}

impl Pipe for Model {}
