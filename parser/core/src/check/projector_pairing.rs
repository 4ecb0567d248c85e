//! A projector and its text model: libmtmd's `mtmd_context` refuses a pair
//! whose projector output width (`clip_n_mmproj_embd`) is not the text
//! model's input width (`llama_model_n_embd_inp`), and aborts at the first
//! tiled image of a pair whose vocabulary lacks a token it looks up for the
//! projector type (mtmd.cpp init_vision `lookup_token`: the id is -1 and
//! `mtmd_helper_eval_chunks` asserts it). The models come from
//! [`crate::report::Options::companions`]: named with `--with` (the
//! projector must fit each), or found in its folder (it must fit one).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::parse::{GgufFile, Value};
use crate::report::{Examined, ModelFacts, Sink};
use crate::rules::RuleId;

use super::clip_table::PROJECTOR_TYPES;
use super::kv::kv_path;
use super::projector::ProjectorFacts;

/// Checks the projector's output width and looked-up tokens against the run's models.
pub(crate) fn check(file: &GgufFile<'_>, facts: &ProjectorFacts, sink: &mut Sink<'_>, examined: &mut Vec<Examined>) {
    let Some(companions) = super::companions(sink, "text model", examined) else { return };
    let given = companions.given;
    let models = &companions.models;
    let paired: Vec<&ModelFacts> = match facts.output_width {
        // named with --with: each; found in the folder: those of the projector's width
        Some(w) if !given => models.iter().filter(|m| m.n_embd_inp == Some(w)).map(|m| m.as_ref()).collect(),
        _ => models.iter().map(|m| m.as_ref()).collect(),
    };
    tokens(file, facts, &paired, given, sink);
    let Some(width) = facts.output_width else {
        examined.push(Examined::skipped("pairing", "text model: the projector's output width could not be computed"));
        return;
    };
    let at = file
        .get("clip.vision.projection_dim")
        .or_else(|| file.get("clip.audio.projection_dim"))
        .or_else(|| file.get("clip.projector_type"));
    let offset = at.as_ref().map_or(super::KV_SECTION, crate::parse::KeyValue::value_offset);
    let path = || at.as_ref().map_or_else(|| "kv".into(), kv_path);
    let names = |ms: &[&std::sync::Arc<crate::report::ModelFacts>]| {
        ms.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", ")
    };
    let fitting: Vec<_> = models.iter().filter(|m| m.n_embd_inp == Some(width)).collect();
    let misfits: Vec<_> = models.iter().filter(|m| m.n_embd_inp.is_some_and(|n| n != width)).collect();
    if given {
        for m in &misfits {
            let n = m.n_embd_inp.unwrap_or(0);
            sink.emit(RuleId::ProjectorTextWidth, offset, path, || {
                format!(
                    "the projector's output width is {width} and the text model {} takes embeddings of width {n}; libmtmd refuses the pair (\"mismatch between text model and mmproj\")",
                    m.name
                )
            });
        }
        let all: Vec<_> = models.iter().collect();
        examined.push(Examined::partly("pairing", format!("text model {}", names(&all))));
        return;
    }
    match (fitting.is_empty(), misfits.is_empty()) {
        (false, _) => {
            examined.push(Examined::partly("pairing", format!("text model {} (found in the folder)", names(&fitting))))
        }
        (true, false) => {
            let widths: Vec<String> =
                misfits.iter().map(|m| format!("{} ({})", m.name, m.n_embd_inp.unwrap_or(0))).collect();
            sink.emit(RuleId::ProjectorTextWidth, offset, path, || {
                format!(
                    "the projector's output width is {width} and no text model in its folder takes embeddings of that width: {}; libmtmd refuses every such pair (\"mismatch between text model and mmproj\"); name its model with --with MODEL",
                    widths.join(", ")
                )
            });
            examined
                .push(Examined::partly("pairing", format!("text models {} (found in the folder)", names(&misfits))));
        }
        (true, true) => examined.push(Examined::skipped(
            "pairing",
            "text model: the models in the folder do not say their embedding width",
        )),
    }
}

