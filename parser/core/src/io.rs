//! Reading: the one module that opens files, and the random-access byte
//! source every other layer reads through.
//!
//! No file is mapped into memory. Validation reads the metadata with
//! positioned reads (`pread`) into a buffer ([`MetadataBytes`]) that grows
//! only as far as the metadata does, and `--check-data`, `dump --tensor`
//! and the padding checks read the ranges they need in bounded chunks. So:
//! - memory follows the metadata, not the file: a 100 GB model costs a few
//!   MB, with or without `--no-mmap`;
//! - a file that shrinks while it is read gives a [`ReadError::Shrunk`]
//!   (a clear error for that file), never a `SIGBUS`;
//! - only regular files are opened by default: FIFOs, sockets and devices
//!   are refused from their `stat` before any `open` (opening a FIFO for
//!   reading blocks until a writer appears), and when the caller opts in
//!   they are read once, up to a byte limit, into memory.
//!
//! The crate needs no `unsafe` at all.
#![forbid(unsafe_code)]

use std::fmt;
use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::Path;

/// Random access to the bytes of a file (or of anything that has a length
/// and can be read at an offset). Every layer that needs bytes beyond the
/// metadata - padding checks, the data scan, tensor dumps, and later
/// hashing and remote validation - reads through this trait.
pub trait ByteSource: Send + Sync + fmt::Debug {
    /// Length in bytes, as of opening.
    fn len(&self) -> u64;

    /// Whether the source is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fills `buf` with the bytes at `offset..offset + buf.len()`. Fails
    /// with [`ReadError::Shrunk`] when the source no longer has them.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError>;

    /// Whether `[offset, offset + len)` is known to be a hole of a sparse
    /// file (reads as zeros without being stored). `false` when unknown.
    fn is_hole(&self, offset: u64, len: u64) -> bool {
        let _ = (offset, len);
        false
    }

    /// How many bytes to read first when the metadata is read (then
    /// doubling while the parser asks for more): a local file starts at
    /// [`crate::limits::METADATA_FIRST_READ`], a remote one smaller, since
    /// every byte is transferred.
    fn first_read(&self) -> u64 {
        crate::limits::METADATA_FIRST_READ
    }

    /// Whether reads are cheap enough to read the metadata in a few reads
    /// sized by a walk of it ([`crate::parse::Extent`]) instead of by
    /// doubling: true for a local file and for memory. A remote source
    /// (one request per read) keeps doubling.
    fn sized_reads(&self) -> bool {
        false
    }

    /// Whether each read is a round trip (a request to a server): then the
    /// metadata's reads are sized by where the walk projects the metadata
    /// to end ([`crate::parse::Extent::projection`]), not only by what it
    /// needs next, so a large vocabulary takes a few reads, not one per
    /// section. Implies [`ByteSource::sized_reads`].
    fn round_trips(&self) -> bool {
        false
    }

    /// Appends the `len` bytes at `offset` to `buf`. The default fills
    /// zeroed space with [`ByteSource::read_exact_at`]; a file reads into
    /// the vector's spare capacity directly (no zeroing pass: the metadata
    /// of a large vocabulary is touched once, by the copy).
    fn read_append(&self, offset: u64, len: u64, buf: &mut Vec<u8>) -> Result<(), ReadError> {
        let from = buf.len();
        let n = usize::try_from(len).map_err(|_| ReadError::TooLarge { need: len, limit: u64::MAX, what: "a read" })?;
        buf.resize(from.saturating_add(n), 0);
        self.read_exact_at(offset, buf.get_mut(from..).unwrap_or_default())
    }

    /// A read for an optional check past the metadata (the padding between
    /// tensors, which lies in the data section). A source where such reads
    /// are costly (HTTP: a request each) may decline with `Ok(false)`; the
    /// check is then reported as not made. By default, a plain read.
    fn read_optional_at(&self, offset: u64, buf: &mut [u8]) -> Result<bool, ReadError> {
        self.read_exact_at(offset, buf).map(|()| true)
    }
}

