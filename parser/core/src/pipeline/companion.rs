//! The models a projector, a LoRA adapter or a control vector is paired
//! with: those named with `--with` ([`super::Settings::with`]), else the
//! models in the file's own folder (at most
//! [`limits::MAX_COMPANION_CANDIDATES`] `.gguf` files, by name). Each is
//! read once per run (its metadata, under the run's caps) and kept in the
//! run's [`Cache`] as the few facts the pairing compares
//! ([`ModelFacts`]).
#![forbid(unsafe_code)]

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{Input, Settings};
use crate::limits;
use crate::report::{Companions, ModelFacts};

/// What a run has read of the models it pairs with: by input, the model's
/// facts, `None` for a file that is not a model, or why it could not be
/// read.
#[derive(Clone, Debug, Default)]
pub struct Cache(Arc<Mutex<Known>>);

/// What a run has read: each model by input, each folder's `.gguf` files.
#[derive(Debug, Default)]
struct Known {
    models: HashMap<Input, Read>,
    folders: HashMap<PathBuf, Result<Vec<PathBuf>, String>>,
    /// The inputs of the run a pairing of another input may ask for (as
    /// given): the `--with` models, and the files of a folder that holds
    /// other inputs but is no collection. Their own validations keep their
    /// facts ([`remember`]); no other input's does.
    askable: HashSet<Input>,
}

/// One model as read: its facts, `None` when it is not a model, or why it
/// could not be read.
type Read = Result<Option<Arc<ModelFacts>>, String>;

/// The models `input` is paired with under `settings`.
pub fn find(input: &Input, settings: &Settings) -> Companions {
    if !settings.with.is_empty() {
        let mut models = Vec::new();
        let mut problems = Vec::new();
        for m in &settings.with {
            match facts(m, settings) {
                Ok(Some(f)) => models.push(f),
                Ok(None) => problems.push(format!("{} is not a model llama.cpp loads", m.shown())),
                Err(e) => problems.push(format!("{} could not be read: {e}", m.shown())),
            }
        }
        let none_because = (models.is_empty()).then(|| problems.join("; "));
        return Companions { models, given: true, none_because };
    }
    if input.path().is_none()
        && let Some(folder) = &settings.folder
    {
        return from_folder(input, folder, settings);
    }
    let Some(path) = input.path() else {
        return Companions {
            none_because: Some("not looked for beside a URL or bytes (name the model with --with MODEL)".into()),
            ..Companions::default()
        };
    };
    let siblings = match folder_models(path, &settings.companion_cache) {
        Ok(s) => s,
        Err(why) => return Companions { none_because: Some(why), ..Companions::default() },
    };
    let siblings: Vec<Input> = siblings.into_iter().map(Input::Path).collect();
    models_among(siblings.iter(), settings)
}

/// The models among a folder's other files, in order, as found beside the
/// input (not named with `--with`).
fn models_among<'a>(candidates: impl Iterator<Item = &'a Input>, settings: &Settings) -> Companions {
    let models = candidates.filter_map(|f| facts(f, settings).ok().flatten()).collect::<Vec<_>>();
    let none_because = models.is_empty().then(|| NO_MODEL_IN_FOLDER.to_string());
    Companions { models, given: false, none_because }
}

/// The models among `folder` (the files a front end was given together, as
/// one folder's) other than `input`, as the models of a path's folder are
/// found: by name, at most [`limits::MAX_COMPANION_CANDIDATES`] of them.
fn from_folder(input: &Input, folder: &[Input], settings: &Settings) -> Companions {
    let mut others: Vec<&Input> = folder.iter().filter(|f| *f != input && f.shown() != input.shown()).collect();
    if others.len() > limits::MAX_COMPANION_CANDIDATES {
        return Companions { none_because: Some(collection_note()), ..Companions::default() };
    }
    others.sort_by_key(|f| f.shown());
    models_among(others.into_iter(), settings)
}

const NO_MODEL_IN_FOLDER: &str = "no model in the same folder (name it with --with MODEL)";

fn collection_note() -> String {
    format!(
        "its folder holds more than {} GGUF files, a collection rather than one model's folder (name the model with --with MODEL)",
        limits::MAX_COMPANION_CANDIDATES
    )
}

