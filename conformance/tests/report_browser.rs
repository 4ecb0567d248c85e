//! The web report in a real browser: `gguf-conformance report` is written
//! from the committed JSON and opened in headless Chromium (Debian's
//! `chromium`; `$GGUF_CHROMIUM` names another binary). The page must log no
//! console error and raise no script error, the counts it shows must equal
//! the JSON's, filtering (family, verdict class, reader) must show exactly
//! the rows the JSON says, a case's detail view must show its readers and
//! its bytes, and a screenshot is kept as an artefact
//! (`target/conformance-report/report.png`).
//!
//! Without Chromium the test is skipped with a note, unless `CI` is set:
//! then a missing browser fails it (`.ci/run` installs the package).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gguf_conformance::matrix::Matrix;
use gguf_conformance::releases::Releases;
use gguf_conformance::templates::TemplateMatrix;

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("GGUF_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

fn out_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| gguf_conformance::workspace_root().join("target"));
    target.join("conformance-report")
}

/// Runs Chromium headless on the page with `fragment`, at most 90 s.
fn browse(chrome: &Path, page: &Path, fragment: &str, extra: &[String]) -> (String, String) {
    let url = format!("file://{}#{fragment}", page.display());
    let dir = out_dir().join("chromium-profile");
    let mut cmd = Command::new(chrome);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=10000",
    ])
    .arg(format!("--user-data-dir={}", dir.display()))
    .args(extra)
    .arg(&url)
    .stdin(Stdio::null());
    let stdout = out_dir().join("dom.html");
    let stderr = out_dir().join("chromium.log");
    cmd.stdout(std::fs::File::create(&stdout).expect("dom file"));
    cmd.stderr(std::fs::File::create(&stderr).expect("log file"));
    let mut child = cmd.spawn().expect("start chromium");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 90 s on {url}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (std::fs::read_to_string(&stdout).unwrap_or_default(), std::fs::read_to_string(&stderr).unwrap_or_default())
}

/// Console errors in Chromium's log: an uncaught exception, or a console
/// message at error level.
fn console_errors(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("CONSOLE") && (l.contains("Uncaught") || l.contains("Error") || l.contains(":ERROR:")))
        .collect()
}