/// A read that could not be served.
#[derive(Debug)]
pub enum ReadError {
    /// The file ended before `offset + len`: it shrank after it was opened
    /// (another process truncated or rewrote it).
    Shrunk {
        /// Where the read started.
        offset: u64,
        /// Bytes asked for.
        len: u64,
        /// The length the file had when it was opened.
        opened_len: u64,
    },
    /// The operating system reported an error.
    Io {
        /// Where the read started.
        offset: u64,
        /// The error.
        error: io::Error,
    },
    /// The bytes needed in memory exceed a limit (see the message).
    TooLarge {
        /// Bytes that would be needed.
        need: u64,
        /// The limit.
        limit: u64,
        /// What needed them.
        what: &'static str,
    },
    /// The caller gave up on the read (time limit).
    Cancelled,
    /// The file is not the one that was opened any more (a remote file
    /// replaced while it was read: another `ETag`, another length).
    Changed {
        /// Where the read started.
        offset: u64,
        /// What told (no URL: they may carry signatures).
        detail: String,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Shrunk { offset, len, opened_len } => write!(
                f,
                "the file changed while it was read: {len} bytes at offset {offset} are gone (it had {opened_len} bytes when opened)"
            ),
            ReadError::Io { offset, error } => write!(f, "read error at offset {offset}: {error}"),
            ReadError::TooLarge { need, limit, what } => {
                write!(f, "{what} needs {need} bytes in memory, more than the limit of {limit}")
            }
            ReadError::Cancelled => write!(f, "cancelled"),
            ReadError::Changed { offset, detail } => {
                write!(f, "the file changed while it was read (reading at offset {offset}): {detail}")
            }
        }
    }
}

impl std::error::Error for ReadError {}

/// An in-memory source: a borrowed byte slice.
#[derive(Clone, Copy, Debug)]
pub struct SliceSource<'a>(pub &'a [u8]);

impl ByteSource for SliceSource<'_> {
    fn len(&self) -> u64 {
        u64::try_from(self.0.len()).unwrap_or(u64::MAX)
    }

    fn sized_reads(&self) -> bool {
        true
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        read_slice_at(self.0, offset, buf)
    }
}

fn read_slice_at(bytes: &[u8], offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
    let len = u64::try_from(buf.len()).unwrap_or(u64::MAX);
    let src = usize::try_from(offset)
        .ok()
        .and_then(|s| Some((s, s.checked_add(buf.len())?)))
        .and_then(|(s, e)| bytes.get(s..e));
    match src {
        Some(src) => {
            buf.copy_from_slice(src);
            Ok(())
        }
        None => Err(ReadError::Shrunk { offset, len, opened_len: u64::try_from(bytes.len()).unwrap_or(u64::MAX) }),
    }
}

/// An owned in-memory source (what a FIFO or device was read into).
#[derive(Clone, Debug, Default)]
pub struct MemSource(pub Vec<u8>);

impl ByteSource for MemSource {
    fn len(&self) -> u64 {
        u64::try_from(self.0.len()).unwrap_or(u64::MAX)
    }

    fn sized_reads(&self) -> bool {
        true
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        read_slice_at(&self.0, offset, buf)
    }
}

/// A regular file read with positioned reads.
#[derive(Debug)]
pub struct FileSource {
    file: File,
    len: u64,
    /// Held while the file position is used ([`ByteSource::read_append`]:
    /// seek, then read into spare capacity); positioned reads ignore it.
    position: std::sync::Mutex<()>,
}

impl FileSource {
    /// Wraps an open regular file whose length is `len`.
    pub fn new(file: File, len: u64) -> FileSource {
        FileSource { file, len, position: std::sync::Mutex::new(()) }
    }

    /// The open file (for a copy the kernel can make, `copy_file_range`);
    /// reads through the [`ByteSource`] are positioned and do not use its
    /// position.
    pub fn file(&self) -> &File {
        &self.file
    }
}

