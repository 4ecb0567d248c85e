//! What a front end validates: each argument resolved once into an
//! [`Input`] (a local path, a URL, or bytes in memory), which knows how it
//! is shown, which path config globs see, and its sibling shards.
//!
//! Whether an argument is a URL is decided here, once ([`Input::from_path`]);
//! nothing downstream looks at a path's text again.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::io::ByteSource;
use crate::parse::escape_bytes;
use crate::remote;
use crate::split_name;

/// One thing to validate.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Input {
    /// A file (or, when special files are allowed, a FIFO or device) on
    /// this machine.
    Path(PathBuf),
    /// An `http://`, `https://` or `hf://` name, as given (it is opened by
    /// the run's [`remote::UrlOpener`], and shown without its query).
    Url(String),
    /// Bytes held in memory, validated as a whole file, under `name`.
    Bytes {
        /// What reports call it.
        name: String,
        /// The file's bytes.
        bytes: Arc<[u8]>,
    },
    /// Bytes reached through a source the front end made (a browser's
    /// `Blob` or a `fetch` of ranges, in the WebAssembly build), under
    /// `name`: read as a file is, in positioned reads.
    Source {
        /// What reports call it.
        name: String,
        /// Where its bytes come from.
        source: SharedSource,
    },
}

/// A [`ByteSource`] an [`Input`] holds: two are the same input when they are
/// the same source object.
#[derive(Clone, Debug)]
pub struct SharedSource(pub Arc<dyn ByteSource>);

impl PartialEq for SharedSource {
    fn eq(&self, other: &SharedSource) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedSource {}

impl std::hash::Hash for SharedSource {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(Arc::as_ptr(&self.0).cast::<()>(), state);
    }
}

impl Input {
    /// An argument as given on a command line or in a list: a URL when its
    /// text starts with `http://`, `https://` or `hf://` (any case), else a
    /// path.
    pub fn from_path(path: PathBuf) -> Input {
        match path.to_str() {
            Some(s) if remote::is_url(s) => Input::Url(s.to_string()),
            _ => Input::Path(path),
        }
    }

    /// Bytes in memory under `name`.
    pub fn bytes(name: impl Into<String>, bytes: impl Into<Arc<[u8]>>) -> Input {
        Input::Bytes { name: name.into(), bytes: bytes.into() }
    }

    /// The URL text, when the input is one.
    pub fn url(&self) -> Option<&str> {
        match self {
            Input::Url(u) => Some(u),
            _ => None,
        }
    }

