//! The floor of metadata validation on this machine (issue 24): the least
//! work any validator of a file's vocabulary does, in one process, timed
//! in-process, for `process.py --floor` to print beside the tool's figures.
//!
//! ```text
//! GGUF_VALIDATE_GEMMA=gemma-3-270m-q4_k_m.gguf cargo bench -p gguf-validate-core --bench floor
//! ```
//!
//! prints one line of JSON (`process.py --floor` builds it and gives the
//! file as its argument).
//!
//! Four passes over the metadata, each in the same process after the file
//! was read once (page cache warm), each a lower bound of what the tool
//! does and nothing more:
//!
//! - `copy`: the metadata's bytes read through one reused buffer of
//!   [`limits::LEAN_READ_CHUNK`] (no fresh page to zero, the copy landing
//!   in cache).
//! - `container`: `copy` plus UTF-8 checked over each chunk and the
//!   vocabulary's length fields walked (`--container-only` checks at least
//!   that: the rest of its work is on smaller items).
//! - `full`: `container` plus every token's text hashed (two words and a
//!   multiply for texts of up to 16 bytes, foldhash past that) and its bit
//!   set in a bitmap of 32 bits a token, in fresh huge-page memory (a
//!   duplicate search cannot do less: every text is read and placed once).
//!
//! - `pairs`: `copy` and UTF-8 with every key/value pair walked, item by
//!   item across chunks (a pair up to its value, each string of a string
//!   array, the fixed-size elements of an array), and every key hashed
//!   (foldhash) and its bit set in a fresh bitmap of 32 bits a key. Any
//!   validator does this much: it cannot find where the metadata ends, or
//!   a repeated key, without it. `null` where the walk cannot go (a nested
//!   array). The vocabulary's texts are walked, not hashed.
//!
//! A file without a vocabulary has the copy and UTF-8 only in `container`
//! and `full`: of a file of a million keys, only `pairs` walks the keys.
//!
//! Then, in the same process, the tool's own validation of the file
//! (`Validator::validate` (report only under `--container-only`), full strict and `--container-only`, as the
//! command line asks for it): the tool's work timed as the floor is, warm
//! and without process start-up, so the part of the whole-process figures
//! that a fresh process adds (its code and heap touched the first time)
//! can be told from the validation's own.
//!
//! One pass of each per process (the bitmap must be fresh memory, as it is
//! in a run of the tool); `process.py` runs it once per round.
//!
//! With `--fresh` (see [`fresh`]), one pass alone in a fresh process, for
//! `process.py` to time from outside the way it times the tool: what a
//! fresh process adds to the floor's own work.
//!
//! Every read is placed as the library places its reads
//! ([`io::read_start`]): on this machine a kernel copy 1 to 31 bytes ahead
//! of its place in a page takes 2.5 to 3 times as long.
#![allow(clippy::disallowed_macros, clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use std::hash::BuildHasher;
use std::time::Instant;

use gguf_validate_core::io::{self, ByteSource, OpenPolicy, open};
use gguf_validate_core::{Options, Validator, limits};

/// Masks keeping the first `n` bytes of two little-endian words.
const MASKS: [[u64; 2]; 17] = {
    const fn keep(bytes: usize) -> u64 {
        if bytes >= 8 { u64::MAX } else { (1u64 << (bytes * 8)) - 1 }
    }
    let mut masks = [[0u64; 2]; 17];
    let mut n = 0;
    while n <= 16 {
        masks[n] = [keep(n), keep(n.saturating_sub(8))];
        n += 1;
    }
    masks
};

fn folded(x: u64, y: u64) -> u64 {
    let f = u128::from(x) * u128::from(y);
    (f as u64) ^ ((f >> 64) as u64)
}

/// Walks the strings wholly inside `buf`; gives where the first one not
/// wholly inside starts. With `hash`, each text is hashed and its bit set.
fn walk(buf: &[u8], left: &mut u64, hash: Option<(&foldhash::fast::FixedState, &mut [u32], &mut u64)>) -> usize {
    let mut p = 0;
    let mut hash = hash;
    while *left > 0 && p + 8 <= buf.len() {
        let n = u64::from_le_bytes(buf[p..p + 8].try_into().unwrap()) as usize;
        if p + 8 + n > buf.len() {
            break;
        }
        if let Some((state, seen, hot)) = hash.as_mut() {
            let text = &buf[p + 8..p + 8 + n];
            let h = if n <= 16 && p + 24 <= buf.len() {
                let lo = u64::from_le_bytes(buf[p + 8..p + 16].try_into().unwrap()) & MASKS[n][0];
                let hi = u64::from_le_bytes(buf[p + 16..p + 24].try_into().unwrap()) & MASKS[n][1];
                (folded(
                    folded(lo ^ 0x243f_6a88_85a3_08d3, hi ^ 0x1319_8a2e_0370_7344) ^ n as u64,
                    0xa409_3822_299f_31d1,
                ) >> 32) as u32
            } else {
                (state.hash_one(text) >> 32) as u32
            };
            let bit = h >> (32 - seen.len().trailing_zeros() - 5);
            let w = &mut seen[(bit >> 5) as usize];
            **hot += u64::from(*w & (1 << (bit & 31)) != 0);
            *w |= 1 << (bit & 31);
        }
        p += 8 + n;
        *left -= 1;
    }
    p
}