impl ByteSource for FileSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn sized_reads(&self) -> bool {
        true
    }

    fn read_append(&self, offset: u64, len: u64, buf: &mut Vec<u8>) -> Result<(), ReadError> {
        use std::io::{Seek, SeekFrom};
        let io = |error| ReadError::Io { offset, error };
        let want =
            usize::try_from(len).map_err(|_| ReadError::TooLarge { need: len, limit: u64::MAX, what: "a read" })?;
        let from = buf.len();
        buf.try_reserve_exact(want).map_err(|_| ReadError::TooLarge { need: len, limit: u64::MAX, what: "a read" })?;
        let _held = self.position.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut f = &self.file;
        f.seek(SeekFrom::Start(offset)).map_err(io)?;
        // `read_to_end` on a `File` reads into uninitialised capacity
        // without zeroing it first, and without `unsafe` here.
        f.take(len).read_to_end(buf).map_err(io)?;
        if buf.len().saturating_sub(from) < want {
            buf.truncate(from);
            return Err(ReadError::Shrunk { offset, len, opened_len: self.len });
        }
        Ok(())
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let len = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        match pread_exact(&self.file, offset, buf) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Err(ReadError::Shrunk { offset, len, opened_len: self.len })
            }
            Err(error) => Err(ReadError::Io { offset, error }),
        }
    }

    #[cfg(unix)]
    fn is_hole(&self, offset: u64, len: u64) -> bool {
        // SEEK_DATA finds the next byte that is stored; the file position
        // it moves is never used (every read is positioned).
        match rustix::fs::seek(&self.file, rustix::fs::SeekFrom::Data(offset)) {
            Ok(next) => next >= offset.saturating_add(len),
            // No data at or after `offset`, up to the end of the file.
            Err(rustix::io::Errno::NXIO) => offset.saturating_add(len) <= self.len,
            Err(_) => false,
        }
    }
}

#[cfg(unix)]
fn pread_exact(file: &File, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

/// Targets without positioned reads (`wasm32-unknown-unknown` has no file
/// system): a local file cannot be read there; bytes and other sources can.
#[cfg(not(any(unix, windows)))]
fn pread_exact(_file: &File, _offset: u64, _buf: &mut [u8]) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "this target has no positioned file reads"))
}

#[cfg(windows)]
fn pread_exact(file: &File, mut offset: u64, mut buf: &mut [u8]) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = buf.get_mut(n..).unwrap_or_default();
                offset = offset.saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// What kind of file a path names (after following symlinks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A named pipe.
    Fifo,
    /// A character device (`/dev/zero`, a terminal).
    CharDevice,
    /// A block device (a disk).
    BlockDevice,
    /// A Unix socket.
    Socket,
    /// Anything else.
    Other,
}

impl FileKind {
    /// The kind of a file from its metadata.
    pub fn of(meta: &Metadata) -> FileKind {
        let ft = meta.file_type();
        if ft.is_file() {
            return FileKind::Regular;
        }
        if ft.is_dir() {
            return FileKind::Directory;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if ft.is_fifo() {
                return FileKind::Fifo;
            }
            if ft.is_char_device() {
                return FileKind::CharDevice;
            }
            if ft.is_block_device() {
                return FileKind::BlockDevice;
            }
            if ft.is_socket() {
                return FileKind::Socket;
            }
        }
        FileKind::Other
    }

    /// `a FIFO`, `a character device`, ...
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::Regular => "a regular file",
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO (named pipe)",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Socket => "a socket",
            FileKind::Other => "not a regular file",
        }
    }
}

/// Which files [`open`] accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenPolicy {
    /// Read FIFOs, sockets and devices (into memory, at most
    /// `max_special_bytes`). Off by default: they are refused at once.
    pub special_files: bool,
    /// Most bytes read from a special file before giving up on it.
    pub max_special_bytes: u64,
}

impl Default for OpenPolicy {
    fn default() -> Self {
        OpenPolicy { special_files: false, max_special_bytes: crate::limits::MAX_SPECIAL_FILE_BYTES }
    }
}