/// The `.gguf` files of `path`'s folder other than `path`, listed once per
/// run and folder.
fn folder_models(path: &Path, cache: &Cache) -> Result<Vec<PathBuf>, String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let listed = cache.0.lock().ok().and_then(|c| c.folders.get(&dir).cloned());
    let listed = match listed {
        Some(l) => l,
        None => {
            let l = siblings(&dir);
            if let Ok(mut c) = cache.0.lock() {
                c.folders.insert(dir, l.clone());
            }
            l
        }
    };
    listed.map(|all| all.into_iter().filter(|p| p.file_name() != path.file_name()).collect())
}

/// The `.gguf` files of the folder `dir`, by name; `Err` with the
/// reason when the folder holds more than
/// [`limits::MAX_COMPANION_CANDIDATES`] (not one model's folder: a
/// collection, whose files are not each other's companions).
fn siblings(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(Vec::new()) };
    let mut out: Vec<PathBuf> = Vec::new();
    // One more than the candidates: the file itself is among them.
    let most = limits::MAX_COMPANION_CANDIDATES.saturating_add(1);
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        if !p.extension().is_some_and(|x| x.eq_ignore_ascii_case("gguf")) || !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        if out.len() >= most {
            return Err(collection_note());
        }
        out.push(p);
    }
    out.sort();
    Ok(out)
}

/// The facts of the model `input`, read once per run.
fn facts(input: &Input, settings: &Settings) -> Read {
    let key = input.identity();
    if let Ok(cache) = settings.companion_cache.0.lock()
        && let Some(hit) = cache.models.get(&key)
    {
        return hit.clone();
    }
    // Its metadata read as a validation reads it (under the run's caps),
    // container checks only: its facts come from that parse.
    let validator =
        crate::Validator::new(crate::Options { container_only: true, ..settings.validator.options().clone() });
    let name = input.shown();
    let until = settings.timeout.and_then(|t| web_time::Instant::now().checked_add(t));
    let read = input
        .open(&settings.policy, settings.opener.as_deref(), until)
        .map_err(|f| f.message)
        .and_then(|opened| validator.validate(opened.source()).map_err(|e| e.to_string()))
        .map(|v| v.model_facts(&name).map(Arc::new));
    if let Ok(mut cache) = settings.companion_cache.0.lock() {
        cache.models.insert(key, read.clone());
    }
    read
}

/// Notes which of a run's `inputs` a pairing of another of them may ask
/// for: the models named with `--with`, and the files of a folder that
/// holds other inputs of the run and is no collection (at most
/// [`limits::MAX_COMPANION_CANDIDATES`] of them).
pub(crate) fn note_run(inputs: &[Input], settings: &Settings) {
    // By the folder's name as given: the bytes before the last separator
    // (walking a `Path`'s components for its parent costs more than the
    // rest of this).
    fn folder_of(p: &Path) -> &[u8] {
        let bytes = p.as_os_str().as_encoded_bytes();
        let end = bytes.iter().rposition(|b| std::path::is_separator(char::from(*b))).unwrap_or(0);
        bytes.get(..end).unwrap_or_default()
    }
    let mut per_folder: HashMap<&[u8], usize, foldhash::fast::RandomState> = HashMap::default();
    for p in inputs.iter().filter_map(Input::path) {
        let n = per_folder.entry(folder_of(p)).or_insert(0);
        *n = n.saturating_add(1);
    }
    let shares_a_folder = |p: &Path| {
        per_folder
            .get(folder_of(p))
            .is_some_and(|n| (2..=limits::MAX_COMPANION_CANDIDATES.saturating_add(1)).contains(n))
    };
    let with: HashSet<Input> = settings.with.iter().map(Input::identity).collect();
    let askable = inputs
        .iter()
        .filter(|i| i.path().is_some_and(shares_a_folder) || (!with.is_empty() && with.contains(&i.identity())))
        .cloned()
        .collect();
    if let Ok(mut cache) = settings.companion_cache.0.lock() {
        cache.askable = askable;
    }
}

/// Keeps what the run's own validation of `input` says of it as a model
/// (`validated`, read and parsed once) when a pairing of another input may
/// ask for it ([`note_run`]): a projector, adapter or control vector of the
/// run that pairs with it later reads nothing again.
pub(crate) fn remember(input: &Input, validated: &crate::Validated, settings: &Settings) {
    let Ok(mut cache) = settings.companion_cache.0.lock() else { return };
    if cache.askable.is_empty() || !cache.askable.contains(input) {
        return;
    }
    let key = input.identity();
    if cache.models.contains_key(&key) {
        return;
    }
    let facts = validated.model_facts(&input.shown()).map(Arc::new);
    cache.models.insert(key, Ok(facts));
}
