//! Format detection: GGUF magic and version (with byte order), GGUF v1, and
//! the magics of the formats GGUF replaced.
#![forbid(unsafe_code)]

use super::primitives::ByteOrder;

/// A format that is not GGUF v2/v3 but is recognised from its magic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LegacyFormat {
    /// Unversioned GGML (`lmgg` on disk).
    Ggml,
    /// GGMF, version 1 (`fmgg`).
    Ggmf,
    /// GGJT v1..v3 (`tjgg`).
    Ggjt,
    /// llama.cpp LoRA adapter (`algg`).
    Ggla,
    /// llama.cpp session file (`nsgg`).
    Ggsn,
    /// llama.cpp sequence state file (`qsgg`).
    Ggsq,
    /// rwkv.cpp checkpoint (`fmgg` with version 100 or 101).
    Rwkv,
}

impl LegacyFormat {
    /// Short machine name (`ggjt`, `rwkv-cpp`, ...).
    pub fn name(self) -> &'static str {
        match self {
            LegacyFormat::Ggml => "ggml",
            LegacyFormat::Ggmf => "ggmf",
            LegacyFormat::Ggjt => "ggjt",
            LegacyFormat::Ggla => "ggla",
            LegacyFormat::Ggsn => "ggsn",
            LegacyFormat::Ggsq => "ggsq",
            LegacyFormat::Rwkv => "rwkv-cpp",
        }
    }

    /// What a person calls it, with its version: "a GGJT v3 model file".
    pub fn describe(self, version: Option<u32>) -> String {
        let v = version.map(|v| format!(" v{v}")).unwrap_or_default();
        match self {
            LegacyFormat::Ggml => "an unversioned GGML model file".to_string(),
            LegacyFormat::Ggmf => format!("a GGMF{v} model file"),
            LegacyFormat::Ggjt => format!("a GGJT{v} model file"),
            LegacyFormat::Ggla => format!("a GGLA{v} (llama.cpp LoRA adapter) file"),
            LegacyFormat::Ggsn => format!("a llama.cpp session file{v}"),
            LegacyFormat::Ggsq => format!("a llama.cpp sequence-state file{v}"),
            LegacyFormat::Rwkv => format!("an rwkv.cpp{v} model file"),
        }
    }

    /// What a person calls it.
    pub fn title(self) -> &'static str {
        match self {
            LegacyFormat::Ggml => "an unversioned GGML model file",
            LegacyFormat::Ggmf => "a GGMF model file",
            LegacyFormat::Ggjt => "a GGJT model file",
            LegacyFormat::Ggla => "a GGLA (llama.cpp LoRA adapter) file",
            LegacyFormat::Ggsn => "a llama.cpp session file",
            LegacyFormat::Ggsq => "a llama.cpp sequence-state file",
            LegacyFormat::Rwkv => "an rwkv.cpp model file",
        }
    }
}

/// What the first bytes say the file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detected {
    /// GGUF v2 or v3 in the given byte order.
    Gguf {
        /// 2 or 3.
        version: u32,
        /// Byte order, inferred from the version field.
        order: ByteOrder,
    },
    /// GGUF v1 (2023): u32 counts and lengths; obsolete.
    GgufV1 {
        /// Byte order of the version field.
        order: ByteOrder,
        /// The u32 tensor count of the v1 header, if present.
        tensor_count: Option<u32>,
        /// The u32 kv count of the v1 header, if present.
        kv_count: Option<u32>,
    },
    /// GGUF magic, but a version that is 0 or newer than 3.
    GgufBadVersion {
        /// The version read little-endian.
        version: u32,
    },
    /// A legacy format, with its version where it has one.
    Legacy {
        /// Which format.
        format: LegacyFormat,
        /// The version field, for versioned formats.
        version: Option<u32>,
    },
    /// `FUGG`: a byte-swapped magic that no ggml writer produces.
    SwappedMagic,
    /// Fewer than 4 bytes.
    TooShort,
    /// The GGUF magic and fewer than 4 bytes after it.
    GgufTruncated,
    /// Anything else.
    Unknown {
        /// The first four bytes.
        magic: [u8; 4],
    },
}