/// The number after `marker` in `dom` (`id="shown-count">12<`).
fn number_after(dom: &str, marker: &str) -> Option<usize> {
    let at = dom.find(marker)? + marker.len();
    dom[at..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()
}

/// Rows of table `id` that are shown (`<tr data-case=…>` without `hidden`).
fn shown_rows(dom: &str, table: &str) -> usize {
    let Some(start) = dom.find(&format!("<table id=\"{table}\"")) else { return 0 };
    let end = dom[start..].find("</table>").map_or(dom.len(), |e| start + e);
    dom[start..end]
        .split("<tr ")
        .skip(1)
        .filter(|tr| tr.starts_with("data-case=") && !tr.split('>').next().unwrap_or("").contains(" hidden=\"\""))
        .count()
}

fn check_page(dom: &str, log: &str, what: &str) {
    assert!(!dom.is_empty(), "{what}: empty DOM");
    assert!(dom.contains("<pre id=\"errors\" hidden=\"\"></pre>"), "{what}: the page reported script errors");
    let errors = console_errors(log);
    assert!(errors.is_empty(), "{what}: console errors: {errors:?}");
}

#[test]
fn the_web_report_in_headless_chromium() {
    let Some(chrome) = chromium() else {
        assert!(std::env::var_os("CI").is_none(), "CI: chromium is not installed (apt-get install chromium)");
        #[allow(clippy::disallowed_macros)] // the one note a skipped test gives
        {
            eprintln!("report_browser: skipped, no chromium (set GGUF_CHROMIUM or install Debian's chromium)");
        }
        return;
    };
    let root = gguf_conformance::workspace_root();
    let out = out_dir();
    gguf_conformance::web::write_report(&root, &out).expect("report");
    let page = out.join("index.html").canonicalize().expect("page");
    let m = Matrix::from_json(&std::fs::read_to_string(root.join("conformance/matrix.json")).expect("matrix.json"))
        .expect("matrix");

    // Overview: every reader's count per class, and the number of cases.
    let (dom, log) = browse(&chrome, &page, "view=overview", &["--dump-dom".into()]);
    check_page(&dom, &log, "overview");
    assert_eq!(number_after(&dom, "id=\"count-cases\">"), Some(m.rows.len()), "cases shown");
    for r in &m.readers {
        let at = dom
            .find(&format!("<tr data-reader=\"{}\">", r.config.name))
            .unwrap_or_else(|| panic!("no row for {}", r.config.name));
        let row = &dom[at..at + dom[at..].find("</tr>").unwrap_or(0)];
        for (class, n) in &r.summary {
            assert_eq!(
                number_after(row, &format!("data-class=\"{}\">", class.name())),
                Some(*n),
                "{}: {} shown vs matrix.json",
                r.config.name,
                class.name()
            );
        }
    }

    // The llama.cpp releases (releases.json): each release's counts in the
    // overview, and one column per release in the grid with a cell for
    // every verdict.
    let releases = Releases::read(&root.join("conformance")).expect("releases.json");
    if let Some(rel) = &releases {
        for r in &rel.releases {
            let at = dom
                .find(&format!("<tr data-release=\"{}\">", r.tag))
                .unwrap_or_else(|| panic!("overview: no row for release {}", r.tag));
            let row = &dom[at..at + dom[at..].find("</tr>").unwrap_or(0)];
            for (count, n) in [("files", r.files), ("loads", r.loads), ("agree", r.agree), ("unexpected", r.unexpected)]
            {
                assert_eq!(
                    number_after(row, &format!("data-count=\"{count}\">")),
                    Some(n),
                    "{}: {count} shown vs releases.json",
                    r.tag
                );
            }
        }
        let (dom, log) = browse(&chrome, &page, "view=readers", &["--dump-dom".into()]);
        check_page(&dom, &log, "readers with releases");
        // The older releases' converter output is proven (RELEASES.md), not a row of the matrix.
        let rows: std::collections::BTreeSet<&str> = m.rows.iter().map(|row| row.file.file.as_str()).collect();
        let grid = &dom[dom.find("<table id=\"readers\"").expect("grid")..];
        let grid = &grid[..grid.find("</table>").unwrap_or(grid.len())];
        for r in &rel.releases {
            assert!(grid.contains(&format!("<th class=\"rel\">llama.cpp {}</th>", r.tag)), "no column for {}", r.tag);
            assert_eq!(
                grid.matches(&format!("data-release=\"{}\"", r.tag)).count(),
                rel.files
                    .iter()
                    .filter(|v| v.release == r.tag && rows.contains(v.file.strip_prefix("corpus/").unwrap_or(&v.file)))
                    .count(),
                "{}: cells shown vs releases.json (its files in the matrix)",
                r.tag
            );
        }
        // a model's detail lists every release's verdict
        if let Some(v) = rel.files.iter().find(|v| rows.contains(v.file.strip_prefix("corpus/").unwrap_or(&v.file))) {
            let file = v.file.strip_prefix("corpus/").unwrap_or(&v.file);
            let frag = format!("view=readers&case={}", file.replace('/', "%2F"));
            let (dom, log) = browse(&chrome, &page, &frag, &["--dump-dom".into()]);
            check_page(&dom, &log, &frag);
            let t = &dom[dom.find("<table id=\"detail-releases\"").expect("release verdicts in the detail")..];
            let t = &t[..t.find("</table>").unwrap_or(0)];
            assert_eq!(t.matches("<tr>").count(), 1 + rel.releases.len(), "{frag}: one line per release");
        }
    }

    // Filters: the rows shown are exactly those the JSON selects.
    let expected = |family: Option<&str>, class: Option<&str>, reader: Option<&str>| {
        m.rows
            .iter()
            .filter(|row| {
                family.is_none_or(|f| row.file.set == f || format!("{}: {}", row.file.set, row.file.group) == f)
            })
            .filter(|row| {
                class.is_none_or(|c| {
                    m.readers
                        .iter()
                        .filter(|r| reader.is_none_or(|x| r.config.name == x))
                        .any(|r| row.results.get(&r.config.name).is_some_and(|cell| cell.class.name() == c))
                })
            })
            .count()
    };
    let first = m.readers.first().map(|r| r.config.name.clone()).expect("a reader");
    let last = m.readers.last().map(|r| r.config.name.clone()).expect("a reader");
    let combos: Vec<(Option<&str>, Option<&str>, Option<&str>)> = vec![
        (None, None, None),
        (Some("models"), None, None),
        (Some("gguf: template"), None, None),
        (None, Some("wrong-accept"), None),
        (None, Some("crash"), None),
        (Some("gguf"), Some("expected-reject"), Some(first.as_str())),
        (None, Some("wrong-reject"), Some(last.as_str())),
    ];
    let mut narrowed = false;
    for (family, class, reader) in combos {
        let mut frag = String::from("view=readers");
        for (k, v) in [("family", family), ("class", class), ("reader", reader)] {
            if let Some(v) = v {
                frag.push_str(&format!("&{k}={}", v.replace(' ', "%20").replace(':', "%3A")));
            }
        }
        let (dom, log) = browse(&chrome, &page, &frag, &["--dump-dom".into()]);
        check_page(&dom, &log, &frag);
        let want = expected(family, class, reader);
        narrowed |= want > 0 && want < m.rows.len();
        assert_eq!(number_after(&dom, "id=\"shown-count\">"), Some(want), "{frag}: count shown");
        assert_eq!(shown_rows(&dom, "readers"), want, "{frag}: rows shown");
        if let Some(r) = reader {
            let header = &dom[dom.find("<table id=\"readers\"").unwrap_or(0)..];
            let header = &header[..header.find("</tr>").unwrap_or(0)];
            assert_eq!(header.matches("<th>").count(), 3, "{frag}: one reader column: {header}");
            assert!(header.contains(&format!("<th>{r}</th>")), "{frag}");
        }
    }
    assert!(narrowed, "no filter narrowed the grid");

    // A case's detail: its readers, its rule, and its bytes with the offset marked.
    let case = m.rows.iter().find(|r| r.file.file == "gguf/n_key_empty.gguf").expect("case");
    let (dom, log) = browse(&chrome, &page, "view=readers&case=gguf%2Fn_key_empty.gguf", &["--dump-dom".into()]);
    check_page(&dom, &log, "detail");
    assert!(dom.contains("id=\"detail-title\">gguf/n_key_empty.gguf<"), "detail title");
    assert!(dom.contains("<p class=\"codes\" id=\"expected-codes\">"), "the expected column's codes are explained");
    assert!(!dom.contains("-dirty"), "reader versions read without git's -dirty");
    let results = &dom[dom.find("<table id=\"detail-results\"").expect("results")..];
    let results = &results[..results.find("</table>").unwrap_or(0)];
    assert_eq!(results.matches("<tr>").count(), 1 + case.results.len(), "one line per reader");
    assert!(dom.contains("<pre class=\"hex\" id=\"hex\">"), "hex view");
    let offset = case.file.offset.expect("offset");
    let line = format!("{:08x}", offset / 16 * 16);
    assert!(dom.contains(&line), "hex line {line} of offset {offset}");
    assert!(dom[dom.find("id=\"hex\"").unwrap_or(0)..].contains("<b>"), "the byte at the offset is marked");
    for id in &case.file.rules {
        assert!(dom.contains(&format!("<code>{id}</code>")), "rule {id}");
    }

    // One case of every corpus directory opens without an error (a model
    // with libllama's reference, a split set with its shards, legacy
    // files, a case without an offset).
    let mut sets: Vec<&str> = m.rows.iter().map(|r| r.file.set.as_str()).collect();
    sets.dedup();
    for set in sets {
        let row = m.rows.iter().find(|r| r.file.set == set).expect("a row");
        let frag = format!("view=readers&family={set}&case={}", row.file.file.replace('/', "%2F"));
        let (dom, log) = browse(&chrome, &page, &frag, &["--dump-dom".into()]);
        check_page(&dom, &log, &frag);
        assert!(dom.contains(&format!("id=\"detail-title\">{}<", row.file.file)), "{frag}: detail");
        assert!(dom.contains("id=\"hex\""), "{frag}: hex view");
    }

    // The template scanners and the writers, when their JSON is there.
    if let Ok(text) = std::fs::read_to_string(root.join("conformance/templates.json")) {
        let t = TemplateMatrix::from_json(&text).expect("templates");
        let (dom, log) = browse(&chrome, &page, "view=templates", &["--dump-dom".into()]);
        check_page(&dom, &log, "templates");
        assert_eq!(number_after(&dom, "id=\"shown-count\">"), Some(t.rows.len()));
        let class = "code execution";
        let (dom, log) = browse(&chrome, &page, "view=templates&family=code%20execution", &["--dump-dom".into()]);
        check_page(&dom, &log, "templates filtered");
        let want = t.rows.iter().filter(|r| r.case.class == class).count();
        assert_eq!(shown_rows(&dom, "templates"), want, "template rows of {class}");
        // a corpus case (with its rules), a probe and a real template (without)
        let picks = [
            t.rows.iter().find(|r| r.case.class == class),
            t.rows.iter().find(|r| r.case.id.starts_with("probe/")),
            t.rows.iter().find(|r| r.case.id.starts_with("llama.cpp/")),
        ];
        for row in picks.into_iter().flatten() {
            let frag = format!("view=templates&case={}", row.case.id.replace('/', "%2F"));
            let (dom, log) = browse(&chrome, &page, &frag, &["--dump-dom".into()]);
            check_page(&dom, &log, &frag);
            assert!(dom.contains(&format!("id=\"detail-title\">{}<", row.case.id)), "{frag}: detail");
            let results = &dom[dom.find("<table id=\"detail-results\"").expect("scanner results")..];
            let results = &results[..results.find("</table>").unwrap_or(0)];
            assert_eq!(results.matches("<tr>").count(), 1 + row.results.len(), "{frag}: one line per scanner");
        }
    }
    if let Ok(text) = std::fs::read_to_string(root.join("conformance/WRITERS.json")) {
        let w: serde_json::Value = serde_json::from_str(&text).expect("WRITERS.json");
        let findings: BTreeMap<String, usize> = w["writers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|x| (x["name"].as_str().unwrap_or("").to_string(), x["findings"].as_array().map_or(0, Vec::len)))
            .collect();
        let (dom, log) = browse(&chrome, &page, "view=writers", &["--dump-dom".into()]);
        check_page(&dom, &log, "writers");
        assert_eq!(number_after(&dom, "id=\"shown-count\">"), Some(findings.values().sum()));
        if let Some((name, n)) = findings.iter().find(|(_, n)| **n > 0) {
            let (dom, log) = browse(&chrome, &page, &format!("view=writers&reader={name}"), &["--dump-dom".into()]);
            check_page(&dom, &log, "writers filtered");
            assert_eq!(shown_rows(&dom, "writers"), *n, "findings of {name}");
            let (dom, log) = browse(&chrome, &page, &format!("view=writers&case={name}%231"), &["--dump-dom".into()]);
            check_page(&dom, &log, "writers detail");
            assert!(dom.contains(&format!("id=\"detail-title\">{name}#1: ")), "finding detail");
        }
    }

    // The artefact: a screenshot of the grid.
    let shot = out.join("report.png");
    let _ = std::fs::remove_file(&shot);
    let (_, log) = browse(
        &chrome,
        &page,
        "view=readers&family=gguf%3A%20header",
        &[format!("--screenshot={}", shot.display()), "--window-size=1600,1000".into()],
    );
    assert!(console_errors(&log).is_empty(), "{log}");
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "a real screenshot ({} bytes)", png.len());
}
