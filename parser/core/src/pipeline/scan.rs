//! What a scan of many files needs of each besides its reports.
//!
//! A fleet scan (the Python package's `gguf_validate.scan`) judges every
//! file under every profile in one pass ([`crate::Validator::with_every_profile`]:
//! one read, one parse) and tabulates a few facts of its metadata,
//! [`facts`], taken from that validation's parse.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::io::{ByteSource, ReadError};
use crate::parse::value::Value;

/// The metadata key of the default chat template; named ones are
/// `tokenizer.chat_template.NAME`.
pub const CHAT_TEMPLATE_KEY: &str = "tokenizer.chat_template";

/// Chat templates a file's [`Facts`] list at most (a file may name many).
pub const MAX_TEMPLATES: usize = 64;

/// What a scan tabulates of a file besides its reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// `general.file_type` (llama.cpp's `llama_ftype`), when a u32.
    pub file_type: Option<u32>,
    /// Each chat template (key, SHA-256 of its text in lowercase hex), in
    /// file order, at most [`MAX_TEMPLATES`].
    pub templates: Vec<(String, String)>,
}

/// The [`Facts`] of a validated file, from the validation's own parse
/// (none for what is not GGUF v2/v3).
pub fn facts(validated: &crate::Validated) -> Facts {
    validated.parsed().map(|p| facts_of(&p)).unwrap_or_default()
}

/// The [`Facts`] of a parsed file.
fn facts_of(parsed: &crate::parse::Parsed<'_>) -> Facts {
    use sha2::Digest;
    let file_type = match parsed.file.get("general.file_type").map(|kv| kv.value) {
        Some(Value::U32(t)) => Some(t),
        _ => None,
    };
    let templates = parsed
        .file
        .kvs
        .iter()
        .filter_map(|kv| {
            let key = kv.key.as_str()?;
            let named =
                key.strip_prefix(CHAT_TEMPLATE_KEY).is_some_and(|rest| rest.is_empty() || rest.starts_with('.'));
            let text = kv.value.as_string().filter(|_| named)?;
            let digest = sha2::Sha256::digest(text.bytes);
            Some((key.to_string(), digest.iter().map(|b| format!("{b:02x}")).collect()))
        })
        .take(MAX_TEMPLATES)
        .collect();
    Facts { file_type, templates }
}

/// A source whose first bytes are already in memory: reads inside them are
/// copies, the rest goes to `rest` (a remote file's padding, say).
#[derive(Debug)]
pub struct PrefixSource<'a> {
    /// The file's first bytes.
    pub prefix: &'a [u8],
    /// The file.
    pub rest: &'a dyn ByteSource,
}

impl ByteSource for PrefixSource<'_> {
    fn len(&self) -> u64 {
        self.rest.len()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let from = usize::try_from(offset).ok();
        let to = from.and_then(|f| f.checked_add(buf.len()));
        match (from, to) {
            (Some(f), Some(t)) if t <= self.prefix.len() => {
                buf.copy_from_slice(self.prefix.get(f..t).unwrap_or_default());
                Ok(())
            }
            _ => self.rest.read_exact_at(offset, buf),
        }
    }

    fn first_read(&self) -> u64 {
        u64::try_from(self.prefix.len()).unwrap_or(u64::MAX).max(1)
    }

    fn sized_reads(&self) -> bool {
        true
    }

    fn round_trips(&self) -> bool {
        self.rest.round_trips()
    }

    fn read_optional_at(&self, offset: u64, buf: &mut [u8]) -> Result<bool, ReadError> {
        let end = usize::try_from(offset).ok().and_then(|f| f.checked_add(buf.len()));
        if end.is_some_and(|e| e <= self.prefix.len()) {
            return self.read_exact_at(offset, buf).map(|()| true);
        }
        self.rest.read_optional_at(offset, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::SliceSource;
    use crate::report::Options;
    use crate::rules::Profile;
    use crate::write::{GgufModel, OwnedValue};

    #[test]
    fn one_read_gives_the_verdict_of_each_profile_and_the_facts() {
        let mut m = GgufModel::new();
        m.kv("general.architecture", OwnedValue::str("plain"));
        m.kv("general.file_type", OwnedValue::U32(15));
        m.kv("tokenizer.chat_template", OwnedValue::str("{{ messages }}"));
        m.kv("tokenizer.chat_template.tool_use", OwnedValue::str("{{ tools }}"));
        m.kv("tokenizer.chat_template_not", OwnedValue::str("not a template"));
        let bytes = m.to_bytes();
        let validated = crate::Validator::default().with_every_profile(true).validate(&SliceSource(&bytes)).unwrap();
        for p in Profile::ALL {
            let alone = crate::Validator::new(Options::new(p)).validate_bytes(&bytes).report;
            assert_eq!(validated.report_under(p), Some(&alone), "{p:?}");
        }
        let facts = facts(&validated);
        assert_eq!(facts.file_type, Some(15));
        let keys: Vec<&str> = facts.templates.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["tokenizer.chat_template", "tokenizer.chat_template.tool_use"]);
        // sha256("{{ messages }}")
        let sum: String = {
            use sha2::Digest;
            sha2::Sha256::digest(b"{{ messages }}").iter().map(|b| format!("{b:02x}")).collect()
        };
        assert_eq!(facts.templates[0].1, sum);
        let not_gguf = crate::Validator::default().validate_bytes(b"not gguf");
        assert_eq!(super::facts(&not_gguf), Facts::default());
    }

    #[test]
    fn a_prefix_source_reads_past_its_prefix_from_the_file() {
        let bytes: Vec<u8> = (0..=255u8).collect();
        let src = PrefixSource { prefix: &bytes[..100], rest: &SliceSource(&bytes) };
        let mut buf = [0u8; 50];
        src.read_exact_at(80, &mut buf).unwrap();
        assert_eq!(buf[..], bytes[80..130]);
        src.read_exact_at(10, &mut buf).unwrap();
        assert_eq!(buf[..], bytes[10..60]);
        assert!(src.read_exact_at(250, &mut buf).is_err());
    }
}
