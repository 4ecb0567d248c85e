//! Diffusion models (FLUX, SD3, SD1/SDXL UNets, Wan, Qwen-Image, ...) as
//! the two loaders that run them read them: stable-diffusion.cpp (its
//! version detection replayed over the tensor names and shapes, the
//! tensors its builder then creates, the values it divides by or aborts
//! on) and ComfyUI-GGUF (the architectures it accepts, its metadata keys,
//! `comfy.gguf.orig_shape.*`). The facts are generated from both sources
//! ([`super::diffusion_table`]); this module evaluates them.
//!
//! Which loader's refusals are errors is the run's `--loader` (unset:
//! stable-diffusion.cpp's, with ComfyUI-GGUF's as warnings; the levels
//! are the catalogue's, flipped by [`crate::Validator::with_loader`]).
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects, clippy::cast_possible_truncation)]

use std::collections::HashMap;

use crate::loader::Loader;
use crate::parse::{GgufFile, TensorInfo, Value};
use crate::report::{Examined, Sink};
use crate::rules::RuleId;

use super::diffusion_table as table;
use super::kv::kv_path;
use super::tensors::tensor_path;

/// Whether a file is for a diffusion loader: an architecture of
/// ComfyUI-GGUF's lists that llama.cpp does not know, or no architecture
/// and tensor names stable-diffusion.cpp or ComfyUI-GGUF recognise a
/// diffusion model by. (A file without tensors is a vocabulary or a stub.)
pub(crate) fn is_for_diffusion(file: &GgufFile<'_>, arch: Option<&str>) -> bool {
    match arch {
        Some(a) => {
            (table::COMFY_IMG_ARCHS.contains(&a) || table::COMFY_COMPAT_ARCHS.contains(&a))
                && !super::llama_arches::LLAMA_ARCHES.contains(&a)
        }
        None => !file.tensors.is_empty() && (detect(file).version.is_some() || comfy_detect(file).is_some()),
    }
}

/// The rules of ggml's reader a diffusion loader reads past in `file`:
/// ComfyUI-GGUF reads with gguf-py (no limit on names or dims);
/// stable-diffusion.cpp's ggml takes names up to
/// [`table::GGML_MAX_NAME`] - 1 bytes, and a file its ggml refuses (a
/// longer name, more than 4 dims) is read again by its own reader, which
/// folds extra dims into the fourth and reads an array-valued key wrongly
/// ([`table::FALLBACK_READER`]): only a file without one loads that way.
pub(crate) fn tolerated(file: &GgufFile<'_>, loader: Loader) -> Vec<RuleId> {
    const NAMES: [RuleId; 2] = [RuleId::TensorName64, RuleId::TensorNameTooLong];
    match loader {
        Loader::LlamaCpp => Vec::new(),
        Loader::ComfyuiGguf => [NAMES.as_slice(), &[RuleId::TensorNDims]].concat(),
        Loader::SdCpp => {
            let arrays = file.kvs.iter().any(|kv| matches!(kv.value, Value::Array(_)));
            let longest = file.tensors.iter().map(|t| t.name.bytes.len()).max().unwrap_or(0);
            let names_fit = u64::try_from(longest).is_ok_and(|n| n < table::GGML_MAX_NAME);
            let mut out = Vec::new();
            if names_fit || !arrays {
                out.extend(NAMES);
            }
            if !arrays {
                out.push(RuleId::TensorNDims);
            }
            out
        }
    }
}

/// The version stable-diffusion.cpp detects (`VERSION_FLUX`, ...; None:
/// `VERSION_COUNT`, "get sd version from file failed").
struct Detection {
    version: Option<&'static str>,
    /// A UNet's blocks were seen (`is_unet`): without a text encoder's
    /// tensors in the same file, no SD1/SD2/SDXL version is decided.
    unet: bool,
}

/// A tensor's `ne` as stable-diffusion.cpp holds it: five entries, those
/// past the file's dims 1 (a default TensorStorage is all ones).
fn ne5(t: &TensorInfo<'_>) -> [i64; 5] {
    let mut ne = [1i64; 5];
    for (slot, d) in ne.iter_mut().zip(t.dims()) {
        *slot = i64::try_from(d).unwrap_or(i64::MAX);
    }
    ne
}

/// The name stable-diffusion.cpp gives a tensor of a file loaded as the
/// diffusion model: [`table::DIFFUSION_PREFIX`] before it unless it is
/// there.
fn prefixed(name: &[u8]) -> String {
    let name = String::from_utf8_lossy(name);
    if name.starts_with(table::DIFFUSION_PREFIX) {
        name.into_owned()
    } else {
        format!("{}{name}", table::DIFFUSION_PREFIX)
    }
}

/// Values of detection: flags, integers and stored tensors' `ne`.
#[derive(Default)]
struct Vars {
    flags: HashMap<&'static str, bool>,
    ints: HashMap<&'static str, i64>,
    tensors: HashMap<&'static str, [i64; 5]>,
}

impl Vars {
    fn initial() -> Vars {
        let mut v = Vars::default();
        for &(name, ty, init) in table::DETECT_VARS {
            match ty {
                "bool" => {
                    v.flags.insert(name, init == "true");
                }
                "TensorStorage" => {
                    v.tensors.insert(name, [1; 5]);
                }
                _ => {
                    v.ints.insert(name, init.parse().unwrap_or(0));
                }
            }
        }
        v
    }
}