/// Why a file could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// Not a regular file, and the policy does not read such files.
    NotRegular(FileKind),
    /// A special file that yields more bytes than the policy allows.
    TooLarge {
        /// The limit that was reached.
        limit: u64,
    },
    /// The operating system reported an error.
    Io(io::Error),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::NotRegular(FileKind::Directory) => write!(f, "is a directory"),
            OpenError::NotRegular(kind) => write!(
                f,
                "is {}, not a regular file; not read (allow special files to read it, up to a size limit)",
                kind.describe()
            ),
            OpenError::TooLarge { limit } => {
                write!(
                    f,
                    "special file yields more than {limit} bytes (the size limit of special files); not read further"
                )
            }
            OpenError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for OpenError {}

/// An open file: a regular file read in place, or a special file's bytes.
#[derive(Debug)]
pub enum Source {
    /// A regular file, read with positioned reads.
    File(FileSource),
    /// What a FIFO, socket or device yielded (with the policy's consent).
    Memory(MemSource),
}

impl Source {
    /// The regular file, when the source is one.
    pub fn file(&self) -> Option<&File> {
        match self {
            Source::File(f) => Some(f.file()),
            Source::Memory(_) => None,
        }
    }
}

impl ByteSource for Source {
    fn len(&self) -> u64 {
        match self {
            Source::File(f) => f.len(),
            Source::Memory(m) => m.len(),
        }
    }

    fn sized_reads(&self) -> bool {
        true
    }

    fn is_hole(&self, offset: u64, len: u64) -> bool {
        match self {
            Source::File(f) => f.is_hole(offset, len),
            Source::Memory(_) => false,
        }
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        match self {
            Source::File(f) => f.read_exact_at(offset, buf),
            Source::Memory(m) => m.read_exact_at(offset, buf),
        }
    }

    fn read_append(&self, offset: u64, len: u64, buf: &mut Vec<u8>) -> Result<(), ReadError> {
        match self {
            Source::File(f) => f.read_append(offset, len, buf),
            Source::Memory(m) => m.read_append(offset, len, buf),
        }
    }
}

/// The kind of file `path` names, from `stat` (symlinks followed), without
/// opening it.
pub fn kind_of(path: &Path) -> io::Result<FileKind> {
    std::fs::metadata(path).map(|m| FileKind::of(&m))
}

/// Opens `path` for validation under `policy`.
///
/// The kind is checked with `stat` before opening, so a FIFO is refused
/// without blocking; the file is then opened non-blocking (closing the race
/// where the path is swapped for a FIFO in between) and checked again on
/// the open descriptor.
pub fn open(path: &Path, policy: &OpenPolicy) -> Result<Source, OpenError> {
    let kind = kind_of(path).map_err(OpenError::Io)?;
    if kind == FileKind::Directory || (kind != FileKind::Regular && !policy.special_files) {
        return Err(OpenError::NotRegular(kind));
    }
    if kind != FileKind::Regular {
        return read_special(path, policy.max_special_bytes);
    }
    let file = open_nonblocking(path).map_err(OpenError::Io)?;
    let meta = file.metadata().map_err(OpenError::Io)?;
    match FileKind::of(&meta) {
        FileKind::Regular => Ok(Source::File(FileSource::new(file, meta.len()))),
        // The path was swapped for something else between `stat` and
        // `open`: refuse it whatever the policy (a blocking read of it
        // would not be under the caller's time limit for special files).
        other => Err(OpenError::NotRegular(other)),
    }
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let nonblock = i32::try_from(rustix::fs::OFlags::NONBLOCK.bits()).unwrap_or(0);
    std::fs::OpenOptions::new().read(true).custom_flags(nonblock).open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// Reads a FIFO, socket or device into memory, at most `limit` bytes.
/// Blocking: callers bound it in time (the CLI runs it under a timeout).
fn read_special(path: &Path, limit: u64) -> Result<Source, OpenError> {
    let file = File::open(path).map_err(OpenError::Io)?;
    let mut buf = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut buf).map_err(OpenError::Io)?;
    if u64::try_from(buf.len()).unwrap_or(u64::MAX) > limit {
        return Err(OpenError::TooLarge { limit });
    }
    Ok(Source::Memory(MemSource(buf)))
}

