"""The scan's report page (`gguf_validate.scan.report`): on a synthetic scan
folder of hostile rows, its figures equal what the Parquet rows say, and in
headless Chromium the page renders its charts, runs nothing from the data,
and every number in its tables equals the rows' (read back from the DOM
Chromium dumps)."""

from __future__ import annotations

import base64
import html.parser
import os
import random
import shutil
import subprocess
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import ROOT

from gguf_validate import _native
from gguf_validate.scan.report import FILE_TYPE_NAMES, MAX_GROUPS, MAX_RULES, MAX_TEMPLATES, main, write_report
from gguf_validate.scan.schema import PROFILES, SCHEMA, TRANSIENT_CLASSES

#: Strings that would become elements or run script if a page used them
#: unescaped (and a byte-order mark, control characters, a `$` for
#: mathtext in chart labels).
HOSTILE = [
    '<script>document.body.setAttribute("data-pwned", "1")</script>',
    '"><img id="injected-img" src="x" onerror="document.title=\'pwned\'">',
    "'><b id=\"injected-b\">bold</b>",
    "</td></tr></table><h1 id=\"injected-h1\">x</h1>",
    "$\\frac{1}{0}$ \x00\x07\r\n\ufeff\u202e rtl",
    "</style><style>body{display:none}</style>",
    "<!-- --><iframe id=\"injected-iframe\" src=\"javascript:parent.document.body.setAttribute('data-pwned', '2')\"></iframe>",
]
ARCHITECTURES = ["llama", "qwen2", "gemma3", "phi3", HOSTILE[0], HOSTILE[3], None]
FILE_TYPES = [1, 2, 7, 15, 18, 32, 999, None]
RULES = ["tensor-offset-overlap", "kv-duplicate-key", "template-injected-instruction", HOSTILE[1], HOSTILE[4]]
TEMPLATE_RULES = ["template-injected-instruction", "template-sandbox-escape", HOSTILE[2], None]
ERROR_CLASSES = ["not_found", "http_status", "timeout", HOSTILE[5], None]
#: `loads_from` values: releases of the table, a name of another version's
#: table, a hostile string, and None (no release, or not judged).
LOADS_FROM = ["b3889", "b3889", "b4980", "b5590", "v0.4.0", "b99999", HOSTILE[1], None, None]