/// Replays `ModelLoader::get_sd_version` ([`table::DETECT_TESTS`], then
/// [`table::DETECT_DEFS`] and [`table::DETECT_DECIDE`]) over the file's
/// tensors in file order.
fn detect(file: &GgufFile<'_>) -> Detection {
    // Each test's searcher built once per process, not once per tensor
    // and test (a file of no architecture is tried against every test).
    static FINDERS: std::sync::OnceLock<Vec<memchr::memmem::Finder<'static>>> = std::sync::OnceLock::new();
    let finders = FINDERS
        .get_or_init(|| table::DETECT_TESTS.iter().map(|t| memchr::memmem::Finder::new(t.2.as_bytes())).collect());
    let mut vars = Vars::initial();
    for t in &file.tensors {
        let name = prefixed(t.name.bytes);
        let ne = ne5(t);
        let mut group: Option<u16> = None;
        let mut matched_group = false;
        for (&(g, kind, needle, actions), finder) in table::DETECT_TESTS.iter().zip(finders) {
            if group != Some(g) {
                group = Some(g);
                matched_group = false;
            }
            if matched_group {
                continue; // the rows of a group are one test, OR-ed
            }
            let hit = match kind {
                "equals" => name == needle,
                _ => finder.find(name.as_bytes()).is_some(),
            };
            if !hit {
                continue;
            }
            matched_group = true;
            for action in actions.iter() {
                if let Some(v) = run_action(action, &name, &ne, &mut vars) {
                    return Detection { version: Some(v), unet: false };
                }
            }
        }
    }
    let unet = vars.flags.get("is_unet").copied().unwrap_or(false);
    let defs: Vec<(&str, bool)> =
        table::DETECT_DEFS.iter().map(|&(n, e)| (n, Expr::eval_bool(e, &vars, &[]).unwrap_or(false))).collect();
    for &(conds, version) in table::DETECT_DECIDE {
        if conds.iter().all(|c| Expr::eval_bool(c, &vars, &defs).unwrap_or(false)) {
            return Detection { version: (version != "VERSION_COUNT").then_some(version), unet };
        }
    }
    Detection { version: None, unet }
}

/// One action of a detection test; `Some(version)` for `return V`.
fn run_action(action: &'static str, name: &str, ne: &[i64; 5], vars: &mut Vars) -> Option<&'static str> {
    if let Some(v) = action.strip_prefix("return ") {
        return Some(v);
    }
    if let Some(rest) = action.strip_prefix("set ") {
        let (flag, cond) = rest.split_once(" if ").map_or((rest, None), |(f, c)| (f, Some(c)));
        let holds = match cond {
            None => true,
            Some(c) => match c.strip_prefix("name contains \"") {
                Some(tail) => {
                    let (needle, test) = tail.split_once("\" and ").unwrap_or((tail, ""));
                    name.contains(needle) && ne_test(test, ne)
                }
                None => vars.flags.get(c).copied().unwrap_or(false),
            },
        };
        if holds {
            vars.flags.insert(flag, true);
        }
        return None;
    }
    if let Some(rest) = action.strip_prefix("store ") {
        let (var, what) = rest.split_once(" = ")?;
        if what == "this tensor" {
            vars.tensors.insert(var, *ne);
        } else if let Some(k) = what.strip_prefix("ne[").and_then(|s| s.strip_suffix(']')) {
            let k: usize = k.parse().ok()?;
            vars.ints.insert(var, ne.get(k).copied().unwrap_or(1));
        }
    }
    None
}

/// `ne[K] == N` on a tensor's `ne`.
fn ne_test(test: &str, ne: &[i64; 5]) -> bool {
    let Some((lhs, rhs)) = test.split_once(" == ") else { return false };
    let k = lhs.trim().strip_prefix("ne[").and_then(|s| s.strip_suffix(']')).and_then(|k| k.parse::<usize>().ok());
    match (k.and_then(|k| ne.get(k)), rhs.trim().parse::<i64>()) {
        (Some(v), Ok(n)) => *v == n,
        _ => false,
    }
}

/// The small expression language of the table's conditions and shapes:
/// `a && !b`, `x.ne[k] == 768`, `3*hidden_size+mlp_hidden_dim`,
/// `hidden_size/num_heads`; integers are i128, checked.
struct Expr<'s> {
    tokens: Vec<&'s str>,
    at: usize,
}

/// What an identifier of an expression stands for.
trait Lookup {
    fn int(&self, name: &str) -> Option<i128>;
    fn flag(&self, name: &str) -> Option<bool>;
}

struct DetectScope<'v> {
    vars: &'v Vars,
    defs: &'v [(&'v str, bool)],
}

impl Lookup for DetectScope<'_> {
    fn int(&self, name: &str) -> Option<i128> {
        if let Some((var, k)) = name.split_once(".ne[") {
            let k: usize = k.strip_suffix(']')?.parse().ok()?;
            return self.vars.tensors.get(var).and_then(|ne| ne.get(k)).map(|v| i128::from(*v));
        }
        self.vars.ints.get(name).map(|v| i128::from(*v))
    }

    fn flag(&self, name: &str) -> Option<bool> {
        self.vars.flags.get(name).copied().or_else(|| self.defs.iter().find(|(n, _)| *n == name).map(|(_, b)| *b))
    }
}

