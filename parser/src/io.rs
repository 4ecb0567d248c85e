//! File access: the only module that opens files, and the only place in
//! the crate with `unsafe` (one memory map).
//!
//! Validation reads a file as one byte slice. For files of any size that
//! slice is a read-only memory map, so that metadata validation touches
//! only the pages it reads (a few MB of a 100 GB model) and `--check-data`
//! can scan tensors in place from every core.

use std::fs::File;
use std::io::{self, Read};
use std::ops::Deref;
use std::path::Path;

/// Files below this size are read into memory instead of mapped.
const MAP_THRESHOLD: u64 = 1 << 20;

/// The bytes of a file: mapped, or read into memory.
#[derive(Debug)]
pub enum FileBytes {
    /// A read-only memory map of the whole file.
    Mapped(memmap2::Mmap),
    /// The file's bytes, read into memory.
    Owned(Vec<u8>),
}

impl Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m) => m,
            FileBytes::Owned(v) => v,
        }
    }
}

/// Opens a file for validation: maps it when it is large, reads it otherwise.
/// Directories and other non-regular files are refused with an error.
pub fn open(path: &Path) -> io::Result<FileBytes> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "is a directory"));
    }
    if !meta.is_file() || meta.len() < MAP_THRESHOLD {
        // Small files, pipes and devices: read (a device has no size to
        // trust, so the read is bounded by what it yields).
        let mut buf = Vec::new();
        (&file).read_to_end(&mut buf)?;
        return Ok(FileBytes::Owned(buf));
    }
    map(&file)
}

/// Maps `file` read-only.
#[allow(unsafe_code)]
fn map(file: &File) -> io::Result<FileBytes> {
    // SAFETY: the map is read-only and private to this process; the bytes
    // are only ever read through `&[u8]`. The one hazard left is another
    // process truncating the file while it is mapped (reads past the new
    // end raise SIGBUS). A validator is run on files at rest; `--no-mmap`
    // reads the file instead for callers who cannot rule that out.
    let map = unsafe { memmap2::Mmap::map(file)? };
    Ok(FileBytes::Mapped(map))
}

/// Reads a whole file into memory without mapping it.
pub fn read(path: &Path) -> io::Result<FileBytes> {
    Ok(FileBytes::Owned(std::fs::read(path)?))
}