def synthetic_rows(seed: int = 26, n: int = 400) -> list[dict[str, Any]]:
    """Rows of SCHEMA: every status, nulls in every nullable column,
    duplicates, reruns of a URL, and hostile strings."""
    rng = random.Random(seed)
    releases_rng = random.Random(seed + 1)
    templates = [f"{i:064x}" for i in range(1, 9)] + [HOSTILE[6]]
    rows: list[dict[str, Any]] = []
    read: list[dict[str, Any]] = []
    for i in range(n):
        status = rng.choice(["valid"] * 5 + ["invalid"] * 3 + ["unreadable"] * 2)
        url = f"https://hub.example/org{i % 37}/repo{i}/resolve/main/model-{i}.gguf"
        if i % 50 == 7:
            url += rng.choice(HOSTILE)
        row: dict[str, Any] = {name: None for name in SCHEMA.names}
        row.update(url=url, status=status, scanned_at=f"2026-11-26T10:{i // 60:02d}:{i % 60:02d}Z")
        row["tool_version"] = rng.choice(["0.9.0", HOSTILE[2], None])
        if status == "unreadable":
            row.update(
                error_class=rng.choice(ERROR_CLASSES),
                error=rng.choice([f"HTTP 404 for {url}", *HOSTILE, None]),
                requests=rng.choice([1, 2, None]),
                bytes=rng.choice([0, None]),
                seconds=rng.choice([0.1, None]),
            )
            rows.append(row)
            continue
        valid = status == "valid"
        rules: list[str | None] | None = [] if valid else rng.sample(RULES, rng.randint(1, 3))
        if rng.random() < 0.05:
            rules = None
        elif rules and rng.random() < 0.1:
            rules = [*rules, None]
        hashes: list[str | None] = list(rng.sample(templates, rng.choice([0, 1, 1, 1, 2])))
        row.update(
            repo=rng.choice([f"org{i % 37}/repo{i}", None]),
            revision=rng.choice([f"{i:040x}", None]),
            sha256=rng.choice([f"{i:064x}", None]),
            size=rng.choice([rng.randint(10**6, 10**11), None]),
            valid_strict=rng.choice([valid, valid, None]),
            valid_spec=rng.choice([valid, True, None]),
            valid_ggml=rng.choice([True, True, False, None]),
            errors=rng.choice([0 if valid else len(rules or []), None]),
            warnings=rng.choice([0, 2, None]),
            rules=rules,
            findings=rng.choice(['[{"rule": "x", "message": "' + HOSTILE[0].replace('"', "'") + '"}]', None]),
            format=rng.choice(["gguf", None]),
            architecture=rng.choice(ARCHITECTURES),
            parameters=rng.choice([270_000_000, None]),
            file_type=rng.choice(FILE_TYPES),
            tensor_count=rng.choice([236, None]),
            template_hashes=rng.choice([hashes, None]) if i % 9 else [*hashes, None],
            template_rules=rng.choice([[], rng.sample(TEMPLATE_RULES, 2), None]),
            bytes=rng.choice([rng.randint(300_000, 9_000_000), rng.randint(10_000, 300_000), None]),
            requests=rng.choice([rng.randint(2, 6), None]),
            seconds=rng.choice([rng.uniform(0.1, 4.0), None]),
        )
        # Which releases load it (a draw of its own, so the other columns
        # keep theirs).
        loads_from = releases_rng.choice(LOADS_FROM)
        row.update(
            loads_from=loads_from,
            loads_until=releases_rng.choice(["b4234", None, None, None]) if loads_from else None,
            loads_because=None if loads_from is None and releases_rng.random() < 0.5 else [],
            llama_cpp=releases_rng.choice([None, None, "b4600..", HOSTILE[6]]),
        )
        if i % 11 == 3 and read:
            original = rng.choice(read)
            row.update(
                {k: original[k] for k in SCHEMA.names if k not in ("url", "scanned_at", "repo", "revision")},
                duplicate_of=original["url"],
                bytes=0,
                requests=1,
            )
        rows.append(row)
        read.append(row)
    # A rerun: some URLs scanned again later (an unreadable one now read),
    # and once with no time at all (the oldest).
    for i in range(0, 60, 6):
        again = dict(rows[i])
        again.update(scanned_at=f"2026-11-27T00:00:{i:02d}Z", status="valid", valid_strict=True,
                     valid_spec=True, valid_ggml=True, error_class=None, error=None, rules=[])
        rows.append(again)
    stale = dict(rows[1])
    stale.update(scanned_at=None, status="unreadable", error_class="timeout")
    rows.append(stale)
    return rows


@pytest.fixture(scope="module")
def scan_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("scan")
    rows = synthetic_rows()
    for k, start in enumerate(range(0, len(rows), 150)):
        table = pa.Table.from_pylist(rows[start : start + 150], schema=SCHEMA)
        pq.write_table(table, d / f"part-{k:05d}.parquet")
    return d


# --- what the rows say, computed row by row (the page computes by column) ---


def expected(scan_dir: Path) -> dict[str, Any]:
    rows = pq.read_table(scan_dir).to_pylist()
    latest: dict[str, tuple[tuple[int, str], dict[str, Any]]] = {}
    for r in rows:
        key = (0, "") if r["scanned_at"] is None else (1, r["scanned_at"])
        if r["url"] not in latest or key >= latest[r["url"]][0]:
            latest[r["url"]] = (key, r)
    files = [r for _, r in latest.values()]

    def verdicts(group: list[dict[str, Any]]) -> dict[str, int]:
        out = {"files": len(group)}
        for p in PROFILES:
            out[f"{p}_valid"] = sum(r[f"valid_{p}"] is True for r in group)
            out[f"{p}_invalid"] = sum(r[f"valid_{p}"] is False for r in group)
        out["unreadable"] = sum(r["status"] == "unreadable" for r in group)
        out["duplicates"] = sum(r["duplicate_of"] is not None for r in group)
        return out

    by_arch: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    by_type: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for r in files:
        by_arch[r["architecture"]].append(r)
        by_type[r["file_type"]].append(r)
    rules = Counter(x for r in files for x in set(r["rules"] or []) if x is not None)
    templates = Counter(h for r in files for h in set(r["template_hashes"] or []) if h is not None)
    template_rules: dict[str, Counter[str]] = defaultdict(Counter)
    for r in files:
        for h in set(r["template_hashes"] or []) - {None}:
            template_rules[h].update(set(r["template_rules"] or []) - {None})
    classes = Counter(r["error_class"] for r in files if r["status"] == "unreadable")
    return {
        "releases": Counter(release_of(r) for r in files),
        "refused": sorted(r["url"] for r in files if r["status"] != "unreadable" and r["loads_until"] is not None),
        "settings": Counter(r["llama_cpp"] for r in files if r["status"] != "unreadable"),
        "rows": len(rows),
        "files": len(files),
        "status": {s: sum(r["status"] == s for r in files) for s in ("valid", "invalid", "unreadable")},
        "profiles": {p: {"valid": sum(r[f"valid_{p}"] is True for r in files),
                         "invalid": sum(r[f"valid_{p}"] is False for r in files)} for p in PROFILES},
        "duplicates": sum(r["duplicate_of"] is not None for r in files),
        "bytes_total": sum(r["bytes"] or 0 for r in files),
        "requests_total": sum(r["requests"] or 0 for r in files),
        "bytes": sorted(r["bytes"] for r in files if r["bytes"] is not None),
        "architectures": {k: verdicts(v) for k, v in by_arch.items()},
        "file_types": {k: verdicts(v) for k, v in by_type.items()},
        "rules": rules,
        "templates": templates,
        "template_rules": template_rules,
        "error_classes": classes,
        "zero_causes": Counter(zero_cause(r) for r in files if r["bytes"] == 0),
    }


