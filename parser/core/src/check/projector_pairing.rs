//! A projector and its text model: libmtmd's `mtmd_context` refuses a pair
//! whose projector output width (`clip_n_mmproj_embd`) is not the text
//! model's input width (`llama_model_n_embd_inp`). The models come from
//! [`crate::report::Options::companions`]: named with `--with` (the
//! projector must fit each), or found in its folder (it must fit one).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use crate::parse::GgufFile;
use crate::report::{Examined, Sink};
use crate::rules::RuleId;

use super::kv::kv_path;

/// Checks the projector's `output_width` against the run's models.
pub(crate) fn check(file: &GgufFile<'_>, output_width: Option<u64>, sink: &mut Sink<'_>, examined: &mut Vec<Examined>) {
    let Some(companions) = super::companions(sink, "text model", examined) else { return };
    let given = companions.given;
    let models = &companions.models;
    let Some(width) = output_width else {
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
