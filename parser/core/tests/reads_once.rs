//! Each file is read and parsed once per run, whatever the window of
//! `Pipeline::run` it falls in or the order of the inputs: the shards of a
//! split set given as inputs over two windows, with and without a data
//! scan, are each read once (their data scanned once). (A model that is
//! both an input and the `--with` model of an adapter: `pairing.rs`.)

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use gguf_validate_core::data_scan::DataOptions;
use gguf_validate_core::io::{ByteSource, MemSource, ReadError};
use gguf_validate_core::pipeline::{Input, Item, Pipeline, Settings};
use gguf_validate_core::remote::{OpenFailure, RemoteSource, RemoteSummary, UrlOpener};
use gguf_validate_core::types::GgmlType;
use gguf_validate_core::write::{GgufModel, OwnedTensor, OwnedValue as V};
use web_time::Instant;

/// What was read of one file: validations (reads from its first byte) and
/// reads of its tensor's data (a data scan's).
#[derive(Debug, Default)]
struct Reads {
    from_start: AtomicUsize,
    of_data: AtomicUsize,
}

/// A file served from memory as a URL is, counting its reads.
#[derive(Debug)]
struct Served {
    bytes: MemSource,
    /// Where its one tensor's data starts.
    data_start: u64,
    reads: Arc<Reads>,
}

impl ByteSource for Served {
    fn len(&self) -> u64 {
        self.bytes.len()
    }
    fn sized_reads(&self) -> bool {
        true
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        if offset == 0 {
            self.reads.from_start.fetch_add(1, Ordering::Relaxed);
        } else if offset <= self.data_start && offset + buf.len() as u64 > self.data_start {
            self.reads.of_data.fetch_add(1, Ordering::Relaxed);
        }
        self.bytes.read_exact_at(offset, buf)
    }
}

impl RemoteSource for Served {
    fn supports_ranges(&self) -> bool {
        true
    }
    fn release_cache(&self) {}
    fn summary(&self) -> RemoteSummary {
        RemoteSummary::default()
    }
}

/// Serves files by URL; any other URL is not there (`404`).
#[derive(Debug, Default)]
struct Server {
    files: HashMap<String, (Vec<u8>, u64, Arc<Reads>)>,
}

impl UrlOpener for Server {
    fn open(&self, input: &str, _: Option<Instant>) -> Result<Box<dyn RemoteSource>, OpenFailure> {
        let Some((bytes, data_start, reads)) = self.files.get(input) else {
            return Err(OpenFailure { message: "404".into(), not_found: true });
        };
        Ok(Box::new(Served { bytes: MemSource(bytes.clone()), data_start: *data_start, reads: Arc::clone(reads) }))
    }
    fn file_deadline(&self) -> Duration {
        Duration::from_secs(60)
    }
}

/// Shard `no` of a set of `count`, with one F32 tensor of 32 zeros.
fn shard(no: u16, count: u16) -> Vec<u8> {
    let mut m = GgufModel::new();
    if no == 0 {
        m.kv("general.architecture", V::str("plain"));
    }
    m.kv("split.no", V::U16(no));
    m.kv("split.count", V::U16(count));
    m.kv("split.tensors.count", V::I32(i32::from(count)));
    m.tensor(OwnedTensor::zeroed(&format!("t{no}"), &[32], GgmlType::F32).unwrap());
    m.canonical();
    m.to_bytes()
}

fn data_start(bytes: &[u8]) -> u64 {
    let tensors = gguf_validate_core::Validator::default().validate_bytes(bytes).layout().tensors;
    tensors[0].offset
}

#[test]
fn five_shards_over_two_windows_are_each_read_once() {
    for check_data in [false, true] {
        let mut server = Server::default();
        let mut inputs = Vec::new();
        for no in 0..5u16 {
            let url = format!("https://127.0.0.1:9/m-{:05}-of-00005.gguf", no + 1);
            let bytes = shard(no, 5);
            let start = data_start(&bytes);
            server.files.insert(url.clone(), (bytes, start, Arc::default()));
            inputs.push(Input::Url(url));
        }
        let reads: Vec<Arc<Reads>> = inputs
            .iter()
            .map(|i| match i {
                Input::Url(u) => Arc::clone(&server.files[u].2),
                _ => unreachable!(),
            })
            .collect();
        let settings = Settings {
            opener: Some(Arc::new(server)),
            check_data: check_data.then(|| DataOptions::listing(10)),
            ..Settings::default()
        };
        // One job: windows of four inputs, the fifth shard in the second.
        let (mut files, mut sets) = (0, 0);
        let _ = Pipeline::new(settings).run::<()>(&inputs, 1, |item| {
            match item {
                Item::File { outcome, set, .. } => {
                    assert!(outcome.report().is_some(), "{outcome:?}");
                    assert!(set.is_some());
                    files += 1;
                }
                Item::Set(s) => {
                    assert_eq!(s.shards.len(), 5, "{s:?}");
                    sets += 1;
                }
            }
            ControlFlow::Continue(())
        });
        assert_eq!((files, sets), (5, 1));
        for (i, r) in reads.iter().enumerate() {
            assert_eq!(r.from_start.load(Ordering::Relaxed), 1, "shard {i} validated once (check_data {check_data})");
            let scans = usize::from(check_data);
            assert_eq!(r.of_data.load(Ordering::Relaxed), scans, "shard {i}'s data scanned {scans} times");
        }
    }
}
