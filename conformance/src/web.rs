//! The web report: one static page (`index.html`, CSS, script and data
//! inline: no server, no CDN) built from `matrix.json`, `templates.json`
//! and `WRITERS.json`, with
//! - an overview: one row per reader (its counts per class and its loader
//!   contract) and per matrix, and the template scanners' rates;
//! - the readers matrix, the loader contract (`corpus/models/`: each file
//!   against its loader's verdict, libllama, libmtmd, LoRA or cvec) and the
//!   template scanners as grids with filters (family, verdict class,
//!   reader), each case opening a detail view: description, rules,
//!   citation, expected verdict per profile, each reader's output excerpt
//!   and a hex view of the bytes around the offset the case's finding names;
//! - the writers' and quantizers' campaign results in the same layout.
//!
//! The page reads its state from the location's fragment
//! (`#view=readers&family=models&class=crash&reader=candle&case=…`), which
//! is how the browser test drives it; it counts what it shows from the
//! data itself, so the test compares those counts with the JSON.
#![forbid(unsafe_code)]

use std::path::Path;

use serde_json::{Value, json};

use crate::matrix::{Class, Matrix};
use crate::templates::{Score, TemplateMatrix};

/// Bytes shown in a case's hex view.
pub const HEX_BYTES: u64 = 128;

/// The bytes of `path` around `offset` (16-byte aligned, `HEX_BYTES` long,
/// the offset in the third line when it is that far in): (start, hex).
pub fn hex_window(path: &Path, offset: Option<u64>) -> Option<(u64, String)> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let at = offset.unwrap_or(0).min(len);
    let start = (at.saturating_sub(32) / 16) * 16;
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = Vec::new();
    f.take(HEX_BYTES).read_to_end(&mut buf).ok()?;
    let hex: String = buf.iter().map(|b| format!("{b:02x}")).collect();
    Some((start, hex))
}

fn class_colour(c: Class) -> &'static str {
    match c {
        Class::ExpectedAccept => "#2e7d32",
        Class::ExpectedReject => "#81c784",
        Class::ImplAccept => "#1e88e5",
        Class::ImplReject => "#90caf9",
        Class::WrongAccept => "#ef6c00",
        Class::WrongReject => "#ffcc80",
        Class::Crash => "#c62828",
        Class::Timeout => "#4a148c",
    }
}

fn score_colour(s: Score) -> &'static str {
    match s {
        Score::Caught => "#2e7d32",
        Score::Clean => "#81c784",
        Score::Missed => "#ef6c00",
        Score::FalseAlarm => "#ffcc80",
        Score::Flagged => "#1e88e5",
        Score::NotFlagged => "#90caf9",
        Score::Crash => "#c62828",
        Score::Timeout => "#4a148c",
    }
}