def release_of(r: dict[str, Any]) -> str:
    """The row of the release histogram a file counts in."""
    if r["status"] == "unreadable":
        return "not read"
    if r["loads_from"] is not None:
        return str(r["loads_from"])
    return "none" if r["loads_because"] is not None else "not a model"


def zero_cause(r: dict[str, Any]) -> str:
    """Why a row fetched no byte, as the page words it."""
    if r["duplicate_of"] is not None:
        return "duplicate (SHA-256 seen before: the HEAD only)"
    if r["status"] == "unreadable":
        return f"unreadable: {r['error_class'] or 'unknown'}"
    return "empty file" if r["size"] == 0 else f"status {r['status']}"


def test_figures_match_the_rows(scan_dir: Path, tmp_path: Path) -> None:
    fig = write_report(scan_dir, tmp_path / "page.html")
    want = expected(scan_dir)
    assert fig["rows"] == want["rows"] and fig["files"] == want["files"] < want["rows"]
    assert fig["part_files"] == len(list(scan_dir.glob("part-*.parquet"))) > 1
    assert fig["status"] == want["status"]
    for p in PROFILES:
        assert fig["profiles"][p]["valid"] == want["profiles"][p]["valid"]
        assert fig["profiles"][p]["invalid"] == want["profiles"][p]["invalid"]
    assert fig["duplicates"] == want["duplicates"] > 0
    assert fig["bytes"]["total"] == want["bytes_total"]
    assert fig["requests"]["total"] == want["requests_total"]
    b = want["bytes"]
    assert fig["bytes"]["median"] == b[(len(b) - 1) // 2]
    assert fig["bytes"]["max"] == b[-1]
    assert fig["bytes"]["mean"] == pytest.approx(sum(b) / len(b))
    assert sum(fig["bytes_histogram"]["counts"]) == sum(1 for x in b if x > 0)
    assert {g["key"]: {k: g[k] for k in g if k != "key"} for g in fig["architectures"]} == want["architectures"]
    assert {g["key"]: {k: g[k] for k in g if k not in ("key", "name")} for g in fig["file_types"]} == want["file_types"]
    assert {g["key"]: g["name"] for g in fig["file_types"]}[15] == "MOSTLY_Q4_K_M"
    assert {g["key"]: g["name"] for g in fig["file_types"]}[999] == "unknown (999)"
    assert {r["value"]: r["files"] for r in fig["rules"]} == dict(want["rules"])
    assert {t["value"]: t["files"] for t in fig["templates"]} == dict(want["templates"])
    for t in fig["templates"]:
        assert {r["rule"]: r["files"] for r in t["rules"]} == dict(want["template_rules"][t["value"]])
    assert {c["error_class"]: c["files"] for c in fig["error_classes"]} == dict(want["error_classes"])
    # The unreadable files a rerun retries (a failure that may pass), from the latest rows.
    may_pass = sum(n for c, n in want["error_classes"].items() if c in TRANSIENT_CLASSES)
    assert fig["unreadable_may_pass"] == may_pass > 0
    assert fig["images"] == ["architectures", "bytes", "file-types", "llama-cpp", "rules", "unreadable"]
    # Files per minimum release: the known releases oldest first, then the
    # names this version does not know, then the groups.
    known = _native.llama_cpp_releases()
    hist = [(r["release"], r["files"]) for r in fig["releases"]]
    groups = ["none", "not a model", "not recorded", "not read"]
    names = [k for k in want["releases"] if k not in groups]
    order = sorted((k for k in names if k in known), key=known.index) + sorted(k for k in names if k not in known)
    assert hist == [(k, want["releases"][k]) for k in order + groups], hist
    assert sum(n for _, n in hist) == fig["files"]
    assert [r["url"] for r in fig["refused"]] == want["refused"][:100] and fig["refused_count"] == len(want["refused"])
    assert {s["llama_cpp"]: s["files"] for s in fig["llama_cpp_settings"]} == dict(want["settings"])
    # Files that fetched no byte are explained from their rows, not as duplicates alone.
    assert {c["cause"]: c["files"] for c in fig["bytes_zero_causes"]} == dict(want["zero_causes"])
    assert sum(c["files"] for c in fig["bytes_zero_causes"]) == fig["bytes_zero"]


def test_counts_read_as_words_and_rules_take_their_levels_colour(tmp_path: Path) -> None:
    from gguf_validate.scan import report

    assert [report._count(n, "file") for n in (0, 1, 2, 1234)] == ["0 files", "1 file", "2 files", "1,234 files"]
    # One file: "1 file", and its missing file type reads as in the chart.
    row = {"url": "u", "status": "unreadable", "error_class": "not_found", "bytes": 0, "size": None}
    pq.write_table(pa.Table.from_pylist([row], schema=SCHEMA), tmp_path / "part-0.parquet")
    page = tmp_path / "p.html"
    fig = write_report(tmp_path, page)
    text = page.read_text()
    assert "GGUF hub scan: 1 file<" in text and "1 files" not in text
    assert fig["bytes_zero_causes"] == [{"cause": "unreadable: not_found", "files": 1}]
    assert "(not read)" not in text
    # Each rule's bar is coloured by its level under strict.
    levels = report._strict_levels()
    assert levels["tokenizer-byte-fallback"] == "error" and levels["template-hidden-text"] == "warning"
    assert {levels[r] for r in levels} >= {"error", "warning", "info"}


def test_limits_keep_the_largest_and_sum_the_rest(tmp_path: Path) -> None:
    rows = []
    for i in range(MAX_GROUPS + 15):
        for j in range(i % 4 + 1):
            rows.append({"url": f"u{i}-{j}", "status": "valid", "valid_strict": True, "architecture": f"arch{i:03d}",
                         "rules": [f"rule{i:03d}"], "template_hashes": [f"{i:064x}"]})
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), tmp_path / "part-0.parquet")
    fig = write_report(tmp_path, tmp_path / "page.html")
    listed = fig["architectures"]
    assert len(listed) == MAX_GROUPS and len(fig["rules"]) == MAX_RULES and len(fig["templates"]) == MAX_TEMPLATES
    assert [g["files"] for g in listed] == sorted((g["files"] for g in listed), reverse=True)
    assert sum(g["files"] for g in listed) + fig["architectures_others"]["files"] == len(rows)
    assert fig["architectures_others"]["groups"] == 15
    assert fig["rules_distinct"] == MAX_GROUPS + 15