fn u32_le(b: &[u8], at: usize) -> Option<u32> {
    let bytes: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_le_bytes(bytes))
}

/// Detects the format from the first bytes of a file.
pub fn detect(buf: &[u8]) -> Detected {
    let Some(magic) = buf.get(..4).and_then(|m| <[u8; 4]>::try_from(m).ok()) else {
        return Detected::TooShort;
    };
    let version = u32_le(buf, 4);
    match &magic {
        b"GGUF" => detect_gguf_version(buf, version),
        b"FUGG" => Detected::SwappedMagic,
        b"lmgg" => Detected::Legacy { format: LegacyFormat::Ggml, version: None },
        b"fmgg" => match version {
            Some(100 | 101) => Detected::Legacy { format: LegacyFormat::Rwkv, version },
            _ => Detected::Legacy { format: LegacyFormat::Ggmf, version },
        },
        b"tjgg" => Detected::Legacy { format: LegacyFormat::Ggjt, version },
        b"algg" => Detected::Legacy { format: LegacyFormat::Ggla, version },
        b"nsgg" => Detected::Legacy { format: LegacyFormat::Ggsn, version },
        b"qsgg" => Detected::Legacy { format: LegacyFormat::Ggsq, version },
        _ => Detected::Unknown { magic },
    }
}

fn detect_gguf_version(buf: &[u8], version: Option<u32>) -> Detected {
    let Some(v) = version else {
        return Detected::GgufTruncated;
    };
    let swapped = v.swap_bytes();
    let (v, order) = match (v, swapped) {
        (2 | 3, _) => (v, ByteOrder::LittleEndian),
        (1, _) => (1, ByteOrder::LittleEndian),
        // ggml's heuristic: a version whose low 16 bits are zero was
        // written in the other byte order.
        (_, 1..=3) if v & 0xFFFF == 0 => (swapped, ByteOrder::BigEndian),
        _ => return Detected::GgufBadVersion { version: v },
    };
    if v == 1 {
        let read = |at| {
            let x = u32_le(buf, at)?;
            Some(if order == ByteOrder::BigEndian { x.swap_bytes() } else { x })
        };
        return Detected::GgufV1 { order, tensor_count: read(8), kv_count: read(12) };
    }
    Detected::Gguf { version: v, order }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_orders() {
        assert_eq!(detect(b"GGUF\x03\0\0\0"), Detected::Gguf { version: 3, order: ByteOrder::LittleEndian });
        assert_eq!(detect(b"GGUF\0\0\0\x03"), Detected::Gguf { version: 3, order: ByteOrder::BigEndian });
        assert_eq!(detect(b"GGUF\0\0\0\x02"), Detected::Gguf { version: 2, order: ByteOrder::BigEndian });
        assert_eq!(detect(b"GGUF\x04\0\0\0"), Detected::GgufBadVersion { version: 4 });
        assert_eq!(detect(b"GGUF\0\0\0\0"), Detected::GgufBadVersion { version: 0 });
        assert_eq!(detect(b"GGUF\0\0\x01\0"), Detected::GgufBadVersion { version: 0x10000 });
        assert!(matches!(
            detect(b"GGUF\x01\0\0\0\x05\0\0\0\x07\0\0\0"),
            Detected::GgufV1 { tensor_count: Some(5), kv_count: Some(7), .. }
        ));
        assert_eq!(detect(b"tjgg\x03\0\0\0"), Detected::Legacy { format: LegacyFormat::Ggjt, version: Some(3) });
        assert_eq!(detect(b"fmgg\x65\0\0\0"), Detected::Legacy { format: LegacyFormat::Rwkv, version: Some(101) });
        assert_eq!(detect(b"fmgg\x01\0\0\0"), Detected::Legacy { format: LegacyFormat::Ggmf, version: Some(1) });
        assert_eq!(detect(b"GG"), Detected::TooShort);
    }
}
