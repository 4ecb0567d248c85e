//! Shard file names of a split set and finding a shard's siblings.
//!
//! `gguf-split` and llama.cpp name shard `k` (0-based) of `n` as
//! `PREFIX-%05d-of-%05d.gguf` with `k + 1` and `n` (`llama_split_path`,
//! `src/llama.cpp`): `model-00001-of-00003.gguf` is the first of three.
//! [`parse`] reads such a name (a file name, a path or a URL: the prefix is
//! everything before the suffix); [`siblings`] lists the files of a
//! directory that belong to the same set. Nothing here reads a file.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::path::{Path, PathBuf};

use crate::limits;

/// A shard name taken apart: `PREFIX-0000k-of-0000n.gguf`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitName<'a> {
    /// Everything before `-0000k-of-0000n.gguf` (directories included).
    pub prefix: &'a str,
    /// The shard's position in the set, 0-based (`k - 1`).
    pub position: u32,
    /// The number of shards the name claims (`n`).
    pub count: u32,
}

/// Length of `-00001-of-00003.gguf`.
const SUFFIX_LEN: usize = 20;

/// Reads a shard name; `None` unless it ends in `-KKKKK-of-NNNNN.gguf` with
/// five digits each (the width of `%05d` for any u16), `1 <= k <= n`, and a
/// non-empty prefix (llama.cpp's `llama_split_prefix` requires one).
pub fn parse(name: &str) -> Option<SplitName<'_>> {
    let cut = name.len().checked_sub(SUFFIX_LEN).filter(|c| *c > 0)?;
    let (prefix, suffix) = (name.get(..cut)?, name.get(cut..)?.as_bytes());
    let digits = |s: &[u8]| -> Option<u32> {
        s.iter().try_fold(0u32, |acc, b| {
            let d = b.is_ascii_digit().then(|| b.checked_sub(b'0')).flatten()?;
            acc.checked_mul(10)?.checked_add(u32::from(d))
        })
    };
    let (k, n) = match suffix {
        [b'-', k @ .., b'.', b'g', b'g', b'u', b'f'] => match k {
            [a, b, c, d, e, b'-', b'o', b'f', b'-', rest @ ..] if rest.len() == 5 => {
                (digits(&[*a, *b, *c, *d, *e])?, digits(rest)?)
            }
            _ => return None,
        },
        _ => return None,
    };
    (k >= 1 && k <= n).then(|| SplitName { prefix, position: k.saturating_sub(1), count: n })
}

/// The name of shard `position` (0-based) of `count`, as llama.cpp writes it.
pub fn shard_name(prefix: &str, position: u32, count: u32) -> String {
    format!("{prefix}-{:05}-of-{count:05}.gguf", position.saturating_add(1))
}

/// A set's display name: `PREFIX-*-of-NNNNN.gguf`.
pub fn set_name(prefix: &str, count: u32) -> String {
    format!("{prefix}-*-of-{count:05}.gguf")
}

/// The files of `path`'s split set that exist, `path` included, in shard
/// order: the entries of its directory named `PREFIX-KKKKK-of-NNNNN.gguf`
/// with its prefix and count. Only names that exist are looked at (one
/// directory listing, whatever the count says), and at most
/// [`limits::MAX_SPLIT_SHARDS`] are returned (the lowest positions). `None`
/// when `path`'s name is not a shard name or not UTF-8.
pub fn siblings(path: &Path) -> Option<Vec<PathBuf>> {
    let file_name = path.file_name()?.to_str()?;
    let own = parse(file_name)?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut found: Vec<(u32, PathBuf)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(s) = parse(name) else { continue };
            if s.prefix == own.prefix && s.count == own.count && s.position != own.position {
                found.push((s.position, path.with_file_name(name)));
            }
        }
    }
    found.push((own.position, path.to_path_buf()));
    found.sort();
    found.truncate(limits::MAX_SPLIT_SHARDS);
    if !found.iter().any(|(p, _)| *p == own.position) {
        // The file asked about is always part of its own set.
        found.pop();
        found.push((own.position, path.to_path_buf()));
    }
    Some(found.into_iter().map(|(_, p)| p).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_llama_split_path() {
        assert_eq!(
            parse("dir/model-00002-of-00003.gguf"),
            Some(SplitName { prefix: "dir/model", position: 1, count: 3 })
        );
        assert_eq!(shard_name("dir/model", 1, 3), "dir/model-00002-of-00003.gguf");
        assert_eq!(parse("m-65535-of-65535.gguf").map(|s| s.position), Some(65534));
        for bad in [
            "model.gguf",
            "-00001-of-00003.gguf",    // no prefix
            "m-00000-of-00003.gguf",   // shards are numbered from 1
            "m-00004-of-00003.gguf",   // past the count
            "m-0001-of-00003.gguf",    // four digits
            "m-000001-of-000003.gguf", // six digits
            "m-00001-of-00003.GGUF",
            "m-00001_of-00003.gguf",
            "m-0000x-of-00003.gguf",
            "m-00001-of-00003.gguf.part",
            "ü-00001-of-0000",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn siblings_are_the_names_that_exist() {
        let dir = std::env::temp_dir().join(format!("gguf-split-names-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for n in ["m-00001-of-00003.gguf", "m-00003-of-00003.gguf", "m-00002-of-00004.gguf", "n-00002-of-00003.gguf"] {
            std::fs::write(dir.join(n), b"").unwrap();
        }
        let got = siblings(&dir.join("m-00003-of-00003.gguf")).unwrap();
        let names: Vec<_> = got.iter().map(|p| p.file_name().unwrap().to_str().unwrap().to_string()).collect();
        assert_eq!(names, ["m-00001-of-00003.gguf", "m-00003-of-00003.gguf"]);
        // A count of 65535 in the name costs one listing, not 65535 probes.
        let got = siblings(&dir.join("m-00001-of-65535.gguf")).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(siblings(&dir.join("model.gguf")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
