//! Tensor infos: names, dimensions, types, sizes.

use gguf_validate_core::types::GgmlType;

use crate::build::*;
use crate::{A, Case, R, case};

fn named(name: &[u8]) -> Vec<u8> {
    let mut m = base_no_tensors();
    let mut t = f32_tensor("x", &[8]);
    t.name = name.to_vec();
    m.tensor(t);
    bytes(m)
}

fn shaped(dims: &[u64], ty: GgmlType) -> Vec<u8> {
    let mut m = base_no_tensors();
    if ty.is_quantized() {
        m.kv("general.quantization_version", V::U32(2));
    }
    m.tensor(zero_tensor("x", dims, ty));
    bytes(m)
}

/// A file whose single tensor info has the given dims and type but no data
/// (for shapes whose size cannot be laid out).
fn info(dims: &[u64], type_id: u32) -> Vec<u8> {
    let mut m = base_no_tensors();
    m.tensor(info_only("x", dims, type_id, 0));
    raw(&m)
}

/// Two tensors of `elements` values of type `type_id` laid out with
/// `per_block` bytes per 128 elements (a fork's layout, or upstream's).
fn blocks_of(type_id: u32, elements: u64, per_block: usize) -> Vec<u8> {
    let mut m = base_no_tensors();
    m.kv("general.quantization_version", V::U32(2));
    for name in ["a", "b"] {
        let mut t = info_only(name, &[elements], type_id, 0);
        t.data = vec![0; (elements as usize) / 128 * per_block];
        m.tensor(t);
    }
    bytes(m)
}