/// Reads `[0, end)` of `src` through one reused buffer of
/// [`limits::LEAN_READ_CHUNK`] (grown only while a kept item needs more),
/// checking each chunk as UTF-8 when `utf8`. After each chunk `walk` is
/// given the bytes held and the file offset of the first, and gives how
/// many of them it is done with: the rest are kept for the next chunk.
/// `None` from `walk` ends the pass.
fn stream(src: &dyn ByteSource, end: u64, utf8: bool, mut walk: impl FnMut(&[u8], u64) -> Option<usize>) -> Option<()> {
    let chunk = usize::try_from(limits::LEAN_READ_CHUNK).unwrap();
    let mut buf = vec![0u8; 2 * chunk + io::READ_SLACK];
    // Where the held bytes start in `buf`: moved each round so that the
    // read after them is placed as the library places its reads.
    let (mut start, mut have, mut at) = (0usize, 0usize, 0u64);
    while at < end {
        let want = (end - at).min(chunk as u64) as usize;
        if buf.len() < io::READ_SLACK + have + want {
            buf.resize(io::READ_SLACK + have + want, 0);
        }
        let to = io::read_start(&buf[have..], at);
        buf.copy_within(start..start + have, to);
        start = to;
        let read = start + have..start + have + want;
        src.read_exact_at(at, &mut buf[read.clone()]).unwrap();
        if utf8 {
            std::hint::black_box(simdutf8::basic::from_utf8(&buf[read]).is_ok());
        }
        let total = have + want;
        let base = at - have as u64;
        at += want as u64;
        let done = walk(&buf[start..start + total], base)?.min(total);
        start += done;
        have = total - done;
    }
    Some(())
}

/// One pass over `[0, end)` of `src` through a reused buffer; `vocab`: the
/// range and count of the vocabulary's strings, walked (and hashed with
/// `seen`) when given. Gives the tokens walked.
fn pass(
    src: &dyn ByteSource,
    end: u64,
    vocab: Option<(u64, u64, u64)>,
    utf8: bool,
    mut seen: Option<&mut [u32]>,
) -> u64 {
    let (mut walked, mut hot) = (0u64, 0u64);
    let state = foldhash::fast::FixedState::with_seed(24);
    let (from, to, count) = vocab.unwrap_or((end, end, 0));
    let mut left = count;
    stream(src, end, utf8, |held, base| {
        // The part of the vocabulary held: its strings walked, the last
        // partial one kept for the next chunk.
        let total = held.len();
        let start = from.saturating_sub(base).min(total as u64) as usize;
        if vocab.is_none() || base + (total as u64) <= from || base + start as u64 > to {
            return Some(total);
        }
        let stop = (to - base).min(total as u64) as usize;
        let before = left;
        let used = match seen.as_deref_mut() {
            Some(seen) => walk(&held[start..stop], &mut left, Some((&state, seen, &mut hot))),
            None => walk(&held[start..stop], &mut left, None),
        };
        walked += before - left;
        Some(if left > 0 { start + used } else { total })
    });
    std::hint::black_box(hot);
    walked
}

/// Where a walk of the pairs stands between two chunks: pairs left, and
/// the array it is inside (element type, elements left).
struct PairWalk {
    pairs_left: u64,
    array: Option<(u32, u64)>,
    hot: u64,
}