/// The data the page renders (also what the browser test compares with).
pub fn data(root: &Path, m: &Matrix, t: Option<&TemplateMatrix>, writers: Option<&Value>) -> Value {
    let corpus = root.join("corpus");
    let readers: Vec<Value> = m
        .readers
        .iter()
        .map(|r| {
            json!({
                "name": r.config.name,
                "version": r.version_found,
                "description": r.config.description,
                "profile": r.config.profile,
                "summary": r.summary.iter().map(|(c, n)| (c.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
                "contract": m.loader_contract(&r.config.name),
            })
        })
        .collect();
    let mut rules = serde_json::Map::new();
    let rows: Vec<Value> = m
        .rows
        .iter()
        .map(|row| {
            for id in &row.file.rules {
                if let Some(rule) = gguf_validate_core::rules::RuleId::from_id(id).map(|r| r.rule()) {
                    rules
                        .entry(id.clone())
                        .or_insert_with(|| json!({"description": rule.description, "citation": rule.citation}));
                }
            }
            let hex = hex_window(&corpus.join(&row.file.file), row.file.offset);
            // one verdict per llama.cpp release (releases.json)
            let releases: serde_json::Map<String, Value> = m
                .releases
                .iter()
                .flat_map(|r| r.of(&row.file.file))
                .map(|(tag, v)| {
                    let value = json!({
                        "loader": v.loader.name(),
                        "message": v.message,
                        "valid": v.valid,
                        "rule": v.rule,
                        "agrees": v.agrees,
                        "exception": v.exception,
                        "code": v.code(),
                        "css": v.css(),
                        "title": v.title(),
                    });
                    (tag.to_string(), value)
                })
                .collect();
            json!({
                "file": row.file.file,
                "set": row.file.set,
                "group": row.file.group,
                "prefix": row.file.prefix,
                "expected": row.file.expected,
                "gguf": row.file.gguf,
                "description": row.file.description,
                "rules": row.file.rules,
                "citation": row.file.citation,
                "shards": row.file.shards,
                "reference": row.file.reference,
                "offset": row.file.offset,
                "hex": hex.map(|(start, bytes)| json!({"start": start, "bytes": bytes})),
                "releases": releases,
                "results": row.results.iter().map(|(name, c)| (name.clone(), json!({
                    "class": c.class.name(),
                    "outcome": c.outcome,
                    "detail": c.detail,
                    "excerpt": c.excerpt,
                }))).collect::<serde_json::Map<_, _>>(),
            })
        })
        .collect();
    let classes: Vec<Value> =
        Class::ALL.iter().map(|c| json!({"name": c.name(), "label": c.label(), "colour": class_colour(*c)})).collect();
    let templates = t.map(|t| {
        let scanners: Vec<Value> = t
            .scanners
            .iter()
            .map(|s| {
                let all = t.rates(&s.config.name, None);
                json!({
                    "name": s.config.name,
                    "version": s.version_found,
                    "description": s.config.description,
                    "rates": all,
                    "detection": all.detection(),
                    "false_alarm": all.false_alarm(),
                    "per_class": t.classes().iter().map(|c| {
                        let r = t.rates(&s.config.name, Some(c));
                        (c.clone(), json!({"rates": r, "detection": r.detection(), "false_alarm": r.false_alarm()}))
                    }).collect::<serde_json::Map<_, _>>(),
                })
            })
            .collect();
        let missed = t
            .scanners
            .iter()
            .find(|s| s.config.name.starts_with("gguf-validate"))
            .map(|s| t.missed_by(&s.config.name))
            .unwrap_or_default();
        json!({
            "source": t.templates_source,
            "scanners": scanners,
            "scores": Score::ALL.iter().map(|s| json!({"name": s.name(), "colour": score_colour(*s)})).collect::<Vec<_>>(),
            "rows": t.rows,
            "missed_by_ours": missed,
        })
    });
    json!({
        "timeout_secs": m.timeout_secs,
        "readers": readers,
        "classes": classes,
        "rows": rows,
        "rules": rules,
        "templates": templates,
        "writers": writers,
        "releases": m.releases.as_ref().map(|r| json!({"command": r.command, "releases": r.releases})),
    })
}

/// The page, with `data` inline.
pub fn page(data: &Value) -> String {
    // `</` cannot end the script element from inside the JSON.
    let json = serde_json::to_string(data).unwrap_or_default().replace("</", "<\\/");
    PAGE.replace("/*DATA*/", &json)
}

/// Writes `index.html` into `out`.
pub fn write_report(root: &Path, out: &Path) -> Result<String, String> {
    let conf = root.join("conformance");
    let read = |name: &str| std::fs::read_to_string(conf.join(name)).map_err(|e| format!("conformance/{name}: {e}"));
    let m = Matrix::read(&conf)?;
    let t = match read("templates.json") {
        Ok(text) => Some(TemplateMatrix::from_json(&text)?),
        Err(_) => None,
    };
    let w: Option<Value> = read("WRITERS.json").ok().and_then(|text| serde_json::from_str(&text).ok());
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let html = page(&data(root, &m, t.as_ref(), w.as_ref()));
    let path = out.join("index.html");
    std::fs::write(&path, &html).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(format!("{} ({} bytes)", path.display(), html.len()))
}

const PAGE: &str = r##"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gguf-validate conformance report</title>
<style>
body{font:13px/1.45 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#263238;color:#fff;padding:10px 18px}header h1{font-size:18px;margin:0 0 6px}
nav a{color:#cfd8dc;margin-right:14px;text-decoration:none;font-weight:600}nav a.on{color:#fff;border-bottom:2px solid #fff}
main{padding:12px 18px}table{border-collapse:collapse;background:#fff}td,th{border:1px solid #ddd;padding:2px 6px;vertical-align:top}
th{background:#eceff1;position:sticky;top:0;z-index:1}td.n{text-align:right;font-variant-numeric:tabular-nums}
td.f{font-family:monospace;white-space:nowrap;cursor:pointer;color:#1565c0}td.c{text-align:center;font-weight:600;min-width:2.6em;cursor:pointer}
.filters{margin:8px 0;display:flex;gap:12px;flex-wrap:wrap;align-items:center}.filters label{font-weight:600}
.legend span{display:inline-block;padding:1px 8px;margin:2px 4px 2px 0;border-radius:3px}
#detail{position:fixed;z-index:10;right:0;top:0;bottom:0;width:min(96vw,max(46%,780px));box-sizing:border-box;overflow:auto;background:#fff;border-left:3px solid #263238;padding:12px 16px;box-shadow:-4px 0 12px #0003}
#detail pre{white-space:pre-wrap;word-break:break-word;overflow-wrap:anywhere;background:#f5f5f5;padding:4px 6px;margin:2px 0}
#detail-results{width:100%;table-layout:fixed}#detail-results th:nth-child(1){width:18%}#detail-results th:nth-child(2){width:22%}
.codes{margin:4px 0 8px}.codes code{background:#eceff1;padding:0 4px;border-radius:3px}
pre.hex{font:12px/1.35 monospace;white-space:pre}pre.hex b{background:#ffeb3b}
.rel-agree{background:#2e7d32;color:#fff}.rel-excepted{background:#ffcc80;color:#000}.rel-unexpected{background:#c62828;color:#fff}th.rel{background:#e3f2fd}
.muted{color:#666}.bad{color:#c62828;font-weight:600}section{margin-bottom:22px}h2{font-size:16px;margin:16px 0 6px}
</style></head><body>
<header><h1>gguf-validate conformance report</h1>
<nav><a href="#view=overview" data-view="overview">Overview</a><a href="#view=readers" data-view="readers">Readers matrix</a><a href="#view=contract" data-view="contract">Loader contract</a><a href="#view=templates" data-view="templates">Template scanners</a><a href="#view=writers" data-view="writers">Writers</a></nav></header>
<main id="main"></main>
<div id="detail" hidden></div>
<pre id="errors" hidden></pre>
<script id="data" type="application/json">/*DATA*/</script>
<script>
"use strict";
const errorsEl = document.getElementById("errors");
function reportError(msg) { errorsEl.hidden = false; errorsEl.textContent += msg + "\n"; }
window.addEventListener("error", e => reportError("error: " + e.message));
const D = JSON.parse(document.getElementById("data").textContent);
const main = document.getElementById("main");
const detail = document.getElementById("detail");
const CLASS = Object.fromEntries(D.classes.map(c => [c.name, c]));
const SCORE = D.templates ? Object.fromEntries(D.templates.scores.map(s => [s.name, s])) : {};
const CODE = {accept: "A", reject: "R", crash: "CRASH", timeout: "TIME"};
const TAGS = D.releases ? D.releases.releases.map(r => r.tag) : [];
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === "style") e.style.cssText = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}
function state() { return Object.fromEntries(new URLSearchParams(location.hash.slice(1))); }
function go(patch) {
  const s = Object.assign(state(), patch);
  for (const k of Object.keys(s)) if (s[k] === "" || s[k] === null) delete s[k];
  location.hash = new URLSearchParams(s).toString();
}
function select(id, label, values, current, key) {
  const s = el("select", {id, onchange: e => go({[key]: e.target.value, case: ""})}, el("option", {value: ""}, "all"));
  for (const v of values) { const o = el("option", {value: v}, v); if (v === current) o.selected = true; s.append(o); }
  return el("span", {}, el("label", {for: id}, label + " "), s);
}
function colour(bg) { const light = ["#81c784", "#90caf9", "#ffcc80"].includes(bg); return "background:" + bg + ";color:" + (light ? "#000" : "#fff"); }
function family(r) { return r.set + ": " + r.group; }
function shownReaders(s) { return D.readers.filter(r => !s.reader || r.name === s.reader); }
function rowShown(r, s) {
  if (s.family && r.set !== s.family && family(r) !== s.family) return false;
  if (s.class) return shownReaders(s).some(x => r.results[x.name] && r.results[x.name].class === s.class);
  return true;
}
function families(rows) {
  const out = [];
  for (const r of rows) { if (!out.includes(r.set)) out.push(r.set); }
  for (const r of rows) { const f = family(r); if (f !== r.set + ": " + r.set && !out.includes(f)) out.push(f); }
  return out;
}
function legend(items) { return el("div", {class: "legend"}, ...items.map(i => el("span", {style: colour(i.colour)}, i.label || i.name))); }

function overview() {
  const counts = {};
  for (const r of D.readers) { counts[r.name] = {}; for (const c of D.classes) counts[r.name][c.name] = 0; }
  for (const row of D.rows) for (const [n, c] of Object.entries(row.results)) if (counts[n]) counts[n][c.class] += 1;
  const t = el("table", {id: "overview-readers"}, el("tr", {}, el("th", {}, "reader"), el("th", {}, "version"), ...D.classes.map(c => el("th", {style: colour(c.colour)}, c.name)), el("th", {}, "loader contract: of the files their loader (libllama, libmtmd, LoRA, cvec, imatrix, stable-diffusion.cpp) refuses / crashes on, rejected")));
  for (const r of D.readers) {
    const k = r.contract;
    t.append(el("tr", {"data-reader": r.name}, el("td", {}, r.name), el("td", {class: "muted"}, r.version),
      ...D.classes.map(c => el("td", {class: "n", "data-class": c.name}, counts[r.name][c.name])),
      el("td", {}, k.refused_rejected + " of " + k.refused + " / " + k.crash_rejected + " of " + k.crash)));
  }
  const sets = families(D.rows).filter(f => !f.includes(": "));
  const m = el("table", {id: "overview-matrices"}, el("tr", {}, el("th", {}, "matrix"), el("th", {}, "cases"), el("th", {}, "columns"), el("th", {}, "what")));
  m.append(el("tr", {}, el("td", {}, el("a", {href: "#view=readers"}, "readers")), el("td", {class: "n", id: "count-cases"}, D.rows.length), el("td", {class: "n"}, D.readers.length), el("td", {}, "every corpus case (" + sets.join(", ") + ") × readers, JSONTestSuite scoring")));
  const models = D.rows.filter(r => r.reference);
  m.append(el("tr", {}, el("td", {}, el("a", {href: "#view=contract"}, "loader contract")), el("td", {class: "n", id: "count-models"}, models.length), el("td", {class: "n"}, D.readers.length), el("td", {}, "tiny models, projectors, LoRA adapters, control vectors, importance matrices and diffusion models against their loader's verdict (libllama, libmtmd, llama_adapter_lora_init + llama_decode, common_control_vector_load, llama-quantize --imatrix, stable-diffusion.cpp)")));
  if (D.templates) m.append(el("tr", {}, el("td", {}, el("a", {href: "#view=templates"}, "template scanners")), el("td", {class: "n", id: "count-templates"}, D.templates.rows.length), el("td", {class: "n"}, D.templates.scanners.length), el("td", {}, "template cases of the corpus and llama.cpp's real templates (" + D.templates.source + ")")));
  if (D.writers) m.append(el("tr", {}, el("td", {}, el("a", {href: "#view=writers"}, "writers")), el("td", {class: "n", id: "count-writers"}, D.writers.writers.length + D.writers.quantizers.length), el("td", {class: "n"}, ""), el("td", {}, "writers' and quantizers' campaigns (fuzz-writer)")));
  const parts = [el("h2", {}, "Matrices"), m, el("h2", {}, "Readers (JSONTestSuite classes over " + D.rows.length + " cases; per-file time limit " + D.timeout_secs + " s)"), t];
  if (D.releases) parts.push(el("h2", {}, "llama.cpp releases"), ...releasesTable());
  if (D.templates) {
    const r = el("table", {id: "overview-templates"}, el("tr", {}, el("th", {}, "scanner"), el("th", {}, "version"), el("th", {}, "detection"), el("th", {}, "false alarms"), el("th", {}, "crashes, timeouts")));
    for (const s of D.templates.scanners) r.append(el("tr", {}, el("td", {}, s.name), el("td", {class: "muted"}, s.version), el("td", {}, s.detection), el("td", {}, s.false_alarm), el("td", {class: "n"}, s.rates.failures)));
    parts.push(el("h2", {}, "Template scanners"), r);
  }
  return parts;
}

function readersView(s, rows, id) {
  const shown = shownReaders(s);
  const visible = rows.filter(r => rowShown(r, s));
  const head = el("tr", {}, el("th", {}, "case"), el("th", {}, "expected"), ...shown.map(r => el("th", {}, r.name)), ...TAGS.map(t => el("th", {class: "rel"}, "llama.cpp " + t)));
  const t = el("table", {id}, head);
  let group = "";
  for (const r of rows) {
    const tr = el("tr", {"data-case": r.file}, el("td", {class: "f", title: r.description, onclick: () => go({case: r.file})}, r.file),
      el("td", {class: "muted"}, r.reference ? r.reference.by + ": " + r.reference.verdict : r.prefix + " " + ["strict", "spec", "ggml"].map(p => (r.expected[p] || "-")[0].toUpperCase()).join("")));
    for (const x of shown) {
      const c = r.results[x.name];
      tr.append(c ? el("td", {class: "c", "data-class": c.class, style: colour(CLASS[c.class].colour), title: x.name + ": " + CLASS[c.class].label + (c.detail ? " (" + c.detail + ")" : ""), onclick: () => go({case: r.file})}, CODE[c.outcome]) : el("td", {class: "c"}, "-"));
    }
    for (const tag of TAGS) tr.append(releaseCell(r, tag));
    if (!rowShown(r, s)) tr.hidden = true;
    if (family(r) !== group && rowShown(r, s)) { group = family(r); t.append(el("tr", {class: "g"}, el("td", {colspan: shown.length + TAGS.length + 2, style: "background:#37474f;color:#fff;font-weight:600"}, group))); }
    t.append(tr);
  }
  const status = el("p", {}, "showing ", el("b", {id: "shown-count"}, visible.length), " of " + rows.length + " cases, ", el("b", {id: "shown-cells"}, visible.reduce((n, r) => n + shown.filter(x => r.results[x.name] && (!s.class || r.results[x.name].class === s.class)).length, 0)), " cells" + (s.class ? " of class " + s.class : ""));
  const f = el("div", {class: "filters"}, select("f-family", "family", families(rows), s.family, "family"), select("f-class", "verdict class", D.classes.map(c => c.name), s.class, "class"), select("f-reader", "reader", D.readers.map(r => r.name), s.reader, "reader"));
  return [f, legend(D.classes), codesLegend(), ...(TAGS.length ? [releasesLegend()] : []), status, t];
}

// One llama.cpp release's cell: its loader's verdict, coloured by whether
// --llama-cpp agrees (green), disagrees as an exception (amber) or not (red).
function releaseCell(r, tag) {
  const v = r.releases && r.releases[tag];
  if (!v) return el("td", {class: "c muted"}, "-");
  return el("td", {class: "c " + v.css, "data-release": tag, title: v.title, onclick: () => go({case: r.file})}, v.code);
}
function releasesLegend() {
  return el("p", {class: "codes", id: "release-codes"}, "llama.cpp columns: that release's own loader (node-llama-cpp, prebuilt) on the model, ",
    el("code", {}, "loads"), ", ", el("code", {}, "refused"), " or ", el("code", {}, "abort"), "; ",
    el("span", {class: "rel-agree", style: "padding:0 4px"}, "--llama-cpp agrees"), " ",
    el("span", {class: "rel-excepted", style: "padding:0 4px"}, "* disagrees, a listed exception"), " ",
    el("span", {class: "rel-unexpected", style: "padding:0 4px"}, "\u2717 disagrees, not listed"), ".");
}
function releasesTable() {
  const R = D.releases;
  const t = el("table", {id: "overview-releases"}, el("tr", {}, ...["release", "node-llama-cpp", "files", "loads", "refused", "abort", "agree", "exceptions", "unexpected"].map(h => el("th", {}, h))));
  for (const r of R.releases) t.append(el("tr", {"data-release": r.tag}, el("td", {}, r.tag), el("td", {class: "muted"}, r.node_llama_cpp), ...["files", "loads", "refused", "abort", "agree", "excepted", "unexpected"].map(k => el("td", {class: "n" + (k === "unexpected" && r[k] ? " bad" : ""), "data-count": k}, r[k]))));
  return [el("p", {}, "Each llama.cpp release's own prebuilt loader (node-llama-cpp of that release, from the npm registry) on every corpus model file, against gguf-validate --llama-cpp RELEASE: they agree when the loader loads the file exactly when the report has no error. The readers matrix has one column per release: green agrees, amber (*) disagrees as a listed exception (conformance/tools/llama-releases/exceptions.json), red (✗) disagrees and is not one. Regenerate with " + R.command + "."), t];
}

// What the "expected" column's codes mean (`y AAA`, `i RAR`).
function codesLegend() {
  return el("p", {class: "codes", id: "expected-codes"},
    "expected: the case's prefix, ", el("code", {}, "y"), " a file every reader should accept, ",
    el("code", {}, "n"), " one every reader should reject, ", el("code", {}, "i"),
    " one the format leaves to the implementation; then gguf-validate's verdict under strict, spec and ggml, ",
    el("code", {}, "A"), " accept, ", el("code", {}, "R"), " reject (", el("code", {}, "i RAR"),
    ": rejected by strict and ggml, accepted by spec). Cells: ", el("code", {}, "A"), " accepted, ",
    el("code", {}, "R"), " rejected, ", el("code", {}, "CRASH"), ", ", el("code", {}, "TIME"), " timed out.");
}

function contractView(s) {
  const rows = D.rows.filter(r => r.reference);
  const t = el("table", {id: "contract-summary"}, el("tr", {}, el("th", {}, "reader"), el("th", {}, "refused by the loader: rejected"), el("th", {}, "crash in the loader: rejected"), el("th", {}, "loaded by the loader: rejected")));
  for (const r of D.readers) { const k = r.contract; t.append(el("tr", {}, el("td", {}, r.name), el("td", {class: "n"}, k.refused_rejected + " of " + k.refused), el("td", {class: "n"}, k.crash_rejected + " of " + k.crash), el("td", {class: "n"}, k.loads_rejected + " of " + k.loads))); }
  return [el("p", {}, "The files of corpus/models/ against their loader's verdict (their manifests): libllama for models, text models and bases, libmtmd for projectors (models/mmproj/), llama_adapter_lora_init + llama_decode for LoRA adapters (models/lora/: loaded against their base, set on a context and applied in one decode), common_control_vector_load for control vectors (models/cvec/), llama-quantize --imatrix for importance matrices (models/imatrix/). A file its loader loads is y_, one it refuses or crashes on is i_ (a container reader may accept it)."), t, el("h2", {}, "Every model"), ...readersView(s, rows, "contract")];
}

function templatesView(s) {
  const T = D.templates;
  if (!T) return [el("p", {}, "No templates.json.")];
  const shown = T.scanners.filter(x => !s.reader || x.name === s.reader);
  const classes = []; for (const r of T.rows) if (!classes.includes(r.class)) classes.push(r.class);
  const show = r => (!s.family || r.class === s.family) && (!s.class || shown.some(x => r.results[x.name] && r.results[x.name].score === s.class));
  const rates = el("table", {id: "template-rates"}, el("tr", {}, el("th", {}, "class"), el("th", {}, "cases"), ...T.scanners.map(x => el("th", {}, x.name))));
  for (const c of classes) {
    const rows = T.rows.filter(r => r.class === c);
    const flags = x => rows.filter(r => r.results[x.name] && r.results[x.name].score === "flagged").length + "/" + rows.length;
    rates.append(el("tr", {}, el("td", {}, c), el("td", {class: "n"}, rows.length), ...T.scanners.map(x => { const p = x.per_class[c]; return el("td", {}, p.rates.attacks ? "detects " + p.detection : p.rates.benign ? "false alarms " + p.false_alarm : "flags " + flags(x)); })));
  }
  const t = el("table", {id: "templates"}, el("tr", {}, el("th", {}, "case"), el("th", {}, "class"), el("th", {}, "want"), ...shown.map(x => el("th", {}, x.name))));
  const visible = T.rows.filter(show);
  for (const r of T.rows) {
    const tr = el("tr", {"data-case": r.id}, el("td", {class: "f", title: r.description, onclick: () => go({case: r.id})}, r.id), el("td", {}, r.class), el("td", {}, r.want));
    for (const x of shown) { const c = r.results[x.name]; tr.append(c ? el("td", {class: "c", style: colour(SCORE[c.score].colour), title: x.name + ": " + c.score, onclick: () => go({case: r.id})}, c.score) : el("td", {}, "-")); }
    if (!show(r)) tr.hidden = true;
    t.append(tr);
  }
  const missed = el("ul", {id: "missed-by-ours"}, ...T.missed_by_ours.map(([c, by]) => el("li", {}, c + ": caught by " + by.join(", "))));
  const f = el("div", {class: "filters"}, select("f-family", "class", classes, s.family, "family"), select("f-class", "score", T.scores.map(x => x.name), s.class, "class"), select("f-reader", "scanner", T.scanners.map(x => x.name), s.reader, "reader"));
  return [el("p", {}, "Attack cases expect an alarm, benign look-alikes and llama.cpp's real templates none; defects are flagged or not (not scored). Real templates from " + T.source + "."), rates,
    el("h2", {}, "Attacks another scanner caught and gguf-validate missed"), T.missed_by_ours.length ? missed : el("p", {id: "missed-by-ours"}, "None."),
    el("h2", {}, "Every case"), f, legend(T.scores), el("p", {}, "showing ", el("b", {id: "shown-count"}, visible.length), " of " + T.rows.length + " cases"), t];
}

function writersView(s) {
  const W = D.writers;
  if (!W) return [el("p", {}, "No WRITERS.json.")];
  const v = el("table", {}, el("tr", {}, el("th", {}, "program"), el("th", {}, "version")), ...Object.entries(W.versions).map(([k, x]) => el("tr", {}, el("td", {}, k), el("td", {}, x))));
  const sum = el("table", {id: "writers-summary"}, el("tr", {}, el("th", {}, "writer"), el("th", {}, "what"), el("th", {}, "cases"), el("th", {}, "with findings"), el("th", {}, "finding kinds"), el("th", {}, "time"), el("th", {}, "claims")));
  for (const w of W.writers) sum.append(el("tr", {}, el("td", {}, w.name), el("td", {}, w.writer), el("td", {class: "n"}, w.cases), el("td", {class: "n"}, w.cases_with_findings), el("td", {class: "n"}, w.findings.length), el("td", {class: "n"}, w.seconds.toFixed(1) + " s"), el("td", {class: "muted"}, w.claims)));
  const findings = [];
  W.writers.forEach(w => w.findings.forEach((f, i) => findings.push({id: w.name + "#" + (i + 1), writer: w.name, f})));
  const kinds = []; for (const x of findings) if (!kinds.includes(x.f.kind.class)) kinds.push(x.f.kind.class);
  const show = x => (!s.reader || x.writer === s.reader) && (!s.class || x.f.kind.class === s.class);
  const t = el("table", {id: "writers"}, el("tr", {}, el("th", {}, "finding"), el("th", {}, "class"), el("th", {}, "kind"), el("th", {}, "what"), el("th", {}, "cases")));
  for (const x of findings) {
    const tr = el("tr", {"data-case": x.id}, el("td", {class: "f", onclick: () => go({case: x.id})}, x.id), el("td", {}, x.f.kind.class), el("td", {}, x.f.kind.ty), el("td", {}, x.f.kind.what), el("td", {class: "n"}, x.f.cases));
    if (!show(x)) tr.hidden = true;
    t.append(tr);
  }
  const q = el("table", {id: "quantizers"}, el("tr", {}, el("th", {}, "quantizer"), el("th", {}, "type"), el("th", {}, "rows"), el("th", {}, "identical"), el("th", {}, "same values"), el("th", {}, "within bound"), el("th", {}, "unbounded"), el("th", {}, "wrong"), el("th", {}, "failed")));
  for (const qz of W.quantizers) for (const ty of qz.types) q.append(el("tr", {}, el("td", {}, qz.name), el("td", {}, ty.ty), ...["rows", "identical", "same_values", "within_bound", "unbounded", "wrong", "failed"].map(k => el("td", {class: "n" + ((k === "wrong" || k === "failed") && ty[k] ? " bad" : "")}, ty[k]))));
  const f = el("div", {class: "filters"}, select("f-reader", "writer", W.writers.map(w => w.name), s.reader, "reader"), select("f-class", "finding class", kinds, s.class, "class"));
  return [v, el("h2", {}, "Writers"), sum, el("h2", {}, "Findings"), f, el("p", {}, "showing ", el("b", {id: "shown-count"}, findings.filter(show).length), " of " + findings.length + " findings"), t, el("h2", {}, "Quantizers"), q];
}

function hexView(h, offset) {
  if (!h) return el("p", {class: "muted"}, "no bytes");
  const pre = el("pre", {class: "hex", id: "hex"});
  const n = h.bytes.length / 2;
  for (let i = 0; i < n; i += 16) {
    const addr = (h.start + i).toString(16).padStart(8, "0");
    pre.append(addr + "  ");
    let ascii = "";
    for (let j = i; j < Math.min(i + 16, n); j++) {
      const b = h.bytes.substr(2 * j, 2);
      const at = offset !== null && offset !== undefined && h.start + j === offset;
      if (at) pre.append(el("b", {}, b)); else pre.append(b);
      pre.append(j % 16 === 7 ? "  " : " ");
      const v = parseInt(b, 16);
      ascii += v >= 32 && v < 127 ? String.fromCharCode(v) : ".";
    }
    pre.append(" |" + ascii + "|\n");
  }
  return pre;
}

function caseDetail(id, view) {
  const t = D.templates && view === "templates" ? D.templates.rows.find(x => x.id === id) : null;
  const r = t ? null : D.rows.find(x => x.file === id);
  const kids = [el("button", {onclick: () => go({case: ""})}, "close")];
  if (r) {
    kids.push(el("h2", {id: "detail-title"}, r.file), el("p", {}, r.description || el("span", {class: "muted"}, "no description")));
    if (r.citation) kids.push(el("p", {class: "muted"}, "source: " + r.citation));
    if (r.shards.length) kids.push(el("p", {}, "split set; other shards: " + r.shards.join(", ")));
    const exp = el("table", {}, el("tr", {}, el("th", {}, "prefix"), ...["strict", "spec", "ggml"].map(p => el("th", {}, p))), el("tr", {}, el("td", {}, r.prefix), ...["strict", "spec", "ggml"].map(p => el("td", {}, r.expected[p] || "-"))));
    kids.push(el("h3", {}, "Expected verdict"), exp);
    if (r.reference) kids.push(el("p", {}, r.reference.by + " (manifest): " + r.reference.verdict + (r.reference.vocab_only ? " (vocab_only)" : "") + (r.reference.detail ? ": " + r.reference.detail : "")));
    if (r.rules.length) kids.push(el("h3", {}, "Rules"), el("ul", {}, ...r.rules.map(id => { const x = D.rules[id]; return el("li", {}, el("code", {}, id), x ? ": " + x.description + " (" + x.citation + ")" : ""); })));
    const res = el("table", {id: "detail-results"}, el("tr", {}, el("th", {}, "reader"), el("th", {}, "result"), el("th", {}, "output excerpt")));
    for (const x of D.readers) { const c = r.results[x.name]; if (c) res.append(el("tr", {}, el("td", {}, x.name), el("td", {style: colour(CLASS[c.class].colour)}, c.class + (c.detail ? " (" + c.detail + ")" : "")), el("td", {}, c.excerpt ? el("pre", {}, c.excerpt) : el("span", {class: "muted"}, "(nothing printed)")))); }
    if (r.releases && Object.keys(r.releases).length) {
      const rel = el("table", {id: "detail-releases"}, el("tr", {}, el("th", {}, "llama.cpp"), el("th", {}, "loader"), el("th", {}, "--llama-cpp")));
      for (const tag of TAGS) { const v = r.releases[tag]; if (v) rel.append(el("tr", {}, el("td", {}, tag), el("td", {class: v.css}, v.loader + (v.message ? ": " + v.message : "")), el("td", {}, (v.valid ? "valid" : v.rule || "invalid") + (v.agrees ? "" : v.exception ? " (exception: " + v.exception + ")" : " (disagrees)")))); }
      kids.push(el("h3", {}, "llama.cpp releases"), rel);
    }
    kids.push(el("h3", {}, "Readers"), res, el("h3", {}, "Bytes" + (r.offset !== null && r.offset !== undefined ? " around offset " + r.offset + " (0x" + r.offset.toString(16) + ")" : " (start of file)")), hexView(r.hex, r.offset));
    return kids;
  }
  if (t) {
    kids.push(el("h2", {id: "detail-title"}, t.id), el("p", {}, t.description), el("p", {}, "class: " + t.class + "; want: " + t.want + ((t.rules || []).length ? "; strict rules: " + t.rules.join(", ") : "")));
    const res = el("table", {id: "detail-results"}, el("tr", {}, el("th", {}, "scanner"), el("th", {}, "score"), el("th", {}, "output excerpt")));
    for (const x of D.templates.scanners) { const c = t.results[x.name]; if (c) res.append(el("tr", {}, el("td", {}, x.name), el("td", {style: colour(SCORE[c.score].colour)}, c.score + (c.detail ? " (" + c.detail + ")" : "")), el("td", {}, c.excerpt ? el("pre", {}, c.excerpt) : ""))); }
    kids.push(res);
    return kids;
  }
  const [w, n] = id.split("#");
  const wr = D.writers && D.writers.writers.find(x => x.name === w);
  const f = wr && wr.findings[Number(n) - 1];
  if (f) {
    kids.push(el("h2", {id: "detail-title"}, id + ": " + f.kind.what), el("p", {}, "writer: " + wr.writer + "; " + f.cases + " cases; first after " + (f.first_after_secs || 0).toFixed(2) + " s"));
    if (f.mismatch) kids.push(el("table", {}, ...["path", "expected", "got", "offset"].map(k => el("tr", {}, el("th", {}, k), el("td", {}, el("pre", {}, String(f.mismatch[k])))))));
    if (f.reproducer) kids.push(el("p", {}, "reproducer: conformance/" + f.reproducer));
    if (f.shrink) kids.push(el("p", {class: "muted"}, "shrunk from " + JSON.stringify(f.shrink.before) + " to " + JSON.stringify(f.shrink.after)));
    return kids;
  }
  kids.push(el("p", {}, "unknown case " + id));
  return kids;
}

function render() {
  const s = state();
  const view = s.view || "overview";
  for (const a of document.querySelectorAll("nav a")) a.className = a.dataset.view === view ? "on" : "";
  main.replaceChildren(...({overview, readers: x => readersView(x, D.rows, "readers"), contract: contractView, templates: templatesView, writers: writersView}[view] || overview)(s));
  if (s.case) { detail.replaceChildren(...caseDetail(s.case, view)); detail.hidden = false; } else { detail.hidden = true; }
  document.body.dataset.ready = view;
}
window.addEventListener("hashchange", render);
try { render(); } catch (e) { reportError("render: " + e.message); }
</script>
</body></html>
"##;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hex_window_holds_the_offset() {
        let dir = crate::workspace_root().join("corpus/gguf");
        let (start, hex) = hex_window(&dir.join("y_base.gguf"), Some(100)).expect("file");
        assert_eq!(start, 64);
        assert_eq!(hex.len() as u64, 2 * 96); // 160-byte file
        let (start, hex) = hex_window(&dir.join("y_base.gguf"), None).expect("file");
        assert_eq!((start, &hex[..8]), (0, "47475546"));
    }

    #[test]
    fn the_data_cannot_close_the_script_element() {
        let html = page(&json!({"rows": ["</script><script>alert(1)</script>"]}));
        assert_eq!(html.matches("</script>").count(), 2, "only the page's own two script elements end");
    }
}