/// Metadata read into memory, growing as far as the walk of it asks: on
/// the heap, or, when a local file's first read is at least
/// [`crate::limits::PAGED_METADATA_MIN`], in anonymous memory reserved up to what
/// the file and the metadata cap allow and advised for transparent huge
/// pages (on Linux; the heap elsewhere). The reservation is address space only (no swap is
/// reserved either): a page exists once bytes are read into it, so memory
/// still follows the metadata (at most one huge page more). Gemma-3-270m's
/// 6.5 MB of metadata took about 1,600 page faults on the heap, a fifth of
/// the time of validating it; in huge pages, four. Where the system
/// refuses the mapping or the advice, the bytes stay on the heap.
#[derive(Debug, Default)]
pub struct MetadataBytes {
    /// On the heap: `front` bytes that are not the metadata's, then the
    /// bytes read.
    heap: Vec<u8>,
    /// Placed by [`read_start`] when the first read allocates the heap
    /// buffer, so that its bytes land at their place in a page (an
    /// allocation the allocator maps, 128 KiB or more, starts 16 bytes
    /// into a page: every byte of the read would be on the slow path).
    front: usize,
    /// The reserved pages and how many of their bytes were read.
    pages: Option<(memmap2::MmapMut, usize)>,
    /// The pages are of the base size ([`MetadataBytes::reserve_sparse`]):
    /// a read of at least a huge page advises the huge pages it fills.
    sparse: bool,
}

impl MetadataBytes {
    /// Bytes already in memory.
    pub fn from_vec(bytes: Vec<u8>) -> MetadataBytes {
        MetadataBytes { heap: bytes, front: 0, pages: None, sparse: false }
    }

    /// The bytes read.
    pub fn as_slice(&self) -> &[u8] {
        match &self.pages {
            Some((map, n)) => map.get(..*n).unwrap_or_default(),
            None => self.heap.get(self.front..).unwrap_or_default(),
        }
    }

    /// The bytes read, as a vector (a copy when they are in pages).
    pub fn into_vec(self) -> Vec<u8> {
        match self.pages {
            Some((map, n)) => map.get(..n).unwrap_or_default().to_vec(),
            None => {
                let mut heap = self.heap;
                heap.drain(..self.front.min(heap.len()));
                heap
            }
        }
    }

    /// Whether the bytes are in reserved pages (not the heap).
    pub fn is_paged(&self) -> bool {
        self.pages.is_some()
    }

    /// Moves the bytes into pages with room for `bound` bytes (rounded up
    /// to [`crate::limits::HUGE_PAGE_BYTES`]); nothing changes if they already
    /// are, or the system refuses.
    pub(crate) fn reserve_pages(&mut self, bound: u64) {
        // Off Linux, or refused: the heap.
        self.move_into(crate::scratch::huge_page_map(bound), false);
    }

    /// Moves the bytes into pages of the base size with room for `bound`
    /// bytes, where ranges can be left unread ([`MetadataBytes::skip`]);
    /// false (nothing changes) if they already are in pages, or the system
    /// refuses.
    pub(crate) fn reserve_sparse(&mut self, bound: u64) -> bool {
        self.move_into(crate::scratch::anonymous_map(bound), true)
    }

    /// Moves the bytes from the heap into `map` when there is one and they
    /// are not in pages yet; whether they were moved.
    fn move_into(&mut self, map: Option<memmap2::MmapMut>, sparse: bool) -> bool {
        let bytes = self.heap.get(self.front..).unwrap_or_default();
        let n = bytes.len();
        let Some(mut map) = map.filter(|_| self.pages.is_none()) else { return false };
        let Some(dst) = map.get_mut(..n) else { return false };
        dst.copy_from_slice(bytes);
        (self.heap, self.front, self.pages, self.sparse) = (Vec::new(), 0, Some((map, n)), sparse);
        true
    }