def test_empty_and_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nothing"), "--output", str(tmp_path / "p.html")]) == 2
    assert "no part-*.parquet" in capsys.readouterr().err
    pq.write_table(SCHEMA.empty_table(), tmp_path / "part-0.parquet")
    assert main([str(tmp_path), "--output", str(tmp_path / "p.html")]) == 0
    page = (tmp_path / "p.html").read_text()
    assert 'id="total-files" data-value="0"' in page and "Nothing to plot" in page


def test_file_type_names_are_gguf_pys() -> None:
    gguf = pytest.importorskip("gguf")
    assert FILE_TYPE_NAMES == {int(m.value): m.name for m in gguf.LlamaFileType}


# --- in the browser -------------------------------------------------------------------


class Node:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node] = []
        self.text: list[str] = []

    def all_text(self) -> str:
        return "".join(self.text) + "".join(c.all_text() for c in self.children)

    def walk(self) -> list[Node]:
        out = [self]
        for c in self.children:
            out += c.walk()
        return out


class DOM(html.parser.HTMLParser):
    """The element tree of a serialized DOM (Chromium's: every non-void
    element closed)."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.at = self.root
        self.feed(text)
        self.close()
        self.nodes = self.root.walk()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self.at)
        self.at.children.append(node)
        if tag not in self.VOID:
            self.at = node

    def handle_endtag(self, tag: str) -> None:
        at: Node | None = self.at
        while at is not None and at.tag != tag:
            at = at.parent
        if at is not None and at.parent is not None:
            self.at = at.parent

    def handle_data(self, data: str) -> None:
        self.at.text.append(data)

    def find(self, attr: str, value: str | None = None) -> list[Node]:
        return [n for n in self.nodes if attr in n.attrs and (value is None or n.attrs[attr] == value)]

    def by_id(self, id: str) -> Node:
        (node,) = self.find("id", id)
        return node


def as_html(s: str) -> str:
    """A string as a browser's DOM holds it (HTML cannot carry NUL)."""
    return s.replace("\x00", "\ufffd")


