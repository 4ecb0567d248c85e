//! A parse kept apart from the metadata it borrows from, and given again
//! over the same metadata without walking it: how every step after a
//! validation ([`crate::Validated::parsed`]: a data scan, a hash, a dump,
//! a split set's checks) takes the validation's own parse (a parse
//! borrows its bytes, which the validation owns; holding both in one value
//! would take unsafe code).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use super::pairs::Pairs;
use super::primitives::{ByteOrder, Str, StringSpan};
use super::{DecodeError, GgufFile, Header, KeyIndex, Parsed, Spans, TensorInfo};
use crate::scratch::PagedVec;

/// A [`Parsed`] without its bytes: the pairs' records, each tensor info's
/// fields with where its name and dims lie, the spans it stepped over.
/// [`KeptParse::parsed`] gives the same parse over the same metadata.
#[derive(Clone, Debug)]
pub struct KeptParse {
    header: Header,
    order: ByteOrder,
    records: PagedVec<[u64; 2]>,
    tensors: Vec<KeptTensor>,
    infos_end: u64,
    file_len: u64,
    fatal: Option<DecodeError>,
    spans: Vec<StringSpan>,
    /// The length of the metadata it was parsed from: other bytes are
    /// refused.
    buf_len: usize,
}

/// A [`TensorInfo`] whose name and dims are offsets into the metadata.
#[derive(Clone, Copy, Debug)]
struct KeptTensor {
    index: usize,
    name_offset: u64,
    name_len: usize,
    n_dims_offset: u64,
    n_dims: u32,
    dims_offset: u64,
    dims_len: usize,
    order: ByteOrder,
    type_offset: u64,
    type_id: u32,
    offset_field: u64,
    data_offset: u64,
}

impl KeptParse {
    /// What `parsed` needs besides the bytes it was parsed from (a copy of
    /// its pairs' records, 16 bytes a pair; no walk).
    pub fn of(parsed: &Parsed<'_>) -> KeptParse {
        let kept = KeptParse::shape(parsed);
        KeptParse { records: parsed.file.kvs.records().clone(), ..kept }
    }

    /// [`KeptParse::of`], taking the parse: its pairs' records are moved,
    /// not copied (what a validation keeps of its own parse).
    pub fn keep(parsed: Parsed<'_>) -> KeptParse {
        let kept = KeptParse::shape(&parsed);
        KeptParse { records: parsed.file.kvs.into_records(), ..kept }
    }

    /// All of a kept parse but the records (left empty).
    fn shape(parsed: &Parsed<'_>) -> KeptParse {
        let file = &parsed.file;
        let tensors = file
            .tensors
            .iter()
            .map(|t| KeptTensor {
                index: t.index,
                name_offset: t.name.offset,
                name_len: t.name.bytes.len(),
                n_dims_offset: t.n_dims_offset,
                n_dims: t.n_dims,
                dims_offset: t.dims_offset,
                dims_len: t.dims_raw.len(),
                order: t.order,
                type_offset: t.type_offset,
                type_id: t.type_id,
                offset_field: t.offset_field,
                data_offset: t.data_offset,
            })
            .collect();
        KeptParse {
            header: file.header,
            order: file.kvs.order(),
            records: PagedVec::default(),
            tensors,
            infos_end: file.infos_end,
            file_len: file.file_len,
            fatal: parsed.fatal.clone(),
            spans: file.spans.0.to_vec(),
            buf_len: file.kvs.buf_len(),
        }
    }

    /// The parse again, over `metadata`: the bytes it was kept from (of
    /// their length, and every name and dims inside them; `None` for
    /// other bytes).
    pub fn parsed<'a>(&'a self, metadata: &'a [u8]) -> Option<Parsed<'a>> {
        if metadata.len() != self.buf_len {
            return None;
        }
        let bytes = |at: u64, len: usize| {
            let at = usize::try_from(at).ok()?;
            metadata.get(at..at.checked_add(len)?)
        };
        let tensors = self
            .tensors
            .iter()
            .map(|t| {
                Some(TensorInfo {
                    index: t.index,
                    name: Str { offset: t.name_offset, bytes: bytes(t.name_offset.checked_add(8)?, t.name_len)? },
                    n_dims_offset: t.n_dims_offset,
                    n_dims: t.n_dims,
                    dims_raw: bytes(t.dims_offset, t.dims_len)?,
                    dims_offset: t.dims_offset,
                    order: t.order,
                    type_offset: t.type_offset,
                    type_id: t.type_id,
                    offset_field: t.offset_field,
                    data_offset: t.data_offset,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let file = GgufFile {
            header: self.header,
            kvs: Pairs::over_kept(metadata, self.order, &self.records),
            tensors,
            infos_end: self.infos_end,
            file_len: self.file_len,
            key_index: KeyIndex::default(),
            spans: Spans(&self.spans),
        };
        Some(Parsed { file, fatal: self.fatal.clone() })
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::parse::parse_prefix;

    /// Every GGUF file of the corpus's split sets and container cases: the
    /// parse given again over its bytes is the parse, and over other bytes
    /// (shorter, longer) none.
    #[test]
    fn a_kept_parse_is_the_parse_again_over_the_same_bytes() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
        let mut files = Vec::new();
        for dir in ["split", "gguf", "models"] {
            let mut stack = vec![root.join(dir)];
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).unwrap().flatten() {
                    let p = e.path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if p.extension().is_some_and(|x| x == "gguf") {
                        files.push(p);
                    }
                }
            }
        }
        let mut kept_some = 0;
        for path in &files {
            let bytes = std::fs::read(path).unwrap();
            let Some(parsed) = parse_prefix(&bytes, bytes.len() as u64) else { continue };
            let kept = KeptParse::of(&parsed);
            let again = kept.parsed(&bytes).unwrap_or_else(|| panic!("{}", path.display()));
            assert_eq!(again, parsed, "{}", path.display());
            assert_eq!(
                again.file.get("split.count").map(|kv| kv.index),
                parsed.file.get("split.count").map(|kv| kv.index)
            );
            assert!(kept.parsed(&bytes[..bytes.len() - 1]).is_none());
            assert!(kept.parsed(&[bytes.as_slice(), &[0]].concat()).is_none());
            kept_some += 1;
        }
        assert!(kept_some > 400, "{kept_some} files");
    }
}