/// `projector-text-tokens`: every token text libmtmd looks up for the
/// projector's types is in each model named with --with; of the models
/// found in the folder, one must have them all.
fn tokens(file: &GgufFile<'_>, facts: &ProjectorFacts, models: &[&ModelFacts], given: bool, sink: &mut Sink<'_>) {
    if facts.lookups.is_empty() {
        return;
    }
    let has_all = |m: &&&ModelFacts| {
        m.projector_tokens.as_ref().is_none_or(|found| facts.lookups.iter().all(|t| found.iter().any(|f| f == t)))
    };
    if !given && models.iter().any(|m| has_all(&m)) {
        return;
    }
    // in the folder and none has them all: the first lacking model stands for the others
    let models = if given { models } else { models.get(..1).unwrap_or_default() };
    let at = file.get("clip.projector_type").or_else(|| file.get("clip.vision.projector_type"));
    let offset = at.as_ref().map_or(super::KV_SECTION, crate::parse::KeyValue::value_offset);
    let path = || at.as_ref().map_or_else(|| "kv".into(), kv_path);
    let ptype = facts.vision_type.or(facts.audio_type).unwrap_or("?");
    for m in models {
        let Some(found) = &m.projector_tokens else { continue };
        let absent: Vec<String> =
            facts.lookups.iter().filter(|t| !found.iter().any(|f| f == *t)).map(|t| format!("{t:?}")).collect();
        if absent.is_empty() {
            continue;
        }
        sink.emit(RuleId::ProjectorTextTokens, offset, path, || {
            format!(
                "libmtmd looks up {} in the text model's vocabulary for projector type `{ptype}`, and {} has no token for {}: the id is -1, and the first image it tiles aborts the process (GGML_ASSERT in mtmd_helper_eval_chunks){}",
                facts.lookups.iter().map(|t| format!("{t:?}")).collect::<Vec<_>>().join(", "),
                m.name,
                absent.join(", "),
                if given { "" } else { "; no text model of that width in its folder has them all (name the model with --with MODEL)" }
            )
        });
    }
}

/// Every token text some projector type has libmtmd look up, once.
fn looked_up() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for p in &PROJECTOR_TYPES {
        for t in p.vision.lookups.slice().iter().chain(p.audio.lookups.slice()) {
            if !out.contains(&t.as_str()) {
                out.push(t.as_str());
            }
        }
    }
    out
}

/// How llama.cpp turns a token's text into its piece (llama-vocab.cpp
/// `token_to_piece` with `special`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Decode {
    /// SPM, WPM, UGM, and the BPE pre-tokenizers that escape whitespace: `▁` is a space.
    Escaped,
    /// Byte-level BPE (GPT-2's byte-to-unicode map).
    ByteLevel,
}

/// Which of the looked-up token texts ([`looked_up`]) some token of
/// `file`'s vocabulary decodes to: control, unknown and user-defined tokens
/// as written, byte tokens (`<0xNN>`) as their byte, normal ones decoded;
/// `None` without a vocabulary or with a tokenizer model whose decoding is
/// not modelled.
pub(crate) fn vocab_lookups(file: &GgufFile<'_>) -> Option<Vec<String>> {
    let model = file.get("tokenizer.ggml.model")?.value.as_string()?;
    let pre = file.get("tokenizer.ggml.pre").and_then(|kv| kv.value.as_string());
    // llama-vocab.cpp load: the BPE pre-tokenizers that keep escape_whitespaces
    const ESCAPING_PRE: [&[u8]; 3] = [b"gemma4", b"granite-embed-multi-311m", b"sarvam-moe"];
    let decode = match model.bytes {
        b"llama" | b"bert" | b"t5" => Decode::Escaped,
        b"gpt2" if pre.is_some_and(|p| ESCAPING_PRE.contains(&p.bytes)) => Decode::Escaped,
        b"gpt2" => Decode::ByteLevel,
        _ => return None,
    };
    let tokens = *file.get("tokenizer.ggml.tokens")?.value.as_array()?;
    let types = file.get("tokenizer.ggml.token_type").and_then(|kv| kv.value.as_array().copied());
    let mut types = types.as_ref().map(|a| a.iter());
    let targets = looked_up();
    let longest = targets.iter().map(|t| t.len()).max().unwrap_or(0);
    let mut found: Vec<String> = Vec::new();
    for e in tokens.iter() {
        let ty = match types.as_mut().and_then(Iterator::next).map(|t| t.value) {
            Some(Value::I32(t)) => t,
            _ => 1, // normal
        };
        let Value::String(text) = e.value else { continue };
        // a piece is never longer than its text, nor shorter than a third of it
        if text.bytes.len() > longest.saturating_mul(3) {
            continue;
        }
        let Some(piece) = piece(text.bytes, ty, decode) else { continue };
        if let Some(t) = targets.iter().find(|t| t.as_bytes() == piece.as_slice())
            && !found.iter().any(|f| f == t)
        {
            found.push((*t).to_string());
            if found.len() == targets.len() {
                break;
            }
        }
    }
    Some(found)
}