/// The bytes of a fixed-size GGUF value type; `None` for a string or array.
fn fixed_size(t: u32) -> Option<u64> {
    match t {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}

/// Walks the items of the pairs (a pair up to its value, or an array's
/// string, or an array's fixed-size elements) wholly inside `buf`, each
/// key hashed and its bit set in `seen`; gives where the first item not
/// wholly inside starts. `None` for a nested array or an unknown type.
fn walk_pairs(buf: &[u8], w: &mut PairWalk, state: &foldhash::fast::FixedState, seen: &mut [u32]) -> Option<usize> {
    let u64_at = |p: usize| buf.get(p..p + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap()));
    let u32_at = |p: usize| buf.get(p..p + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap()));
    let mut p = 0usize;
    loop {
        match w.array {
            Some((_, 0)) => w.array = None,
            Some((8, left)) => {
                let Some(n) = u64_at(p) else { return Some(p) };
                if p + 8 + n as usize > buf.len() {
                    return Some(p);
                }
                p += 8 + n as usize;
                w.array = Some((8, left - 1));
            }
            Some((t, left)) => {
                let size = fixed_size(t)?;
                let whole = ((buf.len() - p) as u64 / size).min(left);
                if whole == 0 {
                    return Some(p);
                }
                p += (whole * size) as usize;
                w.array = Some((t, left - whole));
            }
            None if w.pairs_left == 0 => return Some(p),
            None => {
                let Some(k) = u64_at(p) else { return Some(p) };
                let k = k as usize;
                let Some(t) = u32_at(p + 8 + k) else { return Some(p) };
                let v = p + 12 + k;
                let next = match t {
                    8 => match u64_at(v) {
                        Some(n) if v + 8 + n as usize <= buf.len() => v + 8 + n as usize,
                        _ => return Some(p),
                    },
                    9 => match (u32_at(v), u64_at(v + 4)) {
                        (Some(et), Some(n)) if et != 9 => {
                            w.array = Some((et, n));
                            v + 12
                        }
                        (Some(_), Some(_)) => return None,
                        _ => return Some(p),
                    },
                    t => {
                        let end = v + fixed_size(t)? as usize;
                        if end > buf.len() {
                            return Some(p);
                        }
                        end
                    }
                };
                let h = (state.hash_one(&buf[p + 8..p + 8 + k]) >> 32) as u32;
                let bit = h >> (32 - seen.len().trailing_zeros() - 5);
                let word = &mut seen[(bit >> 5) as usize];
                w.hot += u64::from(*word & (1 << (bit & 31)) != 0);
                *word |= 1 << (bit & 31);
                p = next;
                w.pairs_left -= 1;
            }
        }
    }
}

/// The container pass (copy and UTF-8 through one reused buffer) with
/// every pair walked as well, item by item across chunks, and each key
/// hashed and its bit set in `seen`: the least a validator of a file's
/// keys does (it cannot find the metadata's end, or a repeated key,
/// otherwise). Gives the pairs walked; `None` where the walk cannot go (a
/// nested array, an unknown type).
fn pairs_pass(src: &dyn ByteSource, end: u64, pairs: u64, seen: &mut [u32]) -> Option<u64> {
    let state = foldhash::fast::FixedState::with_seed(24);
    let mut w = PairWalk { pairs_left: pairs, array: None, hot: 0 };
    stream(src, end, true, |held, base| {
        // The pairs start after the header of a GGUF v3 file (24 bytes).
        let start = 24u64.saturating_sub(base).min(held.len() as u64) as usize;
        if w.pairs_left == 0 && w.array.is_none() {
            return Some(held.len());
        }
        Some(start + walk_pairs(&held[start..], &mut w, &state, seen)?)
    })?;
    std::hint::black_box(w.hot);
    Some(pairs - w.pairs_left)
}

/// Fresh memory for a bitmap of 32 bits an item (a power of two, at most
/// 1 MiB), advised for huge pages as the tool's scratch is.
fn fresh_bitmap(items: u64) -> memmap2::MmapMut {
    let words = (items.max(2) * 32).next_power_of_two().min(1 << 23) as usize / 32;
    let map = memmap2::MmapOptions::new().len(words * 4).map_anon().expect("map");
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    map
}

/// `--fresh WHAT END FROM TO COUNT FILE`: one pass alone in a fresh
/// process, for `process.py` to time from outside as it times the tool
/// (its wall time less the least run of `--fresh none`, which opens the
/// file and stops). `END` is where the metadata ends; `FROM`, `TO` and
/// `COUNT` the vocabulary's strings (`0 0 0` for none), as the in-process
/// run printed them. `WHAT` is `none`, or the pass of that name: `copy`,
/// `container`, `full` or `pairs`.
fn fresh(args: &[String]) {
    let [what, end, from, to, count, path] = args else {
        eprintln!("floor: --fresh WHAT END FROM TO COUNT FILE");
        std::process::exit(2);
    };
    let number = |s: &String| s.parse::<u64>().expect("a number");
    let (end, from, to, count) = (number(end), number(from), number(to), number(count));
    let vocab = (count > 0).then_some((from, to, count));
    let src = open(path.as_ref(), &OpenPolicy::default()).expect("open");
    match what.as_str() {
        "none" => {}
        "copy" => {
            pass(&src, end, None, false, None);
        }
        "container" => assert_eq!(pass(&src, end, vocab, true, None), count, "the walk met every token"),
        "full" => {
            let mut map = fresh_bitmap(count);
            let seen: &mut [u32] = bytemuck::try_cast_slice_mut(&mut map[..]).unwrap();
            assert_eq!(pass(&src, end, vocab, true, Some(seen)), count, "every token hashed");
        }
        "pairs" => {
            let pairs = pair_count(&src);
            let mut map = fresh_bitmap(pairs);
            let seen: &mut [u32] = bytemuck::try_cast_slice_mut(&mut map[..]).unwrap();
            assert_eq!(pairs_pass(&src, end, pairs, seen), Some(pairs), "every pair walked");
        }
        _ => panic!("floor: --fresh none, copy, container, full or pairs"),
    }
}

