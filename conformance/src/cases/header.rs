//! Magic, version, byte order, counts, truncation.

use gguf_validate_core::parse::ByteOrder;

use crate::build::*;
use crate::{A, Case, R, case};

pub fn cases(v: &mut Vec<Case>) {
    v.push(case(
        "base",
        [A, A, A],
        &[],
        "The smallest well-formed model: one key (general.architecture) and one 8-element F32 tensor.",
        "gguf.md File Structure",
        || bytes(base()),
    ));
    v.push(case(
        "empty_file",
        [R, R, R],
        &["file-truncated"],
        "A file of zero bytes.",
        "gguf.md File Structure",
        Vec::new,
    ));
    v.push(case(
        "magic_only",
        [R, R, R],
        &["file-truncated"],
        "The four magic bytes and nothing else.",
        "gguf.md File Structure",
        || b"GGUF".to_vec(),
    ));
    v.push(case(
        "header_truncated",
        [R, R, R],
        &["file-truncated"],
        "Magic, version 3 and half of tensor_count.",
        "gguf.cpp every read checks remaining bytes [H1]",
        || bytes(base()).into_iter().take(12).collect(),
    ));
    v.push(case(
        "magic_bad",
        [R, R, R],
        &["magic"],
        "Magic `GGUX` instead of `GGUF`.",
        "gguf.md File Structure; test-gguf HEADER_BAD_MAGIC",
        || patch(bytes(base()), 3, b"X"),
    ));
    v.push(case("magic_swapped", [R, R, R], &["magic"], "Magic bytes `FUGG`, the byte-swapped magic some third-party readers expect for big-endian files; ggml never writes it.", "test-gguf HEADER_BAD_MAGIC uses FUGG", || {
        patch(bytes(base()), 0, b"FUGG")
    }));
    v.push(case(
        "pointer_git_lfs",
        [R, R, R],
        &["pointer-file"],
        "A Git LFS pointer file where the model should be (what `actions/checkout` without `lfs: true` leaves): `version https://git-lfs.github.com/spec/v1`, the object's oid and size.",
        "https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md",
        || {
            b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 253113024\n"
                .to_vec()
        },
    ));
    v.push(case(
        "pointer_git_xet",
        [R, R, R],
        &["pointer-file"],
        "A git-xet pointer file (`# xet version 0`, the file's hash and size) where the model should be.",
        "git-xet pointer files",
        || b"# xet version 0\nfilesize = 253113024\nhash = 8f3a2c\n".to_vec(),
    ));
    v.push(case(
        "pointer_lookalike",
        [R, R, R],
        &["magic"],
        "A text file that starts with `version` but is no pointer (boundary of pointer-file): only `magic` applies.",
        "gguf.md File Structure",
        || b"version 2 of the notes\n".to_vec(),
    ));
    v.push(case(
        "legacy_ggjt_v3",
        [R, R, R],
        &["legacy-format", "legacy-type-table"],
        "A GGJT v3 header (pre-GGUF llama.cpp format).",
        "gguf.md Historical State of Affairs",
        || {
            let mut b = b"tjgg".to_vec();
            b.extend_from_slice(&3u32.to_le_bytes());
            b.extend_from_slice(&[0; 28]);
            b
        },
    ));
    v.push(case(
        "version_0",
        [R, R, R],
        &["version-unsupported"],
        "Version 0.",
        "gguf.cpp [H3]; test-gguf HEADER_BAD_VERSION_0",
        || patch(bytes(base()), 4, &0u32.to_le_bytes()),
    ));
    v.push(case(
        "version_1",
        [R, R, R],
        &["version-obsolete"],
        "Version 1 (2023 layout with u32 counts); reported as obsolete, never read as v2/v3.",
        "gguf.cpp [H5]; test-gguf HEADER_BAD_VERSION_1",
        || {
            let mut b = b"GGUF".to_vec();
            b.extend_from_slice(&1u32.to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes()); // v1 tensor_count (u32)
            b.extend_from_slice(&0u32.to_le_bytes()); // v1 kv_count (u32)
            b
        },
    ));
    v.push(case(
        "version_4",
        [R, R, R],
        &["version-unsupported"],
        "Version 4, newer than any published.",
        "gguf.cpp [H6]; test-gguf HEADER_BAD_VERSION_FUTURE",
        || patch(bytes(base()), 4, &4u32.to_le_bytes()),
    ));
    v.push(case(
        "version_65536",
        [R, R, R],
        &["version-unsupported"],
        "Version word 0x00010000: low 16 bits zero, and not 2 or 3 byte-swapped either.",
        "gguf.cpp endianness heuristic [H4]",
        || patch(bytes(base()), 4, &0x10000u32.to_le_bytes()),
    ));
    v.push(case(
        "version_2",
        [A, A, A],
        &["version-2"],
        "A GGUF v2 file (same layout as v3).",
        "gguf.md Version History",
        || {
            let mut m = base();
            m.version = 2;
            bytes(m)
        },
    ));
    v.push(case("big_endian_v3", [R, A, R], &["byte-order-big-endian"], "The base file written big-endian (as gguf-py --bigendian does): valid by the spec; ggml, and so llama.cpp, on a little-endian host rejects it, so strict does too.", "gguf.md Version History (v3 adds big-endian); gguf.cpp [H4]", || {
        let mut m = base();
        m.order = ByteOrder::BigEndian;
        bytes(m)
    }));
    v.push(case(
        "kv_count_max",
        [R, R, R],
        &["count-exceeds-file"],
        "kv_count = 2^64-1 in a 160-byte file.",
        "TALOS-2024-1916; test-gguf HEADER_BAD_N_KV",
        || patch(bytes(base()), 16, &u64::MAX.to_le_bytes()),
    ));
    v.push(case(
        "tensor_count_max",
        [R, R, R],
        &["count-exceeds-file"],
        "tensor_count = 2^64-1 in a 160-byte file.",
        "TALOS-2024-1915; test-gguf HEADER_BAD_N_TENSORS",
        || patch(bytes(base()), 8, &u64::MAX.to_le_bytes()),
    ));
    v.push(case("tensor_count_plus_one", [R, R, R], &["tensor-name-empty", "tensor-n-dims-zero", "tensor-data-overlap"], "tensor_count one more than the infos present: the reader decodes the zero padding as a second info (empty name, 0 dims, F32 at offset 0), which overlaps the first tensor.", "gguf.md gguf_header_t", || {
        patch(bytes(base()), 8, &2u64.to_le_bytes())
    }));
    v.push(case("counts_zero", [R, R, A], &["architecture-missing"], "Header only: 0 tensors, 0 keys, padded to 32 bytes. ggml accepts it (test-gguf HEADER_EMPTY); the spec requires general.architecture.", "test-gguf HEADER_EMPTY; gguf.md Required", || {
        bytes(gguf_validate_core::write::GgufModel::new())
    }));
    v.push(case(
        "truncated_in_kv",
        [R, R, R],
        &["file-truncated"],
        "The file ends halfway through a u64 value (the counts still fit in what is left).",
        "gguf.cpp [H1]",
        || {
            let mut m = base();
            m.kv("custom.x", crate::build::V::U64(7));
            bytes(m).into_iter().take(93).collect()
        },
    ));
    v.push(case(
        "truncated_in_string",
        [R, R, R],
        &["string-length-exceeds-file"],
        "The file ends inside the string value of general.architecture: its length no longer fits.",
        "gguf.cpp [K1]",
        || bytes(base()).into_iter().take(66).collect(),
    ));
    v.push(case("truncated_in_counts", [R, R, R], &["count-exceeds-file"], "The file ends 60 bytes in: one key/value pair and one tensor info cannot fit in the 36 bytes after the header.", "gguf.cpp [H8, H9]", || {
        bytes(base()).into_iter().take(60).collect()
    }));
    v.push(case(
        "truncated_in_tensor_info",
        [R, R, R],
        &["file-truncated"],
        "The file ends inside the tensor info's data-offset field.",
        "gguf.cpp [H1]",
        || bytes(base()).into_iter().take(98).collect(),
    ));
    v.push(case(
        "truncated_in_dims",
        [R, R, R],
        &["n-dims-exceeds-file"],
        "The file ends inside the tensor info's dims.",
        "TALOS-2024-1914 class",
        || bytes(base()).into_iter().take(85).collect(),
    ));
}
