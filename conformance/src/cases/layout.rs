//! The data section: start, offsets, order, gaps, overlaps, padding, tail.

use crate::build::*;
use crate::{A, Case, R, case};

/// Base file plus a second F32 tensor `u` of `n` elements; offsets set by hand.
fn two(n_u: u64, off_t: u64, off_u: u64) -> Model {
    let mut m = base();
    m.tensor(f32_tensor("u", &[n_u]));
    m.tensors[0].offset = off_t;
    m.tensors[1].offset = off_u;
    m
}

pub fn cases(v: &mut Vec<Case>) {
    v.push(case(
        "two_tensors",
        [A, A, A],
        &[],
        "Two F32 tensors (8 and 5 elements) laid out contiguously with 32-byte padding.",
        "gguf.md tensor_data",
        || bytes(two(5, 0, 0)),
    ));
    v.push(case(
        "tensor_offset_misaligned",
        [R, R, R],
        &["tensor-offset-misaligned"],
        "Tensor `u` at offset 20, right after a 20-byte tensor `t`: contiguous, but not a multiple of 32.",
        "gguf.md offset \"must be a multiple of ALIGNMENT\"",
        || {
            let mut m = base_no_tensors();
            m.tensor(f32_tensor("t", &[5]));
            m.tensor(f32_tensor("u", &[8]));
            m.tensors[1].offset = 20;
            raw(&m)
        },
    ));
    v.push(case(
        "tensor_data_overlap",
        [R, R, R],
        &["tensor-data-overlap"],
        "A 64-byte tensor at 0 and a second tensor at 32, inside it.",
        "gguf.cpp [D2]; safetensors Metadata::validate",
        || {
            let mut m = base_no_tensors();
            m.tensor(f32_tensor("t", &[16]));
            m.tensor(f32_tensor("u", &[8]));
            m.tensors[1].offset = 32;
            raw(&m)
        },
    ));
    v.push(case(
        "tensor_data_gap",
        [R, A, R],
        &["tensor-data-gap"],
        "Tensor `u` at 64 although `t` ends (padded) at 32: a zero-filled gap the spec allows.",
        "gguf.cpp [D2]; test-gguf TENSORS_BAD_OFFSET class",
        || raw(&two(8, 0, 64)),
    ));
    v.push(case(
        "tensor_first_offset_nonzero",
        [R, A, R],
        &["tensor-data-gap"],
        "The only tensor starts at offset 32 instead of 0.",
        "gguf.cpp [D2]",
        || {
            let mut m = base();
            m.tensors[0].offset = 32;
            raw(&m)
        },
    ));
    v.push(case(
        "tensor_data_order",
        [R, A, R],
        &["tensor-data-order"],
        "Tensor infos `t`, `u` but data stored as `u`, `t`.",
        "gguf.cpp [D2]",
        || raw(&two(8, 32, 0)),
    ));
    v.push(case(
        "tensor_data_out_of_bounds",
        [R, R, R],
        &["tensor-data-out-of-bounds"],
        "The file ends 16 bytes into the tensor's 32 bytes of data.",
        "llama.cpp loader bounds check; test-gguf DATA_NOT_ENOUGH_DATA",
        || {
            let b = bytes(base());
            let n = b.len() - 16;
            b.into_iter().take(n).collect()
        },
    ));
    v.push(case(
        "tensor_offset_past_eof",
        [R, R, R],
        &["tensor-data-gap", "tensor-data-out-of-bounds"],
        "A tensor offset of 2^40 (aligned) in a 160-byte file: the out-of-bounds tensor offset behind Ollama's CVE.",
        "Ollama CVE-2026-7482 / GHSA-x8qc-fggm-mpqg",
        || {
            let mut m = base();
            m.tensors[0].offset = 1 << 40;
            raw(&m)
        },
    ));
    v.push(case(
        "tensor_offset_max",
        [R, R, R],
        &["tensor-offset-misaligned", "tensor-data-gap", "tensor-data-out-of-bounds"],
        "A tensor offset of 2^64-1: data start plus offset overflows.",
        "test-gguf TENSORS_BAD_OFFSET; CVE-2025-53630 class",
        || {
            let mut m = base();
            m.tensors[0].offset = u64::MAX;
            raw(&m)
        },
    ));
    v.push(case(
        "data_size_overflow",
        [R, R, R],
        &["tensor-data-out-of-bounds", "data-size-overflow", "size-32-bit"],
        "Two I8 tensors of 2^62 elements each: their padded sizes sum to 2^63.",
        "CVE-2025-53630; CVE-2026-27940; test-gguf DATA_MEM_SIZE_OVERFLOW",
        || {
            let mut m = base_no_tensors();
            m.tensor(info_only("a", &[1 << 62], 24, 0));
            m.tensor(info_only("b", &[1 << 62], 24, 1 << 62));
            raw(&m)
        },
    )
    .diverges("the 2^63-byte total fits in size_t, so ggml's metadata-only load accepts the file and its full load aborts (GGML_ASSERT after the blob allocation fails) instead of rejecting it; we reject the size"));
    v.push(case(
        "data_section_start_past_eof",
        [R, R, R],
        &["data-section-start"],
        "The file ends right after the tensor infos, before the aligned data start.",
        "gguf.cpp [D1]",
        || {
            let b = bytes(base());
            b.into_iter().take(102).collect()
        },
    ));
    v.push(case(
        "padding_nonzero",
        [R, R, A],
        &["padding-nonzero"],
        "A 0xAA byte in the padding between the tensor infos and the data.",
        "gguf.md: padding is 0x00",
        || patch(bytes(base()), 110, &[0xAA]),
    ));
    v.push(case(
        "padding_between_tensors_nonzero",
        [R, R, A],
        &["padding-nonzero"],
        "A non-zero byte in the padding after the first (20-byte) tensor.",
        "gguf.md: padding is 0x00",
        || {
            let mut m = base_no_tensors();
            m.tensor(f32_tensor("t", &[5]));
            m.tensor(f32_tensor("u", &[8]));
            let b = bytes(m);
            let data_start = b.len() - 64;
            patch(b, data_start + 25, &[1])
        },
    ));
    v.push(case(
        "padding_final_missing",
        [R, A, R],
        &["padding-final-missing"],
        "The last tensor (20 bytes) is not followed by its 12 bytes of padding.",
        "gguf.cpp full load reads the padded blob [D5]",
        || {
            let mut m = base_no_tensors();
            m.tensor(f32_tensor("t", &[5]));
            m.pad_end = false;
            bytes(m)
        },
    ));
    v.push(case(
        "padding_final_nonzero",
        [R, R, A],
        &["padding-nonzero"],
        "Non-zero bytes in the padding after the last tensor.",
        "gguf.md: padding is 0x00",
        || {
            let mut m = base_no_tensors();
            m.tensor(f32_tensor("t", &[5]));
            let mut b = bytes(m);
            if let Some(last) = b.last_mut() {
                *last = 0x55;
            }
            b
        },
    ));
    v.push(case(
        "trailing_bytes",
        [A, A, A],
        &["trailing-bytes"],
        "Eleven bytes of text after the padded end of the data (a polyglot tail).",
        "safetensors MetadataIncompleteBuffer; gguf.cpp ignores them [D6]",
        || {
            let mut m = base();
            m.trailing = b"hello world".to_vec();
            bytes(m)
        },
    ));
    v.push(case(
        "no_tensors_padded",
        [A, A, A],
        &[],
        "No tensors; the key/value section is zero-padded to 32 bytes, as gguf-py writes it.",
        "gguf-py GGUFWriter",
        || bytes(base_no_tensors()),
    ));
    v.push(case(
        "no_tensors_unpadded",
        [A, A, A],
        &[],
        "No tensors and no padding after the key/value section, as ggml writes it.",
        "gguf.h: padded iff the file has tensors",
        || {
            let mut m = base_no_tensors();
            m.pad_end = false;
            bytes(m)
        },
    ));
    empty_tensor_cases(v);
}

/// Empty tensors: they overlap nothing, but ggml still requires their
/// offset to be the running padded size.
fn empty_tensor_cases(v: &mut Vec<Case>) {
    v.push(case(
        "tensor_empty_at_previous_start",
        [R, A, R],
        &["tensor-dim-zero", "tensor-data-order"],
        "An empty tensor (shape [8, 0]) listed after `t` but placed at `t`'s offset 0 instead of after it (32).",
        "gguf.cpp [D2]; gguf-fuzz finding F3",
        || {
            let mut m = base();
            m.tensor(f32_tensor("e", &[8, 0]));
            m.tensors[1].offset = 0;
            raw(&m)
        },
    ));
    v.push(case(
        "tensor_empty_after_previous",
        [A, A, A],
        &["tensor-dim-zero"],
        "An empty tensor listed after `t` at offset 32, the running padded size.",
        "gguf.cpp [D2]",
        || {
            let mut m = base();
            m.tensor(f32_tensor("e", &[8, 0]));
            bytes(m)
        },
    ));
}