    /// Leaves the next `len` bytes unread: in pages never written they
    /// read as zeros and take no memory. False (nothing changes) unless the
    /// bytes are in pages with room for them.
    pub(crate) fn skip(&mut self, len: u64) -> bool {
        if let Some((map, n)) = &mut self.pages
            && let Some(end) = usize::try_from(len).ok().and_then(|len| n.checked_add(len))
            && end <= map.len()
        {
            *n = end;
            return true;
        }
        false
    }

    /// Appends the `len` bytes of `src` at `offset`: into the pages while
    /// they have room (back to the heap past them; the caller's bounds
    /// keep GGUF metadata inside them).
    pub(crate) fn read_append(&mut self, src: &dyn ByteSource, offset: u64, len: u64) -> Result<(), ReadError> {
        if let Some((map, n)) = &mut self.pages {
            let end = usize::try_from(len).ok().and_then(|want| n.checked_add(want));
            if let Some(end) = end
                && end <= map.len()
            {
                if self.sparse {
                    advise_huge_pages(map, *n, end);
                }
                if let Some(dst) = map.get_mut(*n..end) {
                    src.read_exact_at(offset, dst)?;
                    *n = end;
                    return Ok(());
                }
            }
            (self.heap, self.front) = (map.get(..*n).unwrap_or_default().to_vec(), 0);
            self.pages = None;
        }
        if self.heap.capacity() == 0 {
            // The first read: the buffer allocated, then where it starts.
            let room = usize::try_from(len).ok().and_then(|n| n.checked_add(READ_SLACK));
            let room = room.ok_or(ReadError::TooLarge { need: len, limit: u64::MAX, what: "a read" })?;
            self.heap.try_reserve_exact(room).map_err(|_| ReadError::TooLarge {
                need: len,
                limit: u64::MAX,
                what: "a read",
            })?;
            self.front = read_start(&self.heap, offset);
            self.heap.resize(self.front, 0);
        }
        src.read_append(offset, len, &mut self.heap)
    }
}