impl<'s> Expr<'s> {
    fn tokenize(s: &'s str) -> Vec<&'s str> {
        let mut out = Vec::new();
        let bytes = s.as_bytes();
        let mut i = 0usize;
        while let Some(&c) = bytes.get(i) {
            let start = i;
            let two = s.get(i..i.saturating_add(2)).unwrap_or("");
            if c == b' ' {
                i = i.saturating_add(1);
                continue;
            }
            if ["&&", "||", "==", "!=", "<=", ">="].contains(&two) {
                i = i.saturating_add(2);
            } else if b"()!*/+-<>".contains(&c) {
                i = i.saturating_add(1);
            } else {
                // a word: identifier, number, or `x.ne[k]`
                while let Some(&d) = bytes.get(i) {
                    if d.is_ascii_alphanumeric() || d == b'_' || d == b'.' || d == b'[' || d == b']' {
                        i = i.saturating_add(1);
                    } else {
                        break;
                    }
                }
                if i == start {
                    i = i.saturating_add(1); // an unknown character: its own token, fails later
                }
            }
            if let Some(tok) = s.get(start..i) {
                out.push(tok);
            }
        }
        out
    }

    fn new(s: &'s str) -> Expr<'s> {
        Expr { tokens: Expr::tokenize(s), at: 0 }
    }

    fn eval_bool(s: &str, vars: &Vars, defs: &[(&str, bool)]) -> Option<bool> {
        let scope = DetectScope { vars, defs };
        let mut e = Expr::new(s);
        let v = e.or(&scope)?;
        (e.at == e.tokens.len()).then_some(v)
    }

    /// An integer expression (a shape): None when it names something unknown.
    fn eval_int(s: &str, scope: &dyn Lookup) -> Option<i128> {
        let mut e = Expr::new(s);
        let v = e.sum(scope)?;
        (e.at == e.tokens.len()).then_some(v)
    }

    fn peek(&self) -> Option<&'s str> {
        self.tokens.get(self.at).copied()
    }

    fn eat(&mut self, tok: &str) -> bool {
        if self.peek() == Some(tok) {
            self.at = self.at.saturating_add(1);
            true
        } else {
            false
        }
    }

    fn or(&mut self, scope: &dyn Lookup) -> Option<bool> {
        let mut v = self.and(scope)?;
        while self.eat("||") {
            let r = self.and(scope)?;
            v = v || r;
        }
        Some(v)
    }

    fn and(&mut self, scope: &dyn Lookup) -> Option<bool> {
        let mut v = self.not(scope)?;
        while self.eat("&&") {
            let r = self.not(scope)?;
            v = v && r;
        }
        Some(v)
    }

    fn not(&mut self, scope: &dyn Lookup) -> Option<bool> {
        if self.eat("!") {
            return self.not(scope).map(|b| !b);
        }
        self.comparison(scope)
    }

    fn comparison(&mut self, scope: &dyn Lookup) -> Option<bool> {
        // `( bool )` or `int OP int` or a flag
        if self.peek() == Some("(") {
            let save = self.at;
            self.at = self.at.saturating_add(1);
            if let Some(b) = self.or(scope)
                && self.eat(")")
            {
                return Some(b);
            }
            self.at = save;
        }
        let save = self.at;
        if let Some(tok) = self.peek()
            && let Some(b) = scope.flag(tok)
        {
            let next = self.tokens.get(self.at.saturating_add(1)).copied();
            if !matches!(next, Some("==" | "!=" | "<" | ">" | "<=" | ">=" | "*" | "/" | "+" | "-")) {
                self.at = self.at.saturating_add(1);
                return Some(b);
            }
        }
        self.at = save;
        let lhs = self.sum(scope)?;
        let op = self.peek()?;
        self.at = self.at.saturating_add(1);
        let rhs = self.sum(scope)?;
        Some(match op {
            "==" => lhs == rhs,
            "!=" => lhs != rhs,
            "<" => lhs < rhs,
            ">" => lhs > rhs,
            "<=" => lhs <= rhs,
            ">=" => lhs >= rhs,
            _ => return None,
        })
    }

    fn sum(&mut self, scope: &dyn Lookup) -> Option<i128> {
        let mut v = self.product(scope)?;
        loop {
            if self.eat("+") {
                v = v.checked_add(self.product(scope)?)?;
            } else if self.eat("-") {
                v = v.checked_sub(self.product(scope)?)?;
            } else {
                return Some(v);
            }
        }
    }

    fn product(&mut self, scope: &dyn Lookup) -> Option<i128> {
        let mut v = self.atom(scope)?;
        loop {
            if self.eat("*") {
                v = v.checked_mul(self.atom(scope)?)?;
            } else if self.eat("/") {
                v = v.checked_div(self.atom(scope)?)?;
            } else {
                return Some(v);
            }
        }
    }

    fn atom(&mut self, scope: &dyn Lookup) -> Option<i128> {
        if self.eat("(") {
            let v = self.sum(scope)?;
            return self.eat(")").then_some(v);
        }
        let tok = self.peek()?;
        self.at = self.at.saturating_add(1);
        tok.parse::<i128>().ok().or_else(|| scope.int(tok))
    }
}

/// The families whose builder the table spells out.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Family {
    Flux,
    Sd3,
    Unet,
    Wan,
    QwenImage,
}

impl Family {
    fn of(version: &str) -> Option<Family> {
        let v = version.strip_prefix("VERSION_").unwrap_or(version);
        if v.starts_with("FLUX2") || v.starts_with("CHROMA_RADIANCE") {
            return None; // variants of the FLUX builder the table does not spell out
        }
        if v.starts_with("FLUX") || v == "FLEX_2" {
            Some(Family::Flux)
        } else if v == "SD3" {
            Some(Family::Sd3)
        } else if v.starts_with("WAN") {
            Some(Family::Wan)
        } else if v == "QWEN_IMAGE" {
            Some(Family::QwenImage)
        } else if v.starts_with("SD1")
            || v.starts_with("SD2")
            || v.starts_with("SDXL")
            || v.starts_with("SDXS")
            || v == "SVD"
        {
            Some(Family::Unet)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Family::Flux => "flux",
            Family::Sd3 => "sd3",
            Family::Unet => "unet",
            Family::Wan => "wan",
            Family::QwenImage => "qwen_image",
        }
    }

    fn tensors(self) -> &'static [(&'static str, &'static [&'static str], &'static str)] {
        match self {
            Family::Flux => table::FLUX_TENSORS,
            Family::Sd3 => table::SD3_TENSORS,
            Family::Unet => table::UNET_TENSORS,
            Family::Wan => table::WAN_TENSORS,
            Family::QwenImage => table::QWEN_IMAGE_TENSORS,
        }
    }
}

/// The hyper-parameters of one family as its builder derives them
/// ([`table::HYPERPARAMS`]), and the conditions it builds tensors under.
struct Params {
    ints: HashMap<&'static str, i128>,
    flags: HashMap<&'static str, bool>,
    /// The variable `{i}` runs to (exclusive) for a row that names no bound.
    layers: &'static str,
}

impl Lookup for Params {
    fn int(&self, name: &str) -> Option<i128> {
        self.ints.get(name).copied()
    }