/// A token's piece; `None` for the types llama.cpp gives no piece (unused, undefined).
fn piece(text: &[u8], ty: i32, decode: Decode) -> Option<Vec<u8>> {
    match ty {
        // unknown, control, user-defined: as written
        2..=4 => Some(text.to_vec()),
        // byte: `<0xNN>`
        6 if decode == Decode::Escaped => {
            let hex = text.strip_prefix(b"<0x")?.strip_suffix(b">")?;
            let hex = std::str::from_utf8(hex).ok()?;
            Some(vec![u8::from_str_radix(hex, 16).ok()?])
        }
        1 | 6 => match decode {
            Decode::Escaped => {
                let s = std::str::from_utf8(text).ok()?;
                Some(s.replace('\u{2581}', " ").into_bytes())
            }
            Decode::ByteLevel => std::str::from_utf8(text).ok()?.chars().map(gpt2_byte).collect(),
        },
        _ => None,
    }
}

/// The byte GPT-2's byte-to-unicode map gives `c`: the printable bytes
/// stand for themselves, the 68 others (0x00-0x20, 0x7F-0xA0, 0xAD) for
/// U+0100 onwards, in order.
fn gpt2_byte(c: char) -> Option<u8> {
    let u = u32::from(c);
    match u {
        0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF => u8::try_from(u).ok(),
        0x100..=0x120 => u8::try_from(u.checked_sub(0x100)?).ok(),
        0x121..=0x142 => u8::try_from(u.checked_sub(0x121)?.checked_add(0x7F)?).ok(),
        0x143 => Some(0xAD),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpt2_bytes_round_trip() {
        // GPT-2's map: printable bytes are themselves, the others from U+0100 in byte order
        let mut n = 0x100u32;
        for b in 0u8..=255 {
            let printable = matches!(b, 0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF);
            let c = if printable { char::from(b) } else { char::from_u32(n).unwrap() };
            if !printable {
                n += 1;
            }
            assert_eq!(gpt2_byte(c), Some(b), "{c:?}");
        }
        assert_eq!(n, 0x100 + 68);
        assert_eq!(gpt2_byte('\u{144}'), None);
        assert_eq!(gpt2_byte('\n'), None);
    }

    #[test]
    fn pieces_as_llama_cpp_decodes_them() {
        assert_eq!(piece(b"<0x0A>", 6, Decode::Escaped), Some(b"\n".to_vec()));
        assert_eq!(piece("\u{10a}\u{10a}".as_bytes(), 1, Decode::ByteLevel), Some(b"\n\n".to_vec()));
        assert_eq!(piece("\u{2581}a".as_bytes(), 1, Decode::Escaped), Some(b" a".to_vec()));
        assert_eq!(piece(b"<global-img>", 3, Decode::ByteLevel), Some(b"<global-img>".to_vec()));
        assert_eq!(piece(b"\n\n", 4, Decode::Escaped), Some(b"\n\n".to_vec()));
        assert_eq!(piece(b"<image>", 5, Decode::Escaped), None);
    }
}