def cells(row: Node) -> dict[str, int]:
    return {c.attrs["data-col"]: int(c.attrs["data-value"]) for c in row.walk() if "data-col" in c.attrs}


def chromium() -> str | None:
    named = os.environ.get("GGUF_CHROMIUM")
    if named:
        return named
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def dump_dom(page: Path, profile: Path) -> str:
    exe = chromium()
    if exe is None:
        pytest.skip("no chromium (install Debian's chromium or set GGUF_CHROMIUM)")
    out = subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
         f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom", page.resolve().as_uri()],
        capture_output=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
    )
    log = out.stderr.decode(errors="replace")[-2000:]
    assert out.returncode == 0, log
    # Bytes decoded as they are: text mode would turn the CRs of the data
    # into LFs.
    dom = out.stdout.decode("utf-8")
    assert "<html" in dom, log
    return dom


def screenshot(page: Path, png: Path, profile: Path) -> None:
    """`page` as Chromium draws it at 1280 px wide, into `png` (CI keeps it)."""
    exe = chromium()
    assert exe is not None
    png.parent.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
         "--hide-scrollbars", f"--user-data-dir={profile}", "--window-size=1280,3000", f"--screenshot={png}",
         page.resolve().as_uri()],
        capture_output=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr.decode(errors="replace")[-2000:]
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_page_in_headless_chromium(scan_dir: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    fig = write_report(scan_dir, page)
    dom = DOM(dump_dom(page, tmp_path / "profile"))
    # What a reader sees, kept for CI's artefacts.
    screenshot(page, ROOT / "target" / "scan-report.png", tmp_path / "profile-shot")
    want = expected(scan_dir)

    # It rendered, with its charts; nothing from the data became an element
    # or ran.
    (title,) = [n for n in dom.nodes if n.tag == "title"]
    assert title.all_text() == f"GGUF hub scan: {want['files']:,} files"
    images = [n for n in dom.nodes if n.tag == "img"]
    assert sorted(n.attrs["id"] for n in images) == [f"chart-{k}" for k in fig["images"]]
    for n in images:
        prefix = "data:image/png;base64,"
        assert n.attrs["src"].startswith(prefix)
        assert base64.b64decode(n.attrs["src"][len(prefix):]).startswith(b"\x89PNG\r\n\x1a\n")
    assert not [n for n in dom.nodes if n.tag in ("script", "iframe", "b")]
    assert not [n for n in dom.nodes if n.attrs.get("id", "").startswith("injected")]
    assert [n.tag for n in dom.nodes if n.tag == "h1"] == ["h1"]
    assert len([n for n in dom.nodes if n.tag == "style"]) == 1
    assert not dom.find("data-pwned")
    # Self-contained: nothing to fetch (images inline, links within the page).
    assert not [n for n in dom.nodes if n.tag in ("link", "object", "embed", "video", "audio", "source")]
    assert all(n.attrs["href"].startswith("#") for n in dom.find("href"))
    assert all(dom.find("id", n.attrs["href"][1:]) for n in dom.find("href"))
    assert not [n for n in dom.nodes if any(a.startswith("on") for a in n.attrs)]
    text = dom.root.all_text()
    assert HOSTILE[0] in text and HOSTILE[3] in text  # shown as text
    assert "\u202e" not in text and "<U+202E>" in text  # no reordering of what is shown

    # Totals.
    def value(id: str) -> int:
        return int(dom.by_id(id).attrs["data-value"])

    assert value("total-rows") == want["rows"]
    assert value("total-files") == want["files"]
    for s, n in want["status"].items():
        assert value(f"status-{s}") == n
    for p in PROFILES:
        assert value(f"profile-{p}-valid") == want["profiles"][p]["valid"]
        assert value(f"profile-{p}-invalid") == want["profiles"][p]["invalid"]
    assert value("duplicates") == want["duplicates"]
    assert value("bytes-total") == want["bytes_total"]
    assert value("requests-total") == want["requests_total"]
    assert float(dom.by_id("bytes-mean").attrs["data-value"]) == pytest.approx(sum(want["bytes"]) / len(want["bytes"]))

    # Per architecture and file type (keys read back from the attributes).
    archs = {n.attrs["data-architecture"]: cells(n) for n in dom.find("data-architecture")}
    (missing,) = dom.find("data-architecture-missing")
    archs_want = dict(want["architectures"])
    assert cells(missing) == archs_want.pop(None)
    assert archs == archs_want
    types = {int(n.attrs["data-file-type"]): cells(n) for n in dom.find("data-file-type")}
    for n in dom.find("data-file-type"):
        del types[int(n.attrs["data-file-type"])]["file_type"]
    types_want = dict(want["file_types"])
    (missing,) = dom.find("data-file-type-missing")
    assert cells(missing) == types_want.pop(None)
    assert types == types_want

    # Rules, templates, error classes.
    rules_want = {as_html(r): n for r, n in want["rules"].items()}
    assert {n.attrs["data-rule"]: cells(n)["files"] for n in dom.find("data-rule")} == rules_want
    templates = {n.attrs["data-template"]: n for n in dom.find("data-template")}
    assert {h: cells(n)["files"] for h, n in templates.items()} == dict(want["templates"])
    for h, n in templates.items():
        found = {s.attrs["data-template-rule"]: int(s.attrs["data-files"]) for s in n.walk() if "data-template-rule" in s.attrs}
        assert found == dict(want["template_rules"][h])
    # Files per minimum llama.cpp release, and the files the newest refuses.
    releases = {n.attrs["data-release"]: cells(n)["files"] for n in dom.find("data-release")}
    releases.update({n.attrs["data-release-group"]: cells(n)["files"] for n in dom.find("data-release-group")})
    assert releases == {as_html(k): n for k, n in want["releases"].items()} | {"not recorded": 0}
    assert [n.attrs["data-refused"] for n in dom.find("data-refused")] == [as_html(u) for u in want["refused"]]
    assert value("refused-files") == len(want["refused"])
    settings = {n.attrs["data-llama-cpp-setting"]: int(n.attrs["data-value"]) for n in dom.find("data-llama-cpp-setting")}
    assert settings == {("" if k is None else as_html(k)): n for k, n in want["settings"].items()}
    classes = {n.attrs["data-error-class"]: cells(n)["files"] for n in dom.find("data-error-class")}
    classes[None] = cells(dom.find("data-error-class-missing")[0])["files"]  # type: ignore[index]
    assert classes == dict(want["error_classes"])


def test_the_latest_row_of_a_url_is_by_attempts_first(tmp_path: Path) -> None:
    """A rerun within the second of a run's last row ties on `scanned_at`,
    and its part file may sort first: the row with more attempts counts."""
    at = "2026-12-02T06:00:00Z"
    newer = {"url": "u", "status": "invalid", "valid_strict": False, "attempts": 2, "scanned_at": at, "llama_cpp": "b4980.."}
    older = {"url": "u", "status": "valid", "valid_strict": True, "attempts": 1, "scanned_at": at}
    pq.write_table(pa.Table.from_pylist([newer], schema=SCHEMA), tmp_path / "part-0.parquet")
    pq.write_table(pa.Table.from_pylist([older], schema=SCHEMA), tmp_path / "part-1.parquet")
    fig = write_report(tmp_path, tmp_path / "page.html")
    assert fig["files"] == 1 and fig["status"]["invalid"] == 1
    assert fig["llama_cpp_settings"] == [{"llama_cpp": "b4980..", "files": 1}]