    fn flag(&self, name: &str) -> Option<bool> {
        self.flags.get(name).copied()
    }
}

/// The tensors of the file by their stable-diffusion.cpp name.
struct Named<'f, 'a> {
    by_name: HashMap<String, &'f TensorInfo<'a>>,
}

impl<'f, 'a> Named<'f, 'a> {
    fn new(tensors: &[&'f TensorInfo<'a>]) -> Named<'f, 'a> {
        Named { by_name: tensors.iter().map(|t| (prefixed(t.name.bytes), *t)).collect() }
    }

    fn ending(&self, suffix: &str) -> Option<&'f TensorInfo<'a>> {
        // the last in file order, as the builder's loop over the map keeps it
        self.by_name.iter().filter(|(n, _)| n.ends_with(suffix)).map(|(_, t)| *t).max_by_key(|t| t.index)
    }

    fn any_contains(&self, needle: &str) -> bool {
        self.by_name.keys().any(|n| n.contains(needle))
    }

    /// max N + 1 over names with `head` followed by a number (0 if none);
    /// a name whose number does not fit counts as one past the tensors.
    fn count_after(&self, head: &str, except: Option<&str>) -> i128 {
        let mut max: i128 = 0;
        for n in self.by_name.keys() {
            let Some(pos) = n.find(head) else { continue };
            if except.is_some_and(|e| n.contains(e)) {
                continue;
            }
            let tail = n.get(pos.saturating_add(head.len())..).unwrap_or("");
            let digits: String = tail.chars().take_while(char::is_ascii_digit).collect();
            if digits.is_empty() {
                continue;
            }
            let n: i128 = digits.parse().unwrap_or(i128::from(u32::MAX));
            max = max.max(n.saturating_add(1));
        }
        max
    }
}

fn ne_of(t: &TensorInfo<'_>, k: usize) -> i128 {
    i128::from(ne5(t).get(k).copied().unwrap_or(1))
}

/// The hyper-parameters of `family` from the file, as its builder reads them.
fn params(family: Family, version: &str, named: &Named<'_, '_>) -> Params {
    let mut ints: HashMap<&'static str, i128> = HashMap::new();
    let mut flags: HashMap<&'static str, bool> = HashMap::new();
    // the table's defaults and hard-coded values, where a number
    for &(fam, name, value, _) in table::HYPERPARAMS {
        if fam == family.name() {
            if let Ok(v) = value.trim_end_matches('f').parse::<i128>() {
                ints.insert(name, v);
            } else if value == "true" || value == "false" {
                flags.insert(name, value == "true");
            }
        }
    }
    let v = version.strip_prefix("VERSION_").unwrap_or(version);
    let layers = match family {
        Family::Flux => {
            flags.insert("is_chroma", named.any_contains("distilled_guidance_layer.in_proj.weight"));
            flags.insert("guidance_embed", named.any_contains("guidance_in.in_layer.weight"));
            flags.insert("CHROMA_RADIANCE", v == "CHROMA_RADIANCE");
            if named.any_contains("__32x32__") {
                ints.insert("patch_size", 32);
            }
            let in_channels = match v {
                "FLUX_FILL" => 384,
                "FLUX_CONTROLS" => 128,
                "FLEX_2" => 196,
                _ => 64,
            };
            ints.insert("in_channels", in_channels);
            if let Some(t) = named.ending("txt_in.weight") {
                ints.insert("context_in_dim", ne_of(t, 0));
                ints.insert("hidden_size", ne_of(t, 1));
            }
            let hidden = ints.get("hidden_size").copied().unwrap_or(3072);
            let head_dim = ["double_blocks.0.txt_attn.norm.key_norm.scale", "single_blocks.0.norm.key_norm.scale"]
                .iter()
                .filter_map(|s| named.ending(s))
                .max_by_key(|t| t.index)
                .map_or(0, |t| ne_of(t, 0));
            ints.insert("head_dim", head_dim);
            if let Some(h) = hidden.checked_div(head_dim) {
                ints.insert("num_heads", h);
            } else {
                ints.remove("num_heads");
            }
            ints.insert("mlp_hidden_dim", hidden.saturating_mul(4));
            ints.insert("depth", named.count_after("double_blocks.", None));
            ints.insert("depth_single_blocks", named.count_after("single_blocks.", None));
            "depth"
        }
        Family::Sd3 => {
            let depth = named.count_after("joint_blocks.", None).max(24);
            ints.insert("depth", depth);
            ints.insert("hidden_size", depth.saturating_mul(64));
            ints.insert("num_heads", depth);
            let d_self = named
                .by_name
                .keys()
                .filter(|n| n.contains("attn2"))
                .map(|n| named_index(n, "joint_blocks."))
                .max()
                .unwrap_or(-1);
            ints.insert("d_self", d_self);
            if d_self >= 0 {
                ints.insert("num_patchs", 36864 * 4);
            }
            "depth"
        }
        Family::Wan => {
            ints.insert("num_layers", named.count_after("blocks.", Some("vace_blocks.")));
            ints.insert("vace_layers", named.count_after("vace_blocks.", None));
            flags.insert("i2v", named.any_contains("img_emb"));
            // flf_pos_embed_token_number is 514 with this tensor, else 0 (HYPERPARAMS)
            flags.insert("flf", named.any_contains("img_emb.emb_pos"));
            let (text_dim, freq_dim, _) = table::WAN_FIXED;
            ints.insert("text_dim", i128::from(text_dim));
            ints.insert("freq_dim", i128::from(freq_dim));
            "num_layers"
        }
        Family::QwenImage => {
            ints.insert("num_layers", named.count_after("transformer_blocks.", None));
            let inner = ints
                .get("num_attention_heads")
                .copied()
                .unwrap_or(24)
                .saturating_mul(ints.get("attention_head_dim").copied().unwrap_or(128));
            ints.insert("inner_dim", inner);
            "num_layers"
        }
        Family::Unet => {
            let in_ch = if v.ends_with("INPAINT") {
                9
            } else if v.ends_with("PIX2PIX") || v == "SVD" {
                8
            } else {
                4
            };
            ints.insert("in_channels", in_ch);
            "num_res_blocks"
        }
    };
    Params { ints, flags, layers }
}

