//! One file per published GGUF parser vulnerability, each reproducing the
//! advisory's field and arithmetic (each case names its advisory and the check it breaks).
//!
//! Each file is shaped so that a reader with the bug would *accept* it: the
//! wrapped size it computes is small and the file holds that many bytes.
//! A fixed reader (and `gguf-validate`, which uses checked arithmetic) must
//! reject every one of them.

use gguf_validate_core::types::{GgmlType, ValueType as T};

use crate::build::*;
use crate::{Case, R, case};

/// ggml type id of I8 and I64.
const I8: u32 = 24;
const I64: u32 = 27;

pub fn cases(v: &mut Vec<Case>) {
    v.push(case(
        "talos_2024_1912_array_count_wraps",
        [R, R, R],
        &["array-length-exceeds-file"],
        "A u64 array claiming 2^61+1 elements with one element present: n * sizeof(u64) = 2^64+8 wraps to 8 in 64-bit arithmetic, exactly the bytes in the file.",
        "TALOS-2024-1912 / CVE-2024-21825 (gguf_init_from_file KV array n * type_size overflow, heap overflow; fixed in ggml aec8550d); gguf.cpp [K5]",
        || {
            let mut m = base();
            m.kv("custom.arr", array(T::U64, vec![V::U64(0x4141_4141_4141_4141)]));
            let b = bytes(m);
            // key bytes, value type (u32), element type (u32), then the count.
            let at = find(&b, b"custom.arr") + "custom.arr".len() + 4 + 4;
            patch(b, at, &((1u64 << 61) + 1).to_le_bytes())
        },
    ));
    v.push(case(
        "talos_2024_1913_string_length_max",
        [R, R, R],
        &["string-length-exceeds-file"],
        "The string value of general.architecture claims 2^64-1 bytes: a reader that allocates n+1 bytes allocates 0 and then reads past it.",
        "TALOS-2024-1913 / CVE-2024-23496 (gguf_fread_str calloc(n+1) wraps; llamafile#294); gguf.cpp [K1]",
        || {
            let b = bytes(base());
            let at = find(&b, b"plain") - 8;
            patch(b, at, &u64::MAX.to_le_bytes())
        },
    ));
    v.push(case(
        "talos_2024_1914_dims_product_wraps",
        [R, R, R],
        &["tensor-element-count-overflow"],
        "An F32 tensor of shape [3, 0x5555555555555556]: each dim is a valid int64, the product 2^64+2 wraps to 2 elements (8 bytes), and the file holds those 8 bytes.",
        "TALOS-2024-1914 / CVE-2024-21802 (tensor info ne[] product overflow, heap overflow; fixed in ggml aec8550d); gguf.cpp [T6]",
        || {
            let mut m = base_no_tensors();
            let mut t = info_only("x", &[3, 0x5555_5555_5555_5556], GgmlType::F32.id(), 0);
            t.data = vec![0; 8];
            m.tensor(t);
            raw(&m)
        },
    ));
    v.push(case(
        "talos_2024_1915_tensor_count_wraps",
        [R, R, R],
        &["count-exceeds-file"],
        "tensor_count = 2^60+1 with one tensor info present: times any 16-byte-multiple struct size it wraps to one struct's worth of memory.",
        "TALOS-2024-1915 / CVE-2024-21836 (n_tensors * sizeof(gguf_tensor_info) overflow in malloc); gguf.cpp [H8]",
        || patch(bytes(base()), 8, &((1u64 << 60) + 1).to_le_bytes()),
    ));
    v.push(case(
        "talos_2024_1916_kv_count_wraps",
        [R, R, R],
        &["count-exceeds-file"],
        "kv_count = 2^60+1 with one key/value pair present: times any 16-byte-multiple struct size it wraps to one struct's worth of memory.",
        "TALOS-2024-1916 / CVE-2024-23605 (n_kv * sizeof(gguf_kv) overflow in malloc); gguf.cpp [H9]",
        || patch(bytes(base()), 16, &((1u64 << 60) + 1).to_le_bytes()),
    ));
    v.push(case(
        "cve_2025_53630_data_size_wraps",
        [R, R, R],
        &["data-size-overflow", "tensor-data-out-of-bounds", "size-32-bit"],
        "Three I8 tensors of 2^63-32, 2^63-32 and 96 elements at the offsets the running sum gives (0, 2^63-32, 2^64-64): the total 2^64+32 wraps to 32, and the file holds 32 data bytes.",
        "CVE-2025-53630 (gguf_init_from_file_impl ctx->size += GGML_PAD(nbytes) wraps; fixed by llama.cpp#14595, ggml 19356a42); gguf.cpp [D3]",
        || {
            let big = (1u64 << 63) - 32;
            let mut m = base_no_tensors();
            m.tensor(info_only("a", &[big], I8, 0));
            m.tensor(info_only("b", &[big], I8, big));
            m.tensor(info_only("c", &[96], I8, big.wrapping_add(big)));
            m.trailing = vec![0; 32];
            raw(&m)
        },
    ));
    v.push(case(
        "cve_2026_27940_mem_size_wraps",
        [R, R, R],
        &["data-size-overflow", "tensor-data-out-of-bounds", "size-32-bit"],
        "Two I8 tensors of 2^63-256 elements at offsets 0 and 2^63-256: the data size 2^64-512 passes the CVE-2025-53630 check, but adding the ggml context overhead (one tensor struct per tensor plus the blob) wraps it; 32 data bytes follow.",
        "CVE-2026-27940 / GHSA-3p4r-fq3f-q74v (bypass of the CVE-2025-53630 fix through the ggml-context mem_size; fixed in llama.cpp b8146); gguf.cpp [D4]",
        || {
            let big = (1u64 << 63) - 256;
            let mut m = base_no_tensors();
            m.tensor(info_only("a", &[big], I8, 0));
            m.tensor(info_only("b", &[big], I8, big));
            m.trailing = vec![0; 32];
            raw(&m)
        },
    ));
    v.push(case(
        "cve_2026_33298_nbytes_wraps",
        [R, R, R],
        &["tensor-byte-size-overflow"],
        "An I64 tensor of 2^61+1 elements: the element count fits in int64, its byte size 2^64+8 wraps to 8, and the file holds 8 data bytes.",
        "CVE-2026-33298 / GHSA-96jg-mvhq-q7q7 (ggml_nbytes wraps while the element count fits, heap overflow; fixed in llama.cpp b7824); gguf.cpp [T10]",
        || {
            let mut m = base_no_tensors();
            let mut t = info_only("x", &[(1u64 << 61) + 1], I64, 0);
            t.data = vec![0; 8];
            m.tensor(t);
            raw(&m)
        },
    ));
    v.push(case(
        "ggml_pad_wraps_to_zero",
        [R, R, R],
        &["tensor-byte-size-overflow"],
        "An F32 tensor of ne[0] = SIZE_MAX/4 (2^62 - 1) elements: the element count fits in int64, its byte size 2^64 - 4 rounds up under GGML_PAD to 2^64, which wraps to 0; the file holds 32 data bytes.",
        "llama.cpp #24759 (2026-06-18: GGML_PAD wraps to 0 for F32 with ne[0] = SIZE_MAX/4); gguf.cpp [T10]",
        || {
            let mut m = base_no_tensors();
            let mut t = info_only("x", &[(1u64 << 62) - 1], GgmlType::F32.id(), 0);
            t.data = vec![0; 32];
            m.tensor(t);
            raw(&m)
        },
    ));
    v.push(case(
        "alignment_2_pow_31",
        [R, R, R],
        &["alignment-large", "data-section-start"],
        "general.alignment = 0x80000000 with one tensor: the data section would start at 2^31, past the end of this small file (on a 32-bit host, GGML_PAD overflows first).",
        "oss-security 2026/q2 \"V-01\" and llama.cpp #24997 (general.alignment has no upper bound); gguf.cpp [A2, D1]",
        || {
            // Written with alignment 32, then the value patched: the writer
            // would pad to 2^31.
            let mut m = base();
            m.kv("general.alignment", V::U32(32));
            let b = bytes(m);
            let at = find(&b, b"general.alignment") + "general.alignment".len() + 4;
            patch(b, at, &0x8000_0000u32.to_le_bytes())
        },
    ));
    v.push(case(
        "ollama_cve_2026_7482_offset_past_eof",
        [R, R, R],
        &["tensor-data-out-of-bounds"],
        "The base tensor plus a 4 MiB F32 tensor `u` at the canonical offset 32 in a 160-byte file: its offset and size are consistent, but offset + size lies past the end of the file (a reader that trusts it over-reads the heap).",
        "Ollama CVE-2026-7482 / GHSA-x8qc-fggm-mpqg (\"Bleeding Llama\": tensor offset + size past EOF, heap OOB read); llama.cpp loader \"data is not within the file bounds\"",
        || {
            let mut m = base();
            m.tensor(info_only("u", &[1 << 20], GgmlType::F32.id(), 32));
            m.pad_end = false;
            raw(&m)
        },
    ));
    v.push(case(
        "gguf_py_27188_array_length_unbounded",
        [R, R, R],
        &["array-length-exceeds-file"],
        "A u8 array claiming 2^62 elements in a 100-byte file: gguf-py 0.19.0 loops over the claimed count with unbounded memory growth.",
        "llama.cpp#27188 (gguf-py trusts array lengths; DoS); gguf.cpp [K5]",
        || {
            let mut m = base_no_tensors();
            m.kv("custom.x", array(T::U8, vec![V::U8(1)]));
            m.pad_end = false;
            let b = bytes(m);
            let at = find(&b, b"custom.x") + "custom.x".len() + 4 + 4;
            patch(b, at, &(1u64 << 62).to_le_bytes())
        },
    ));
}