    /// The local path, when the input is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Input::Path(p) => Some(p),
            _ => None,
        }
    }

    /// How people see the input: a URL without its query (it may hold a
    /// signature) nor credentials; control characters, ESC, bidi controls
    /// and bytes that are not UTF-8 escaped (`\n`, `\u{1b}`, `\xff`) and
    /// `\` doubled, so a name can neither forge a line of output nor lose
    /// bytes.
    pub fn shown(&self) -> String {
        match self {
            Input::Path(p) => escape_bytes(p.as_os_str().as_encoded_bytes(), true),
            Input::Url(u) => escape_bytes(remote::shown(u).as_bytes(), true),
            Input::Bytes { name, .. } | Input::Source { name, .. } => escape_bytes(name.as_bytes(), true),
        }
    }

    /// The input in a JSON report: the path itself when it is UTF-8 (JSON
    /// escapes control characters losslessly), [`Input::shown`]'s form
    /// otherwise; a URL as shown (never a query string).
    pub fn json_name(&self) -> String {
        match self {
            Input::Path(p) => match p.to_str() {
                Some(s) => s.to_string(),
                None => self.shown(),
            },
            Input::Url(u) => remote::shown(u),
            Input::Bytes { name, .. } | Input::Source { name, .. } => name.clone(),
        }
    }

    /// The path config globs and pins are matched against: a local path
    /// made absolute (a config found in a parent folder matches relative
    /// arguments), a URL as shown, a name as given.
    pub fn config_path(&self) -> PathBuf {
        match self {
            Input::Path(p) => std::path::absolute(p).unwrap_or_else(|_| p.clone()),
            Input::Url(u) => PathBuf::from(remote::shown(u)),
            Input::Bytes { name, .. } | Input::Source { name, .. } => PathBuf::from(name),
        }
    }

    /// The input's name in a split set's report: a URL as shown without
    /// the query marker (the set's name is made from it), a path or name as
    /// it is.
    pub fn shard_name(&self) -> String {
        match self {
            Input::Path(p) => p.to_string_lossy().into_owned(),
            Input::Url(u) => {
                let shown = remote::shown(u);
                shown.strip_suffix(remote::REDACTED_QUERY).map(str::to_string).unwrap_or(shown)
            }
            Input::Bytes { name, .. } | Input::Source { name, .. } => name.clone(),
        }
    }

    /// The shards of the split set the input is a shard of, in position
    /// order and the input among them: siblings by name in the same folder
    /// (`NAME-0000k-of-0000n.gguf`, at most `limits::MAX_SPLIT_SHARDS`), or
    /// for a URL every name its count gives (at most
    /// `limits::REMOTE_MAX_SET_SHARDS`: past that, `Err` says why the
    /// others are not read). An input whose name does not follow the
    /// pattern, or bytes in memory, is a set of one.
    pub fn shards(&self) -> Result<Vec<Input>, String> {
        match self {
            Input::Path(p) => Ok(split_name::siblings(p)
                .map_or_else(|| vec![self.clone()], |s| s.into_iter().map(Input::Path).collect())),
            Input::Url(u) => match remote::shard_inputs(u) {
                Some(Ok(shards)) => Ok(shards.into_iter().map(Input::Url).collect()),
                Some(Err(too_many)) => Err(too_many.to_string()),
                None => Ok(vec![self.clone()]),
            },
            Input::Bytes { .. } | Input::Source { .. } => Ok(vec![self.clone()]),
        }
    }

    /// What identifies the file across arguments, so a split set named
    /// twice (`*.gguf` over its shards) is validated once: a local path
    /// resolved through links, a URL or name as given.
    pub fn identity(&self) -> Input {
        match self {
            Input::Path(p) => Input::Path(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())),
            other => other.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths_once() {
        assert_eq!(Input::from_path("HTTPS://h/x.gguf".into()), Input::Url("HTTPS://h/x.gguf".into()));
        assert_eq!(Input::from_path("hf://o/r/x.gguf".into()), Input::Url("hf://o/r/x.gguf".into()));
        assert_eq!(Input::from_path("http:x.gguf".into()), Input::Path("http:x.gguf".into()));
        assert_eq!(Input::from_path("./https://x".into()), Input::Path("./https://x".into()));
    }

    #[test]
    fn urls_are_shown_without_query_or_credentials() {
        let u = Input::Url("https://user:pw@h/m-00001-of-00002.gguf?sig=secret".into());
        assert!(!u.shown().contains("secret") && !u.shown().contains("pw"), "{}", u.shown());
        assert!(!u.json_name().contains("secret"));
        assert!(!u.config_path().to_string_lossy().contains("secret"));
        assert!(!u.shard_name().contains("secret") && !u.shard_name().contains(remote::REDACTED_QUERY));
        assert_eq!(u.shards().map(|s| s.len()), Ok(2));
    }

    #[test]
    fn names_cannot_forge_lines() {
        let p = Input::Path("a\nb\u{1b}[31m.gguf".into());
        assert!(!p.shown().contains('\n') && !p.shown().contains('\u{1b}'), "{}", p.shown());
        let b = Input::bytes("x\ny", vec![1u8, 2]);
        assert_eq!(b.shown(), "x\\ny");
        assert_eq!(b.shards(), Ok(vec![b.clone()]));
    }
}