pub fn cases(v: &mut Vec<Case>) {
    v.push(case("tensor_name_63", [A, A, A], &[], "A 63-byte tensor name, ggml's maximum.", "gguf.cpp [T1]", || {
        named(&[b'n'; 63])
    }));
    v.push(case(
        "tensor_name_64",
        [R, A, R],
        &["tensor-name-64-bytes"],
        "A 64-byte tensor name: the spec allows it, ggml does not.",
        "gguf.md name \"at most 64 bytes\"; gguf.cpp [T1]; test-gguf TENSORS_BAD_NAME_SIZE",
        || named(&[b'n'; 64]),
    ));
    v.push(case(
        "tensor_name_65",
        [R, R, R],
        &["tensor-name-too-long"],
        "A 65-byte tensor name.",
        "gguf.md gguf_tensor_info_t",
        || named(&[b'n'; 65]),
    ));
    v.push(case(
        "tensor_name_empty",
        [R, A, A],
        &["tensor-name-empty"],
        "An empty tensor name.",
        "gguf.md gguf_tensor_info_t",
        || named(b""),
    ));
    v.push(case(
        "tensor_name_nul",
        [R, A, A],
        &["tensor-name-nul"],
        "Tensor name `a\\0b`: ggml truncates it to `a`.",
        "ggml ggml_set_name [T2]",
        || named(b"a\0b"),
    ));
    v.push(case(
        "tensor_name_control",
        [A, A, A],
        &["tensor-name-control"],
        "Tensor name `w\\x1b[2Kok\\n`: an ESC sequence and a newline that rewrite a terminal or log line when printed.",
        "gguf.md gguf_tensor_info_t name",
        || named(b"w\x1b[2Kok\n"),
    ));
    v.push(case(
        "tensor_name_bidi",
        [A, A, A],
        &["tensor-name-control"],
        "Tensor name with U+202E (right-to-left override), which reverses how the rest is displayed.",
        "gguf.md gguf_tensor_info_t name",
        || named("w\u{202e}thgiew".as_bytes()),
    ));
    v.push(case(
        "tensor_name_unicode",
        [A, A, A],
        &[],
        "Tensor name `blk.0.ü→ñ`: non-ASCII but printable UTF-8 is fine (boundary of tensor-name-control).",
        "gguf.md gguf_tensor_info_t name",
        || named("blk.0.ü→ñ".as_bytes()),
    ));
    v.push(case(
        "tensor_name_invalid_utf8",
        [R, R, A],
        &["tensor-name-utf8"],
        "Tensor name bytes `w\\xfe`.",
        "gguf.md gguf_string_t",
        || named(b"w\xfe"),
    ));
    v.push(case(
        "tensor_name_duplicate",
        [R, R, R],
        &["tensor-name-duplicate"],
        "Two tensors named `t`.",
        "gguf.md: names unique; test-gguf TENSORS_DUPLICATE_NAME",
        || {
            let mut m = base();
            m.tensor(f32_tensor("t", &[8]));
            bytes(m)
        },
    ));
    v.push(case(
        "tensor_name_duplicate_after_nul",
        [R, A, R],
        &["tensor-name-nul", "tensor-name-duplicate-after-nul"],
        "Tensors `w\\0a` and `w\\0b`: distinct bytes, but ggml compares them with strcmp after truncation.",
        "gguf.cpp [T3]",
        || {
            let mut m = base_no_tensors();
            let mut a = f32_tensor("x", &[8]);
            a.name = b"w\0a".to_vec();
            let mut b = f32_tensor("y", &[8]);
            b.name = b"w\0b".to_vec();
            m.tensor(a);
            m.tensor(b);
            bytes(m)
        },
    ));
    v.push(case(
        "tensor_n_dims_4",
        [A, A, A],
        &[],
        "A 4-dimensional tensor [2, 2, 2, 2].",
        "gguf.md n_dimensions",
        || shaped(&[2, 2, 2, 2], GgmlType::F32),
    ));
    v.push(case(
        "tensor_n_dims_5",
        [R, R, R],
        &["tensor-n-dims"],
        "A 5-dimensional tensor.",
        "gguf.cpp GGML_MAX_DIMS [T4]; test-gguf TENSORS_BAD_N_DIMS",
        || {
            let mut m = base_no_tensors();
            m.tensor(f32_tensor("x", &[2, 1, 1, 1, 2]));
            bytes(m)
        },
    ));
    v.push(case(
        "tensor_n_dims_huge",
        [R, R, R],
        &["n-dims-exceeds-file"],
        "n_dims = 2^32-1: its dims cannot fit in the file.",
        "TALOS-2024-1914",
        || {
            let b = named(b"x");
            let at = find(&b, b"x\x01\x00\x00\x00") + 1;
            patch(b, at, &u32::MAX.to_le_bytes())
        },
    ));
    v.push(case(
        "tensor_n_dims_0",
        [A, A, A],
        &["tensor-n-dims-zero"],
        "A tensor with n_dims 0 (ggml reads a single element).",
        "gguf.cpp [T4]",
        || {
            let mut m = base_no_tensors();
            let mut t = f32_tensor("x", &[1]);
            t.dims.clear();
            m.tensor(t);
            bytes(m)
        },
    ));
    v.push(case(
        "tensor_dim_zero",
        [A, A, A],
        &["tensor-dim-zero"],
        "Shape [8, 0]: an empty tensor (ggml accepts it since 2026).",
        "test-gguf TENSORS_ZERO_DIM",
        || {
            let mut m = base_no_tensors();
            m.tensor(f32_tensor("x", &[8, 0]));
            bytes(m)
        },
    ));
    v.push(case(
        "tensor_dim_2pow63",
        [R, R, R],
        &["tensor-dim-range"],
        "A dimension of 2^63 (negative as ggml's int64).",
        "gguf.cpp [T5]; test-gguf TENSORS_BAD_SHAPE",
        || info(&[1 << 63], 0),
    ));
    v.push(case(
        "tensor_dim_max",
        [R, R, R],
        &["tensor-dim-range"],
        "Every dimension 2^64-1 (-1 as int64).",
        "test-gguf TENSORS_BAD_SHAPE",
        || info(&[u64::MAX, u64::MAX], 0),
    ));
    v.push(case(
        "tensor_elements_2pow63",
        [R, R, R],
        &["tensor-element-count-overflow"],
        "Dims [2^31, 2^31, 2]: 2^63 elements.",
        "gguf.cpp [T6]; test-gguf TENSORS_NE_TOO_BIG",
        || info(&[1 << 31, 1 << 31, 2], 24),
    ));
    v.push(case(
        "tensor_elements_wrap_to_zero",
        [R, R, R],
        &["tensor-element-count-overflow"],
        "Dims [2^32, 2^32, 16] (F32): the element count wraps to exactly 0 in 64 bits, which hid it from the overflow guard of ggml d99724f (accepted there); ggml 0.25.3 (llama.cpp 0c1e570) rejects it.",
        "gguf-validate finding (peers.md 1.1); TALOS-2024-1914 class",
        || info(&[1 << 32, 1 << 32, 16], 0),
    ));
    v.push(case(
        "tensor_bytes_2pow63",
        [R, R, R],
        &["tensor-byte-size-overflow"],
        "An I64 tensor of 2^60 elements: the count fits, its 2^63 bytes do not.",
        "gguf.cpp [T10]; CVE-2026-33298; test-gguf TENSORS_NBYTES_TOO_BIG",
        || info(&[1 << 60], 27),
    )
    .diverges("2^63 bytes fit in size_t, so ggml's metadata-only load accepts the file and its full load aborts (GGML_ASSERT after the 8 EiB blob allocation fails) instead of rejecting it; we reject the size"));
    v.push(case(
        "tensor_type_43",
        [R, R, R],
        &["tensor-type-unknown"],
        "Tensor type 43 (= GGML_TYPE_COUNT).",
        "gguf.cpp [T7]; test-gguf TENSORS_BAD_TYPE",
        || info(&[8], 43),
    ));
    v.push(case(
        "tensor_type_dialect_q2_0_g128",
        [R, R, R],
        &["tensor-data-overlap", "tensor-data-out-of-bounds", "tensor-type-dialect"],
        "Two Q2_0 (id 42) tensors of 2048 values laid out with 34 bytes per 128 values: the PrismML fork's legacy group-128 layout, not upstream's 18 bytes per 64.",
        "PrismML-Eng/llama.cpp#167",
        || blocks_of(42, 2048, 34),
    ));
    v.push(case(
        "tensor_type_dialect_q2_0_upstream",
        [A, A, A],
        &[],
        "The same two Q2_0 tensors laid out with upstream's 18 bytes per 64 values (36 per 128): no dialect (the boundary of tensor_type_dialect_q2_0_g128).",
        "ggml ggml-common.h block_q2_0",
        || blocks_of(42, 2048, 36),
    ));
    v.push(case(
        "tensor_type_dialect_pq2_0",
        [R, R, R],
        &["tensor-type-unknown", "tensor-type-dialect"],
        "Two tensors of type id 142 (PrismML's PQ2_0, unknown to ggml) of 2048 values, 34 bytes per 128.",
        "llama.cpp#29058",
        || blocks_of(142, 2048, 34),
    ));
    v.push(case(
        "tensor_type_u32_max",
        [R, R, R],
        &["tensor-type-unknown"],
        "Tensor type 2^32-1 (-1 as ggml's int32).",
        "gguf.cpp [T7]",
        || info(&[8], u32::MAX),
    ));
    for (id, name) in [
        (4, "q4_2"),
        (5, "q4_3"),
        (31, "q4_0_4_4"),
        (32, "q4_0_4_8"),
        (33, "q4_0_8_8"),
        (36, "iq4_nl_4_4"),
        (37, "iq4_nl_4_8"),
        (38, "iq4_nl_8_8"),
    ] {
        v.push(case(
            &format!("tensor_type_removed_{name}"),
            [R, R, R],
            &["tensor-type-removed"],
            &format!("Tensor type {id} ({name}), removed from ggml."),
            "ggml.c type_traits blck_size 0 [T8]",
            move || info(&[32], id),
        ));
    }
    v.push(case(
        "tensor_type_q8_1",
        [A, A, A],
        &["tensor-type-intermediate"],
        "A Q8_1 tensor: ggml loads it but has no to_float for it.",
        "ggml.c type_traits",
        || shaped(&[32], GgmlType::Q8_1),
    ));
    v.push(case(
        "tensor_type_q8_k",
        [A, A, A],
        &["tensor-type-intermediate"],
        "A Q8_K tensor: ggml loads it but has no to_float for it.",
        "ggml.c type_traits",
        || shaped(&[256], GgmlType::Q8_K),
    ));
}