/// N of `head`N in `name` (-1 without one).
fn named_index(name: &str, head: &str) -> i128 {
    name.find(head)
        .and_then(|p| name.get(p.saturating_add(head.len())..))
        .map(|t| t.chars().take_while(char::is_ascii_digit).collect::<String>())
        .and_then(|d| d.parse().ok())
        .unwrap_or(-1)
}

/// Wan's configuration for the file ([`table::WAN_CONFIGS`]): None when
/// `num_layers` is neither of the sizes the builder knows.
fn wan_config(p: &mut Params, version: &str) -> Option<&'static str> {
    let layers = p.int("num_layers")?;
    let i2v = p.flag("i2v").unwrap_or(false);
    let vace = p.int("vace_layers").unwrap_or(0) > 0;
    let flf = p.flag("flf").unwrap_or(false);
    let v = version.strip_prefix("VERSION_").unwrap_or(version);
    for &(n, cond, desc, dim, ffn, heads, in_dim, out_dim) in table::WAN_CONFIGS {
        if i128::from(n) != layers {
            continue;
        }
        let holds = match cond {
            "otherwise" => true,
            "version == WAN2_2_TI2V" => v == "WAN2_2_TI2V",
            "vace_layers > 0" => vace,
            "model_type == i2v" => i2v,
            "model_type == t2v and version == WAN2_2_I2V" => !i2v && v == "WAN2_2_I2V",
            "model_type == t2v and vace_layers > 0" => !i2v && vace,
            "model_type == t2v" => !i2v,
            "model_type == i2v and flf_pos_embed_token_number > 0" => i2v && flf,
            _ => false,
        };
        if holds {
            for (k, v) in
                [("dim", dim), ("ffn_dim", ffn), ("num_heads", heads), ("in_dim", in_dim), ("out_dim", out_dim)]
            {
                p.ints.insert(k, i128::from(v));
            }
            return Some(desc);
        }
    }
    None
}

/// The outcome of one table row's condition: built (with the bindings of
/// its placeholders), not built, or a condition this module does not read.
enum Cond {
    Built(Vec<(char, Vec<String>)>),
    NotBuilt,
    Unread,
}

/// Reads a row's condition: conjunctions (`,`, `;`, ` and `) of `always`,
/// `FLAG`, `not FLAG`, `V > 0`, `i < V`, `i <= V`, `X in a, b`.
fn condition(cond: &str, p: &Params) -> Cond {
    // parenthetical remarks are commentary
    let mut text = String::new();
    let mut depth = 0u32;
    for c in cond.chars() {
        match c {
            '(' => depth = depth.saturating_add(1),
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => text.push(c),
            _ => {}
        }
    }
    let mut binds: Vec<(char, Vec<String>)> = Vec::new();
    let mut built = true;
    for part in text.split(';') {
        let part = part.trim();
        // `b in context_block, x_block` takes the rest of its part
        if let Some((var, list)) = part.split_once(" in ")
            && var.trim().chars().count() == 1
        {
            let Some(c) = var.trim().chars().next() else { return Cond::Unread };
            binds.push((c, list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()));
            continue;
        }
        for atom in part.split(',').flat_map(|a| a.split(" and ")) {
            let atom = atom.trim();
            if atom.is_empty() || atom.starts_with("always") {
                continue;
            }
            if let Some(bound) = atom.strip_prefix("i < ").or_else(|| atom.strip_prefix("i <= ")) {
                let Some(n) = p.int(bound.trim()) else { return Cond::Unread };
                let n = if atom.starts_with("i <= ") { n.saturating_add(1) } else { n };
                binds.push(('i', (0..n.clamp(0, MAX_BLOCKS)).map(|i| i.to_string()).collect()));
                continue;
            }
            if let Some(flag) = atom.strip_prefix("not ") {
                match p.flag(flag.trim()) {
                    Some(f) => built &= !f,
                    None => return Cond::Unread,
                }
                continue;
            }
            if let Some(var) = atom.strip_suffix(" > 0") {
                match p.int(var.trim()) {
                    Some(v) => built &= v > 0,
                    None => return Cond::Unread,
                }
                continue;
            }
            match p.flag(atom) {
                Some(f) => built &= f,
                None => return Cond::Unread,
            }
        }
    }
    if built { Cond::Built(binds) } else { Cond::NotBuilt }
}

/// Blocks expanded per row at most: past the tensors a file has, one is
/// surely missing (and reported once).
const MAX_BLOCKS: i128 = 4096;

/// The names a row's pattern gives under `binds` (and `{a,b}` alternatives).
fn expand(pattern: &str, binds: &[(char, Vec<String>)], p: &Params) -> Option<Vec<String>> {
    let mut names = vec![pattern.to_string()];
    let mut bound: Vec<char> = Vec::new();
    for (c, values) in binds {
        let key = format!("{{{c}}}");
        names = names.iter().flat_map(|n| values.iter().map(|v| n.replace(&key, v))).collect();
        bound.push(*c);
    }
    // `{i}` the row did not bound: the family's blocks
    if names.iter().any(|n| n.contains("{i}")) {
        let n = p.int(p.layers)?.clamp(0, MAX_BLOCKS);
        names = names.iter().flat_map(|s| (0..n).map(move |i| s.replace("{i}", &i.to_string()))).collect();
    }
    // `{a,b,c}` alternatives
    let mut out = Vec::new();
    for n in names {
        match (n.find('{'), n.find('}')) {
            (Some(open), Some(close)) if open < close => {
                let (head, rest) = n.split_at(open);
                let inner = rest.get(1..close.saturating_sub(open)).unwrap_or("");
                let tail = rest.get(close.saturating_sub(open).saturating_add(1)..).unwrap_or("");
                if !inner.contains(',') {
                    return None; // a placeholder nothing binds
                }
                out.extend(inner.split(',').map(|alt| format!("{head}{}{tail}", alt.trim())));
            }
            (None, None) => out.push(n),
            _ => return None,
        }
    }
    Some(out)
}

