//! One read, several verdicts: what a scan of many files needs of each.
//!
//! A fleet scan (the Python package's `gguf_validate.scan`) judges every
//! file under more than one profile. [`judge`] reads the metadata once,
//! through the source it is given (for a remote file, the range requests
//! of one validation), and validates the bytes read under each profile,
//! the later ones from memory ([`PrefixSource`]); it also picks out the
//! facts a scan tabulates besides the reports ([`Facts`]).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::io::{ByteSource, ReadError};
use crate::parse::value::Value;
use crate::report::{Options, Report};
use crate::rules::Profile;

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

/// A file judged under several profiles.
#[derive(Clone, Debug)]
pub struct Judged {
    /// One report per profile asked for, in that order.
    pub reports: Vec<Report>,
    /// What the metadata says.
    pub facts: Facts,
}

/// Validates `src` under `options` with each of `profiles` in turn (the
/// other options unchanged), reading its metadata once.
pub fn judge(src: &dyn ByteSource, options: &Options, profiles: &[Profile]) -> Result<Judged, ReadError> {
    let Some(first) = profiles.first() else {
        return Ok(Judged { reports: Vec::new(), facts: Facts::default() });
    };
    // One read, one parse, one pass: every profile's report from it.
    // The facts from the validation's own parse (a parse without the caps
    // when it stopped under them).
    let mut visited = None;
    let opts = Options { profile: *first, all_profiles: true, ..options.clone() };
    let crate::Validated { report, metadata } =
        crate::validate_source_visiting(src, &opts, &mut |parsed| visited = Some(facts_of(parsed)))?;
    let reports = profiles.iter().filter_map(|p| report.profiles.iter().find(|r| r.profile == *p).cloned()).collect();
    Ok(Judged { reports, facts: visited.unwrap_or_else(|| facts(&metadata, src.len())) })
}

/// The [`Facts`] of a file of `file_len` bytes whose metadata is
/// `metadata` (none for what is not GGUF v2/v3).
pub fn facts(metadata: &[u8], file_len: u64) -> Facts {
    crate::parse::parse_prefix(metadata, file_len).map(|p| facts_of(&p)).unwrap_or_default()
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
        let profiles = [Profile::Strict, Profile::Spec, Profile::Ggml];
        let judged = judge(&SliceSource(&bytes), &Options::default(), &profiles).unwrap();
        for (p, r) in profiles.iter().zip(&judged.reports) {
            assert_eq!(*r, crate::validate_bytes(&bytes, &Options::new(*p)), "{p:?}");
        }
        assert_eq!(judged.facts.file_type, Some(15));
        let keys: Vec<&str> = judged.facts.templates.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["tokenizer.chat_template", "tokenizer.chat_template.tool_use"]);
        // sha256("{{ messages }}")
        let sum: String = {
            use sha2::Digest;
            sha2::Sha256::digest(b"{{ messages }}").iter().map(|b| format!("{b:02x}")).collect()
        };
        assert_eq!(judged.facts.templates[0].1, sum);
        assert_eq!(facts(b"not gguf", 8), Facts::default());
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