/// The pair count of a GGUF v3 header.
fn pair_count(src: &dyn ByteSource) -> u64 {
    let mut head = [0u8; 24];
    src.read_exact_at(0, &mut head).expect("a header");
    u64::from_le_bytes(head[16..24].try_into().unwrap())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if args.first().map(String::as_str) == Some("--fresh") {
        return fresh(&args[1..]);
    }
    // `cargo bench` passes `--bench`: the file is the first other argument,
    // else GGUF_VALIDATE_GEMMA.
    let path = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let Some(path) = path.or_else(|| std::env::var("GGUF_VALIDATE_GEMMA").ok()) else {
        eprintln!("floor: give a GGUF file (or set GGUF_VALIDATE_GEMMA)");
        return;
    };
    let src = open(path.as_ref(), &OpenPolicy::default()).expect("open");
    // No cap: the 1M-key file is past the default one.
    let opts = Options { container_only: true, limits: limits::MetadataLimits::UNBOUNDED, ..Options::default() };
    // Where the metadata ends and the vocabulary lies; the validation and
    // its parse are dropped before anything is timed (their memory is not
    // held while the passes and the tool's own run take theirs).
    let (end, vocab) = {
        let v = Validator::new(opts).validate(&src).expect("read");
        let end = u64::try_from(v.metadata.len()).unwrap();
        let parsed = v.parsed().expect("GGUF v2/v3");
        let vocab = parsed.file.get("tokenizer.ggml.tokens").and_then(|kv| kv.value.as_array().copied()).map(|a| {
            let from = a.data_offset();
            (from, from + a.data.len() as u64, a.len)
        });
        (end, vocab)
    };
    let tokens = vocab.map_or(0, |(_, _, n)| n);
    let t = Instant::now();
    pass(&src, end, None, false, None);
    let copy = t.elapsed();
    let t = Instant::now();
    let walked = pass(&src, end, vocab, true, None);
    let container = t.elapsed();
    assert_eq!(walked, tokens, "the walk met every token");
    let t = Instant::now();
    let mut map = fresh_bitmap(tokens);
    let seen: &mut [u32] = bytemuck::try_cast_slice_mut(&mut map[..]).unwrap();
    let hashed = pass(&src, end, vocab, true, Some(seen));
    let full = t.elapsed();
    assert_eq!(hashed, tokens, "every token hashed");
    // The pairs walked and every key hashed.
    let pairs = pair_count(&src);
    let t = Instant::now();
    let mut map = fresh_bitmap(pairs);
    let seen: &mut [u32] = bytemuck::try_cast_slice_mut(&mut map[..]).unwrap();
    let walked_pairs = pairs_pass(&src, end, pairs, seen);
    let pairs_took = t.elapsed();
    if let Some(n) = walked_pairs {
        assert_eq!(n, pairs, "every pair walked");
    }
    // The tool's own validation, in this warm process: as the command
    // line validates (the caps raised for the 1M-key file, as process.py
    // raises them).
    let tool = |container_only: bool| {
        let opts = Options { container_only, limits: limits::MetadataLimits::UNBOUNDED, ..Options::default() };
        let t = Instant::now();
        let report = Validator::new(opts).report_only(container_only).validate(&src).expect("read").report;
        let took = t.elapsed();
        std::hint::black_box(report);
        took
    };
    let (tool_container, tool_full) = (tool(true), tool(false));
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    println!(
        "{{\"metadata_bytes\": {end}, \"tokens\": {tokens}, \"vocab\": [{}, {}], \"pairs\": {pairs}, \"copy_ms\": {:.4}, \"container_ms\": {:.4}, \"full_ms\": {:.4}, \"pairs_ms\": {}, \"tool_container_ms\": {:.4}, \"tool_full_ms\": {:.4}}}",
        vocab.map_or(0, |(from, _, _)| from),
        vocab.map_or(0, |(_, to, _)| to),
        ms(copy),
        ms(container),
        ms(full),
        walked_pairs.map_or("null".to_string(), |_| format!("{:.4}", ms(pairs_took))),
        ms(tool_container),
        ms(tool_full)
    );
}