/// What [`check`] found, for `examined`.
struct Judged {
    version: Option<&'static str>,
    notes: Vec<String>,
}

/// Runs the diffusion rules for `loader` and says what was examined.
pub(crate) fn check(
    file: &GgufFile<'_>,
    arch: Option<&str>,
    tensors: &[&TensorInfo<'_>],
    loader: Loader,
    sink: &mut Sink<'_>,
    examined: &mut Vec<Examined>,
) {
    let judged = sd_cpp(file, arch, loader, tensors, sink);
    comfyui(file, arch, tensors, sink);
    let version = judged.version.map_or_else(
        || "no version detected".to_string(),
        |v| format!("stable-diffusion.cpp detects {}", v.strip_prefix("VERSION_").unwrap_or(v)),
    );
    let mut note = format!("judged for {loader} ({version}); ComfyUI-GGUF's loader rules checked too");
    if !judged.notes.is_empty() {
        note.push_str("; not checked: ");
        note.push_str(&judged.notes.join("; "));
    }
    examined.push(Examined::partly("diffusion", note));
}

/// stable-diffusion.cpp: detection, preconditions, the builder's tensors.
fn sd_cpp(
    file: &GgufFile<'_>,
    arch: Option<&str>,
    loader: Loader,
    tensors: &[&TensorInfo<'_>],
    sink: &mut Sink<'_>,
) -> Judged {
    let mut notes = Vec::new();
    let detection = detect(file);
    let Some(version) = detection.version else {
        sink.emit(
            RuleId::DiffusionVersionUnknown,
            super::KV_SECTION,
            || "tensors".into(),
            || version_unknown_message(detection.unet, arch, loader),
        );
        return Judged { version: None, notes };
    };
    let Some(family) = Family::of(version) else {
        notes.push(format!("the tensors of {version} (its builder is not in the table)"));
        return Judged { version: Some(version), notes };
    };
    let named = Named::new(tensors);
    let mut p = params(family, version, &named);
    if !preconditions(family, version, &mut p, sink) {
        return Judged { version: Some(version), notes };
    }
    builder_tensors(family, &p, &named, sink, &mut notes);
    if family == Family::Unet {
        notes.push("the UNet's input, middle and output blocks (only its fixed ends are in the table)".into());
    }
    Judged { version: Some(version), notes }
}

/// Why stable-diffusion.cpp decides no version, and where the file can go
/// instead: a UNet needs its text encoder in the same file; an
/// architecture ComfyUI-GGUF loads is judged for it with `--loader`.
fn version_unknown_message(unet: bool, arch: Option<&str>, loader: Loader) -> String {
    let mut m = String::from("stable-diffusion.cpp recognises no model in these tensor names");
    if unet {
        m.push_str(" (get_sd_version: a UNet's blocks, but no text encoder's token_embedding in the same file to tell SD1 from SD2, nor a second encoder for SDXL; a UNet file alone is never loaded)");
    } else {
        m.push_str(" (get_sd_version: no FLUX, SD3, UNet, Wan, Qwen-Image, ... tensor)");
    }
    m.push_str("; it refuses the file (\"get sd version from file failed\")");
    if let Some(a) = arch.filter(|a| loader != Loader::ComfyuiGguf && table::COMFY_IMG_ARCHS.contains(a)) {
        m.push_str(&format!("; its architecture `{a}` is one ComfyUI-GGUF loads: `--loader comfyui-gguf` judges the file for that loader"));
    }
    m
}

/// The values the builder divides by or aborts on ([`table::PRECONDITIONS`]);
/// false when one fails (the builder never gets to its tensors).
fn preconditions(family: Family, version: &str, p: &mut Params, sink: &mut Sink<'_>) -> bool {
    let row = |fam: &str, at: &str| table::PRECONDITIONS.iter().find(|r| r.0 == fam && r.1 == at);
    let crash = |sink: &mut Sink<'_>, at: &str, what: String| {
        let (expr, otherwise) = row(family.name(), at).map_or(("", ""), |r| (r.2, r.4));
        sink.emit(
            RuleId::DiffusionCrash,
            super::KV_SECTION,
            || "tensors".into(),
            || format!("{what}: stable-diffusion.cpp computes `{expr}` ({at}): {otherwise}"),
        );
    };
    match family {
        Family::Flux => {
            let head_dim = p.int("head_dim").unwrap_or(0);
            let hidden = p.int("hidden_size").unwrap_or(3072);
            if head_dim == 0 {
                crash(
                    sink,
                    "src/flux.hpp:1287",
                    "no `double_blocks.0.txt_attn.norm.key_norm.scale` or `single_blocks.0.norm.key_norm.scale` tensor (or one of length 0) gives FLUX's head size, which stays 0".into(),
                );
                return false;
            }
            let heads = p.int("num_heads").unwrap_or(0);
            let blocks = p.int("depth").unwrap_or(0) > 0 || p.int("depth_single_blocks").unwrap_or(0) > 0;
            if heads <= 0 || i32::try_from(heads).is_err() {
                let at = if p.int("depth").unwrap_or(0) > 0 { "src/flux.hpp:95" } else { "src/flux.hpp:439" };
                if blocks {
                    crash(
                        sink,
                        at,
                        format!(
                            "the head size {head_dim} (key_norm.scale) is larger than the width {hidden} (txt_in.weight), so the number of heads is {heads}"
                        ),
                    );
                    return false;
                }
            }
            true
        }
        Family::Wan => {
            let layers = p.int("num_layers").unwrap_or(0);
            let vace = p.int("vace_layers").unwrap_or(0);
            if vace > layers && vace > 0 {
                crash(
                    sink,
                    "src/wan.hpp:1881",
                    format!("{vace} VACE blocks over {layers} blocks make the step between them 0"),
                );
                return false;
            }
            if wan_config(p, version).is_none() {
                crash(
                    sink,
                    "src/wan.hpp:2198",
                    format!("{layers} blocks (`blocks.N`), where the Wan builder knows only 30 and 40"),
                );
                return false;
            }
            true
        }
        Family::Sd3 | Family::Unet | Family::QwenImage => true,
    }
}

/// The tensors the builder creates, each present with its shape.
fn builder_tensors(family: Family, p: &Params, named: &Named<'_, '_>, sink: &mut Sink<'_>, notes: &mut Vec<String>) {
    let mut unread = 0usize;
    let mut missing = 0usize;
    for &(pattern, shape, cond) in family.tensors() {
        let binds = match condition(cond, p) {
            Cond::Built(b) => b,
            Cond::NotBuilt => continue,
            Cond::Unread => {
                unread = unread.saturating_add(1);
                continue;
            }
        };
        let Some(names) = expand(pattern, &binds, p) else {
            unread = unread.saturating_add(1);
            continue;
        };
        let want: Option<Vec<i128>> = shape.iter().map(|e| Expr::eval_int(e, p)).collect();
        for name in names {
            let full = format!("{}{name}", table::DIFFUSION_PREFIX);
            let Some(t) = named.by_name.get(&full).copied() else {
                missing = missing.saturating_add(1);
                if missing <= MISSING_LISTED {
                    sink.emit(RuleId::DiffusionTensorMissing, super::KV_SECTION, || "tensors".into(), || {
                        format!("`{name}` is not in the file: stable-diffusion.cpp's {} builder creates it and refuses the file (\"tensor not in model file\")", family.name())
                    });
                }
                continue;
            };
            let Some(want) = &want else { continue };
            // stable-diffusion.cpp folds dims past the fourth into the fourth
            let mut have: Vec<i128> = t.dims().map(i128::from).collect();
            while have.len() > 4 {
                let last = have.pop().unwrap_or(1);
                if let Some(d) = have.last_mut() {
                    *d = d.saturating_mul(last);
                }
            }
            let mut want_full = want.clone();
            while have.len() < 4 {
                have.push(1);
            }
            while want_full.len() < 4 {
                want_full.push(1);
            }
            if have != want_full {
                sink.emit(RuleId::DiffusionTensorShape, t.dims_offset, || tensor_path(t, "dims"), || {
                    format!(
                        "`{name}` is {}; stable-diffusion.cpp's {} builder makes it {} and refuses the file (\"has wrong shape in model file\")",
                        dims_text(&have),
                        family.name(),
                        dims_text(&want_full)
                    )
                });
            }
        }
    }
    if missing > MISSING_LISTED {
        let more = missing.saturating_sub(MISSING_LISTED);
        sink.emit(
            RuleId::DiffusionTensorMissing,
            super::KV_SECTION,
            || "tensors".into(),
            || format!("and {more} more tensors the {} builder creates are not in the file", family.name()),
        );
    }
    if unread > 0 {
        notes.push(format!(
            "{unread} kinds of {} tensor built under conditions the table gives as prose",
            family.name()
        ));
    }
}

/// Dims of a `comfy.gguf.orig_shape.*` read (more cannot be a tensor's
/// shape: torch's limit is 64).
const MAX_SHAPE_DIMS: usize = 64;

/// Missing tensors listed one by one; the rest are counted in one finding.
const MISSING_LISTED: usize = 8;

fn dims_text(d: &[i128]) -> String {
    // trailing ones dropped, as a shape is usually written
    let mut d = d.to_vec();
    while d.len() > 1 && d.last() == Some(&1) {
        d.pop();
    }
    let parts: Vec<String> = d.iter().map(i128::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// ComfyUI-GGUF's `detect_arch` over the file's names (its prefix
/// stripped): the first architecture one of whose key sets is all there.
fn comfy_detect(file: &GgufFile<'_>) -> Option<(&'static str, bool)> {
    let names: std::collections::HashSet<&[u8]> = file
        .tensors
        .iter()
        .map(|t| t.name.bytes.strip_prefix(table::COMFY_PREFIX.as_bytes()).unwrap_or(t.name.bytes))
        .collect();
    let has = |k: &str| names.contains(k.as_bytes());
    for &(arch, sets, banned) in table::COMFY_DETECT {
        if sets.iter().any(|set| set.iter().all(|k| has(k))) {
            return Some((arch, banned.iter().any(|k| has(k))));
        }
    }
    None
}

/// ComfyUI-GGUF's loader (`gguf_sd_loader`): the architecture, the string
/// keys, `comfy.gguf.orig_shape.*`.
fn comfyui(file: &GgufFile<'_>, arch: Option<&str>, tensors: &[&TensorInfo<'_>], sink: &mut Sink<'_>) {
    for key in ["general.architecture", "general.type"] {
        if let Some(kv) = file.get(key)
            && kv.value.as_string().is_none()
        {
            sink.emit(RuleId::ComfyuiKeyType, kv.type_offset(), || kv_path(&kv), || {
                format!("`{key}` is not a string: ComfyUI-GGUF refuses the file (\"Bad type for GGUF {key} key: expected string\")")
            });
        }
    }
    let compat = match arch {
        None => true,
        Some(a) if table::COMFY_COMPAT_ARCHS.contains(&a) => true,
        Some(a) if table::COMFY_IMG_ARCHS.contains(&a) => false,
        Some(a) => {
            if let Some(kv) = file.get("general.architecture") {
                sink.emit(RuleId::ComfyuiArchitecture, kv.value_offset(), || kv_path(&kv), || {
                    format!("architecture `{a}` is not one ComfyUI-GGUF's UNet loader accepts ({}): it refuses the file (\"Unexpected architecture type in GGUF file\")", table::COMFY_IMG_ARCHS.join(", "))
                });
            }
            false
        }
    };
    if compat {
        match comfy_detect(file) {
            None => sink.emit(RuleId::ComfyuiArchitecture, super::KV_SECTION, || "tensors".into(), || {
                "no `general.architecture`, and ComfyUI-GGUF's detect_arch recognises no architecture in the tensor names: it refuses the file (\"Unknown model architecture!\")".into()
            }),
            Some((a, true)) => sink.emit(RuleId::ComfyuiArchitecture, super::KV_SECTION, || "tensors".into(), || {
                format!("the tensor names are `{a}` in the diffusers layout, which ComfyUI-GGUF's detect_arch refuses (\"Model architecture not allowed for conversion!\")")
            }),
            Some(_) => {}
        }
    }
    // the types it does not dequantize itself, once per type
    let mut slow: Vec<u32> = Vec::new();
    for t in tensors {
        let own = table::COMFY_TORCH_TYPES.iter().chain(table::COMFY_DEQUANT_TYPES).any(|(_, id)| *id == t.type_id);
        if own || slow.contains(&t.type_id) {
            continue;
        }
        slow.push(t.type_id);
        let name = crate::types::type_info(t.type_id).map_or("an unknown type", |i| i.name);
        sink.emit(RuleId::ComfyuiTensorType, t.type_offset, || tensor_path(t, "type"), || {
            format!(
                "`{}` is {name}, a type ComfyUI-GGUF does not dequantize itself: it falls back to gguf-py's NumPy dequantizer on the CPU at every use (and fails where gguf-py cannot dequantize {name})",
                t.name.display()
            )
        });
    }
    let (want_outer, want_inner) = table::COMFY_ORIG_SHAPE_TYPE;
    for kv in file.kvs.iter() {
        let Some(tensor) = kv.key.bytes.strip_prefix(table::COMFY_ORIG_SHAPE_PREFIX.as_bytes()) else { continue };
        let shape: Option<Vec<i64>> = match kv.value {
            Value::Array(a) if a.elem_type == crate::types::ValueType::I32 => a
                .iter()
                .take(MAX_SHAPE_DIMS)
                .map(|e| match e.value {
                    Value::I32(v) => Some(i64::from(v)),
                    _ => None,
                })
                .collect(),
            _ => None,
        };
        let Some(shape) = shape else {
            sink.emit(RuleId::ComfyuiOrigShape, kv.type_offset(), || kv_path(&kv), || {
                format!("`{}` is not an {want_outer} of {want_inner}: ComfyUI-GGUF refuses the file (\"Bad original shape metadata\")", kv.key.display())
            });
            continue;
        };
        let Some(t) = tensors.iter().find(|t| t.name.bytes == tensor) else { continue };
        let elements = t.dims().try_fold(1i128, |a, d| a.checked_mul(i128::from(d)));
        let wanted = shape.iter().try_fold(1i128, |a, d| a.checked_mul(i128::from(*d)));
        if elements != wanted || shape.iter().any(|d| *d < 0) {
            sink.emit(RuleId::ComfyuiOrigShape, kv.value_offset(), || kv_path(&kv), || {
                format!(
                    "`{}` gives the shape {shape:?} ({} elements) to a tensor of {} elements: ComfyUI-GGUF views the tensor as that shape and fails",
                    kv.key.display(),
                    wanted.map_or_else(|| "too many".into(), |w| w.to_string()),
                    elements.map_or_else(|| "too many".into(), |e| e.to_string())
                )
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ints(Vec<(&'static str, i128)>);

    impl Lookup for Ints {
        fn int(&self, name: &str) -> Option<i128> {
            self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
        }
        fn flag(&self, _: &str) -> Option<bool> {
            None
        }
    }

    #[test]
    fn shape_expressions_evaluate_with_precedence_and_fail_on_unknown_names() {
        let s = Ints(vec![("hidden_size", 64), ("mlp_hidden_dim", 256), ("num_heads", 4)]);
        assert_eq!(Expr::eval_int("3*hidden_size+mlp_hidden_dim", &s), Some(448));
        assert_eq!(Expr::eval_int("hidden_size/num_heads", &s), Some(16));
        assert_eq!(Expr::eval_int("hidden_size/0", &s), None);
        assert_eq!(Expr::eval_int("nope*2", &s), None);
        assert_eq!(Expr::eval_int("(as blocks.{i})", &s), None);
    }

    #[test]
    fn every_decide_condition_and_definition_parses() {
        let vars = Vars::initial();
        for (n, e) in table::DETECT_DEFS {
            assert!(Expr::eval_bool(e, &vars, &[]).is_some(), "{n}: {e}");
        }
        let defs: Vec<(&str, bool)> = table::DETECT_DEFS.iter().map(|(n, _)| (*n, false)).collect();
        for (conds, v) in table::DETECT_DECIDE {
            for c in *conds {
                assert!(Expr::eval_bool(c, &vars, &defs).is_some(), "{v}: {c}");
            }
        }
    }

    #[test]
    fn every_detection_action_is_read() {
        for (_, _, _, actions) in table::DETECT_TESTS {
            for a in *actions {
                let known = a.starts_with("return ")
                    || a.starts_with("set ")
                    || a.starts_with("store ") && (a.ends_with("this tensor") || a.contains("= ne["));
                assert!(known, "{a}");
            }
        }
    }

    #[test]
    fn families_cover_the_versions_with_builders() {
        assert_eq!(Family::of("VERSION_FLUX"), Some(Family::Flux));
        assert_eq!(Family::of("VERSION_FLUX_FILL"), Some(Family::Flux));
        assert_eq!(Family::of("VERSION_FLUX2"), None);
        assert_eq!(Family::of("VERSION_SDXL"), Some(Family::Unet));
        assert_eq!(Family::of("VERSION_WAN2_2_TI2V"), Some(Family::Wan));
        assert_eq!(Family::of("VERSION_SD3"), Some(Family::Sd3));
    }
}