/// Advises transparent huge pages for the whole huge pages of `map` inside
/// `[from, to)` (a bulk read into sparse pages: one fault per 2 MiB, not 512).
/// Only a hint: refused or off Linux, the pages stay of the base size.
fn advise_huge_pages(map: &memmap2::MmapMut, from: usize, to: usize) {
    let huge = usize::try_from(crate::limits::HUGE_PAGE_BYTES).unwrap_or(usize::MAX);
    let (Some(start), end) =
        (from.checked_next_multiple_of(huge), to.checked_div(huge).unwrap_or(0).saturating_mul(huge))
    else {
        return;
    };
    #[cfg(target_os = "linux")]
    if end > start {
        let _ = map.advise_range(memmap2::Advice::HugePage, start, end.saturating_sub(start));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (map, start, end);
}

impl std::ops::Deref for MetadataBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for MetadataBytes {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl From<Vec<u8>> for MetadataBytes {
    fn from(bytes: Vec<u8>) -> MetadataBytes {
        MetadataBytes::from_vec(bytes)
    }
}

/// The bytes a read buffer keeps spare in front, for [`read_start`].
pub const READ_SLACK: usize = 64;

/// Where in `buf` to start a read of a file's bytes from `offset`, so that
/// the kernel's copy of them does not land 1 to 63 bytes past their place
/// in a page (the distance from the start of a page, in memory, less that
/// in the file): 0 unless it would, else as far in as puts it 64 bytes
/// past. Less than [`READ_SLACK`].
///
/// On an AMD EPYC, a read from the page cache into memory 1 to 31 bytes
/// past that place took 2.5 to 3 times as long as one into any other
/// (30 MB: 18 to 26 ms against 7 to 9 ms). A buffer fresh from `mmap`
/// starts 16 bytes into its page, so reads at whole pages of the file,
/// such as a tensor's data at an alignment of 4096, would all be slow.
pub fn read_start(buf: &[u8], offset: u64) -> usize {
    const PAGE: u64 = 4096;
    let in_memory = u64::try_from(buf.as_ptr().addr()).unwrap_or(0) % PAGE;
    let ahead = in_memory.wrapping_sub(offset) % PAGE;
    match usize::try_from(ahead) {
        Ok(ahead @ 1..READ_SLACK) => READ_SLACK.saturating_sub(ahead),
        _ => 0,
    }
}

/// The `len` bytes of `buf` a read of a file's bytes from `offset` goes
/// into, placed by [`read_start`]; `buf` is first grown to hold them and
/// the [`READ_SLACK`] in front (kept as it is if it is larger).
pub fn placed_window(buf: &mut Vec<u8>, offset: u64, len: usize) -> &mut [u8] {
    let room = len.saturating_add(READ_SLACK);
    if buf.len() < room {
        buf.resize(room, 0);
    }
    let start = read_start(buf, offset);
    buf.get_mut(start..start.saturating_add(len)).unwrap_or_default()
}

/// Reads `[offset, offset + len)` of `src` into a new buffer.
pub fn read_range(src: &dyn ByteSource, offset: u64, len: u64) -> Result<Vec<u8>, ReadError> {
    let mut buf = Vec::new();
    src.read_append(offset, len, &mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_never_lands_just_past_its_place_in_a_page() {
        let buf = vec![0u8; 3 * 4096];
        let mut moved = 0;
        // Every place in a page of memory, against offsets in the file
        // around the start of a page and elsewhere.
        for from in 0..4096usize {
            let window = &buf[from..];
            for offset in [0u64, 1, 31, 32, 63, 64, 100, 4095, 4096, 4097, 8191, (1 << 40) + 17] {
                let start = read_start(window, offset);
                assert!(start < READ_SLACK, "{from} {offset}: {start}");
                let at = (window.as_ptr().addr() + start) as u64 % 4096;
                let ahead = at.wrapping_sub(offset) % 4096;
                assert!(ahead == 0 || ahead >= READ_SLACK as u64, "{from} {offset}: {ahead} bytes ahead");
                moved += usize::from(start > 0);
            }
        }
        // Only the reads that would have landed 1 to 63 bytes ahead move.
        assert_eq!(moved, 12 * 63);
    }

    #[test]
    fn slice_source_reads_inside_and_reports_past_the_end() {
        let s = SliceSource(b"abcdef");
        let mut b = [0u8; 3];
        s.read_exact_at(2, &mut b).unwrap();
        assert_eq!(&b, b"cde");
        let e = s.read_exact_at(4, &mut b).unwrap_err();
        assert!(matches!(e, ReadError::Shrunk { offset: 4, len: 3, opened_len: 6 }), "{e:?}");
        assert!(s.read_exact_at(u64::MAX, &mut b).is_err());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn sparse_pages_hold_what_was_read_and_zeros_where_ranges_were_skipped() {
        let data: Vec<u8> = (0..9_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8 | 1).collect();
        let src = SliceSource(&data);
        let mut m = MetadataBytes::default();
        m.read_append(&src, 0, 100).unwrap();
        assert!(!m.skip(10), "nothing is skipped on the heap");
        assert!(cfg!(not(target_os = "linux")) || m.reserve_sparse(8_500_000));
        if !m.is_paged() {
            return;
        }
        // A small read, a skipped range, a read of several huge pages
        // (advised as such), a skipped range at the end.
        m.read_append(&src, 100, 50_000).unwrap();
        assert!(m.skip(1_000_000));
        m.read_append(&src, 1_050_100, 5_000_000).unwrap();
        assert!(m.skip(1_000_000));
        assert!(!m.skip(10_000_000), "not past the reservation");
        assert_eq!(m.len(), 7_050_100);
        assert_eq!(&m[..50_100], &data[..50_100]);
        assert!(m[50_100..1_050_100].iter().all(|b| *b == 0));
        assert_eq!(&m[1_050_100..6_050_100], &data[1_050_100..6_050_100]);
        assert!(m[6_050_100..].iter().all(|b| *b == 0));
    }

    #[test]
    fn metadata_bytes_read_the_same_in_pages_and_on_the_heap_and_leave_pages_they_outgrow() {
        let data: Vec<u8> = (0..5_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        let src = SliceSource(&data);
        let mut heap = MetadataBytes::default();
        let mut paged = MetadataBytes::default();
        heap.read_append(&src, 0, 1000).unwrap();
        paged.read_append(&src, 0, 1000).unwrap();
        paged.reserve_pages(4_000_000);
        assert!(paged.is_paged() && !heap.is_paged());
        for (at, n) in [(1000, 3_000_000), (3_001_000, 999_000)] {
            heap.read_append(&src, at, n).unwrap();
            paged.read_append(&src, at, n).unwrap();
            assert_eq!(paged.as_slice(), heap.as_slice());
        }
        // Reserved in whole huge pages: 4 MB fit in 4 MiB, 5 MB do not.
        paged.read_append(&src, 4_000_000, 190_304).unwrap();
        assert!(paged.is_paged(), "4 MiB are still inside the reservation");
        paged.read_append(&src, 4_190_304, 809_696).unwrap();
        assert!(!paged.is_paged(), "past the reservation the bytes go back to the heap");
        assert_eq!(&*paged, &data[..]);
        // A failed read leaves what was read.
        let mut short = MetadataBytes::default();
        short.reserve_pages(4_000_000);
        short.read_append(&src, 0, 10).unwrap();
        assert!(short.read_append(&src, 4_999_990, 20).is_err());
        assert_eq!(short.into_vec(), data[..10].to_vec());
    }

    #[test]
    fn a_file_that_shrinks_gives_an_error_not_a_signal() {
        let dir = std::env::temp_dir().join(format!("gguf-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("shrink.bin");
        std::fs::write(&path, vec![7u8; 10_000]).unwrap();
        let src = open(&path, &OpenPolicy::default()).unwrap();
        assert_eq!(src.len(), 10_000);
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(100).unwrap();
        let mut b = [0u8; 64];
        src.read_exact_at(0, &mut b).unwrap();
        let e = src.read_exact_at(5_000, &mut b).unwrap_err();
        assert!(matches!(e, ReadError::Shrunk { offset: 5_000, .. }), "{e}");
        assert!(e.to_string().contains("changed while it was read"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[cfg(unix)]
    #[test]
    fn devices_are_refused_unless_allowed_and_then_bounded() {
        let zero = Path::new("/dev/zero");
        if !zero.exists() {
            return;
        }
        let e = open(zero, &OpenPolicy::default()).unwrap_err();
        assert!(matches!(e, OpenError::NotRegular(FileKind::CharDevice)), "{e}");
        let policy = OpenPolicy { special_files: true, max_special_bytes: 4096 };
        let e = open(zero, &policy).unwrap_err();
        assert!(matches!(e, OpenError::TooLarge { limit: 4096 }), "{e}");
        let null = open(Path::new("/dev/null"), &policy).unwrap();
        assert_eq!(null.len(), 0);
    }

    #[cfg(unix)]
    #[test]
    fn holes_of_sparse_files_are_known() {
        let dir = std::env::temp_dir().join(format!("gguf-io-hole-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sparse.bin");
        let f = std::fs::File::create(&path).unwrap();
        std::io::Write::write_all(&mut &f, &[1u8; 4096]).unwrap();
        f.set_len(64 << 20).unwrap();
        let src = open(&path, &OpenPolicy::default()).unwrap();
        assert!(!src.is_hole(0, 4096), "stored data is no hole");
        // File systems may not report holes (then nothing is skipped).
        if src.is_hole(32 << 20, 1 << 20) {
            assert!(!src.is_hole(0, 8 << 20));
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn directories_are_refused() {
        let e = open(&std::env::temp_dir(), &OpenPolicy { special_files: true, ..OpenPolicy::default() }).unwrap_err();
        assert_eq!(e.to_string(), "is a directory");
    }
}
