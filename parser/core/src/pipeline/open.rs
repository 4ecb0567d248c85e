//! The front door: an [`Input`] is opened here and nowhere else. A path
//! under the run's [`OpenPolicy`], a URL through the run's [`UrlOpener`]
//! (read in ranges), bytes in memory: each becomes one [`Opened`], whose
//! [`Opened::source`] every command reads (validation, the data scan,
//! `dump`, `derive`, `hash`, importance matrices, split sets, the hub
//! scan). A new kind of input is one variant of [`Input`] and one arm of
//! [`Input::open`].
#![forbid(unsafe_code)]

use web_time::Instant;

use super::Input;
use crate::io::{self as gio, ByteSource, OpenPolicy};
use crate::remote::{OpenFailure, RemoteSource, RemoteSummary, UrlOpener};

/// One opened input: its bytes, however they are reached.
pub enum Opened<'a> {
    /// A local file (mapped or read).
    Local(gio::Source),
    /// A URL, read in ranges.
    Remote(Box<dyn RemoteSource>),
    /// Bytes in memory.
    Memory(gio::SliceSource<'a>),
    /// A source the front end made ([`Input::Source`]).
    Given(&'a dyn ByteSource),
}

impl std::fmt::Debug for Opened<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            Opened::Local(_) => "Local",
            Opened::Remote(_) => "Remote",
            Opened::Memory(_) => "Memory",
            Opened::Given(_) => "Given",
        };
        write!(f, "Opened::{kind}({} bytes)", self.source().len())
    }
}

impl Opened<'_> {
    /// The input's bytes.
    pub fn source(&self) -> &dyn ByteSource {
        match self {
            Opened::Local(s) => s,
            Opened::Remote(s) => s.as_ref(),
            Opened::Memory(s) => s,
            Opened::Given(s) => *s,
        }
    }

    /// The local regular file, when the input is one (a copy of its bytes
    /// can then be the kernel's).
    pub fn file(&self) -> Option<&std::fs::File> {
        match self {
            Opened::Local(s) => s.file(),
            _ => None,
        }
    }

    /// Before tensor data is read: a remote file must be readable in ranges
    /// (the data is read in parallel ranges, never kept), and drops the
    /// metadata ranges it kept. Local files and bytes are always ready.
    pub fn before_data(&self) -> Result<(), String> {
        if let Opened::Remote(s) = self {
            if !s.supports_ranges() {
                return Err("the server ignores range requests, and tensor data is read in ranges (download the file)"
                    .to_string());
            }
            s.release_cache();
        }
        Ok(())
    }

    /// What reading a remote file has cost so far.
    pub fn remote_summary(&self) -> Option<RemoteSummary> {
        match self {
            Opened::Remote(s) => Some(s.summary()),
            _ => None,
        }
    }
}

impl Input {
    /// Opens the input: a path under `policy`, a URL through `opener` (to
    /// be read by `deadline` when one is given, besides the opener's own
    /// per-file deadline), bytes as they are. A file or URL that is not
    /// there says so (`not_found`): a sibling shard left out of its set.
    pub fn open(
        &self,
        policy: &OpenPolicy,
        opener: Option<&dyn UrlOpener>,
        deadline: Option<Instant>,
    ) -> Result<Opened<'_>, OpenFailure> {
        match self {
            Input::Path(p) => gio::open(p, policy).map(Opened::Local).map_err(|e| OpenFailure {
                not_found: matches!(&e, gio::OpenError::Io(io) if io.kind() == std::io::ErrorKind::NotFound),
                message: e.to_string(),
            }),
            Input::Url(url) => match opener {
                Some(o) => o.open(url, deadline).map(Opened::Remote),
                None => Err(OpenFailure {
                    message: "URLs cannot be read: no HTTP source was set up for this run".into(),
                    not_found: false,
                }),
            },
            Input::Bytes { bytes, .. } => Ok(Opened::Memory(gio::SliceSource(bytes))),
            Input::Source { source, .. } => Ok(Opened::Given(source.0.as_ref())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_input_opens_to_its_bytes() {
        let bytes = Input::bytes("m.gguf", b"GGUF".to_vec());
        let opened = bytes.open(&OpenPolicy::default(), None, None).ok();
        assert_eq!(opened.map(|o| o.source().len()), Some(4));

        let missing = Input::Path("no/such/file.gguf".into());
        let failure = missing.open(&OpenPolicy::default(), None, None).err();
        assert_eq!(failure.map(|f| f.not_found), Some(true));

        let url = Input::Url("https://example.invalid/m.gguf".into());
        let failure = url.open(&OpenPolicy::default(), None, None).err();
        assert!(failure.is_some_and(|f| !f.not_found && f.message.contains("no HTTP source")));
    }
}
