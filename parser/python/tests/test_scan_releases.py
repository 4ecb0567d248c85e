"""The hub scan and llama.cpp releases (issue 51): every row says which
releases load its file (`loads_from`, `loads_until`, `loads_because`, as the
command line's `summary.llama_cpp`), the report counts files per minimum
release and lists the files the newest release refuses, and `--llama-cpp`
judges `strict` against a release or a window of them, as the command
line's; a rerun under another setting judges again."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from conftest import ROOT, cli_entries  # noqa: E402
from fakehub import FakeHub  # noqa: E402

import gguf_validate  # noqa: E402
from gguf_validate.scan import scan  # noqa: E402
from gguf_validate.scan.report import write_report  # noqa: E402
from gguf_validate.scan.schema import SCHEMA  # noqa: E402

MODELS = ROOT / "corpus" / "models"

#: Corpus files and what the release table says of them (the command
#: line's `summary.llama_cpp`: loads_from, loads_until; the test holds the
#: rows to its JSON too): None for "not judged for releases".
FILES: dict[str, tuple[str | None, str | None] | None] = {
    "llama__complete.gguf": ("b3889", None),
    "llama__tokenizer_none.gguf": ("b4435", None),  # tokenizer model `none` since b4435
    "gemma3__complete.gguf": ("b4980", None),  # architecture `gemma3` since b4980
    "qwen3__complete.gguf": ("b5590", None),  # architecture `qwen3` since b5590
    # `qwen4exp` since v0.4.0, but the pinned tree's model loader refuses it
    # (the releases after b8390 are held to its contract): none.
    "qwen4exp__no_ple_embd_only.gguf": (None, None),
    "qwen3__tokenizer_unknown_pre.gguf": (None, None),  # known to no release: "none"
    "qwen3__vocab_only.gguf": ("b5590", None),  # a vocabulary: judged by its names
    "llama__unknown_architecture.gguf": None,  # `llamax`: not examined as a llama.cpp model
}


def q4_0_4_4_model(tmp: Path) -> Path:
    """tiny-llama with its Q4_0 tensor retyped Q4_0_4_4 (the same size; a
    type llama.cpp b3889 to b4234 know and later releases removed): loads
    from b3889 until b4234."""
    data = bytearray((ROOT / "corpus" / "samples" / "tiny-llama.gguf").read_bytes())
    name = b"blk.0.ffn_down.weight"
    at = data.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
    dims = struct.unpack_from("<I", data, at)[0]
    at += 4 + 8 * dims
    assert struct.unpack_from("<I", data, at)[0] == 2  # Q4_0
    struct.pack_into("<I", data, at, 31)  # Q4_0_4_4
    path = tmp / "q4_0_4_4.gguf"
    path.write_bytes(data)
    return path


class Hub:
    """The fake hub serving FILES, the retyped model, a copy of qwen3 under
    another repository and a 404: URL -> local path (None: the 404)."""

    def __init__(self, hub: FakeHub, tmp: Path) -> None:
        self.hub = hub
        self.local: dict[str, Path | None] = {}
        for i, name in enumerate(FILES):
            self.local[hub.add(f"org/m{i}", name, str(MODELS / name))] = MODELS / name
        copy = tmp / "qwen3-copy.gguf"
        shutil.copyfile(MODELS / "qwen3__complete.gguf", copy)
        self.copy = hub.add("mirror/qwen3", "qwen3__complete.gguf", str(copy))
        self.local[self.copy] = MODELS / "qwen3__complete.gguf"
        self.refused_path = q4_0_4_4_model(tmp)
        self.refused = hub.add("old/q4044", "q4_0_4_4.gguf", str(self.refused_path))
        self.local[self.refused] = self.refused_path
        self.missing = hub.add("gone/model", "model.gguf", str(MODELS / "llama__complete.gguf"), fault="404")
        self.local[self.missing] = None

    def url(self, name: str) -> str:
        return next(u for u, p in self.local.items() if p is not None and p.name == name and u != self.copy)


@pytest.fixture()
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    with FakeHub() as h:
        monkeypatch.setenv("HF_ENDPOINT", h.hub_url)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        yield Hub(h, tmp_path)


def latest_rows(folder: Path) -> dict[str, dict[str, Any]]:
    """The latest row of each URL (the most attempts)."""
    out: dict[str, dict[str, Any]] = {}
    for r in pq.read_table(folder, schema=SCHEMA).to_pylist():
        if r["url"] not in out or r["attempts"] > out[r["url"]]["attempts"]:
            out[r["url"]] = r
    return out


def cli_of(cli: list[str], paths: list[Path], *flags: str) -> dict[Path, dict[str, Any]]:
    """The command line's JSON entry of each local file."""
    rel = sorted({str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p) for p in paths})
    entries = cli_entries(cli, rel, *flags)
    return {p: entries[str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)] for p in paths}


def test_rows_and_report_say_which_releases_load_each_file(hub: Hub, tmp_path: Path, cli: list[str]) -> None:
    out = tmp_path / "scan"
    s = scan(list(hub.local), out, concurrency=4)
    assert s.llama_cpp is None and s.duplicates == 1
    rows = latest_rows(out)
    assert set(rows) == set(hub.local)
    # The command line's summary.llama_cpp, column by column.
    want = cli_of(cli, [p for p in hub.local.values() if p is not None])
    for url, path in hub.local.items():
        r = rows[url]
        assert r["llama_cpp"] is None
        if path is None:
            assert r["status"] == "unreadable" and r["loads_from"] is None and r["loads_because"] is None
            continue
        summary = want[path]["summary"].get("llama_cpp")
        if summary is None:
            assert (r["loads_from"], r["loads_until"], r["loads_because"]) == (None, None, None), url
        else:
            assert r["loads_from"] == summary["loads_from"] and r["loads_until"] == summary["loads_until"], url
            assert r["loads_because"] == summary["because"], url
        assert r["status"] == ("valid" if want[path]["valid"] else "invalid"), url
    # What the table says of them.
    for name, loads in FILES.items():
        r = rows[hub.url(name)]
        if loads is None:
            assert r["loads_because"] is None, name
        else:
            assert (r["loads_from"], r["loads_until"]) == loads and r["loads_because"] is not None, name
    assert rows[hub.url("qwen3__complete.gguf")]["loads_because"] == ["architecture `qwen3` since b5590"]
    assert rows[hub.copy]["duplicate_of"] == hub.url("qwen3__complete.gguf")
    assert rows[hub.copy]["loads_from"] == "b5590"
    assert (rows[hub.refused]["loads_from"], rows[hub.refused]["loads_until"]) == ("b3889", "b4234")

    # The report: files per minimum release, oldest first, then the groups.
    page = tmp_path / "report.html"
    fig = write_report(out, page)
    hist = [(r["release"], r["files"]) for r in fig["releases"]]
    assert hist == [
        ("b3889", 2),  # llama__complete, the retyped model
        ("b4435", 1),
        ("b4980", 1),
        ("b5590", 3),  # qwen3, its copy and its vocabulary
        ("none", 2),  # an unknown pre-tokenizer, qwen4exp
        ("not a model", 1),  # `llamax`
        ("not recorded", 0),
        ("not read", 1),
    ], hist
    assert sum(n for _, n in hist) == fig["files"] == len(hub.local)
    assert fig["refused_count"] == 1 and [r["url"] for r in fig["refused"]] == [hub.refused]
    assert fig["refused"][0]["loads_until"] == "b4234"
    assert fig["llama_cpp_settings"] == [{"llama_cpp": None, "files": len(hub.local) - 1}]
    assert "llama-cpp" in fig["images"]
    html = page.read_text()
    assert 'id="llama-cpp">Files per minimum llama.cpp release</h2>' in html
    cells = dict(re.findall(r'<tr data-release="([^"]+)">.*?data-value="(\d+)"', html))
    assert cells == {k: str(n) for k, n in hist[:4]}, cells
    groups = dict(re.findall(r'<tr data-release-group="([^"]+)">.*?data-value="(\d+)"', html))
    assert groups == {k: str(n) for k, n in hist[4:]}, groups
    assert f'data-refused="{hub.refused}"' in html and 'id="refused-files" data-value="1"' in html


def test_a_llama_cpp_window_judges_strict_against_it(hub: Hub, tmp_path: Path, cli: list[str]) -> None:
    qwen3, gemma3 = hub.url("qwen3__complete.gguf"), hub.url("gemma3__complete.gguf")
    out = tmp_path / "scan"
    plain = scan(list(hub.local), out, concurrency=4)
    rows = latest_rows(out)
    assert rows[qwen3]["status"] == "valid" and rows[gemma3]["status"] == "valid"

    # Rerun with a window from b4980: qwen3 (b5590) is refused by b4980,
    # so strict turns it invalid (llama-cpp-release), as the command line
    # says; every verdict is judged again (the rows of the first run were
    # judged under no setting), the copy is not copied from them.
    again = scan(list(hub.local), out, concurrency=4, llama_cpp="b4980..")
    readable = sum(p is not None for p in hub.local.values())
    assert again.llama_cpp == "b4980.." and again.rejudged == readable and again.skipped == 1, again
    assert again.duplicates == 1 and again.judged == readable - 1, again
    rows = latest_rows(out)
    want = cli_of(cli, [p for p in hub.local.values() if p is not None], "--llama-cpp", "b4980..")
    for url, path in hub.local.items():
        r = rows[url]
        if path is None:
            assert r["attempts"] == 1 and r["llama_cpp"] is None  # the 404 was not read again
            continue
        e = want[path]
        assert r["attempts"] == 2 and r["llama_cpp"] == "b4980..", url
        assert r["valid_strict"] == e["valid"] and r["rules"] == sorted({d["rule"] for d in e["diagnostics"]}), url
    assert rows[qwen3]["status"] == "invalid" and "llama-cpp-release" in rows[qwen3]["rules"]
    assert rows[hub.copy]["status"] == "invalid" and rows[hub.copy]["llama_cpp"] == "b4980.."
    assert rows[gemma3]["status"] == "valid"
    # Which releases load a file does not depend on the setting.
    assert rows[qwen3]["loads_from"] == "b5590"

    # The same setting again: nothing to do.
    third = scan(list(hub.local), out, concurrency=4, llama_cpp="b4980..")
    assert third.rows == 0 and third.rejudged == 0 and third.skipped == len(hub.local), third
    # The report says which setting the verdicts were judged under.
    fig = write_report(out, tmp_path / "page.html")
    assert fig["llama_cpp_settings"] == [{"llama_cpp": "b4980..", "files": readable}]
    assert 'data-llama-cpp-setting="b4980.."' in (tmp_path / "page.html").read_text()
    assert plain.rejudged == 0

    # One release: the same, recorded as given; the newest release with
    # `..` is that release alone.
    one = scan([qwen3], tmp_path / "one", llama_cpp="b5590")
    assert one.llama_cpp == "b5590" and latest_rows(tmp_path / "one")[qwen3]["status"] == "valid"
    newest = gguf_validate._native.llama_cpp_releases()[-1]
    assert scan([], tmp_path / "newest", llama_cpp=f"{newest}..").llama_cpp == newest


def test_an_unknown_release_is_a_usage_error_naming_the_known_ones(tmp_path: Path) -> None:
    known = gguf_validate._native.llama_cpp_releases()
    assert known[0] == "b3889" and len(known) > 10
    assert gguf_validate._native.llama_cpp_releases("b4980..")[0] == "b4980"
    with pytest.raises(gguf_validate.UsageError, match=f"unknown llama.cpp release `b1`.*{known[0]}.*{known[-1]}"):
        scan([], tmp_path / "a", llama_cpp="b1")
    assert not (tmp_path / "a").exists(), "a usage error wrote the folder"
    urls = tmp_path / "urls.txt"
    urls.write_text("")
    p = subprocess.run(
        [sys.executable, "-m", "gguf_validate.scan", str(urls), "--output", str(tmp_path / "b"), "--llama-cpp", "b1"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert p.returncode == 2 and "unknown llama.cpp release `b1`" in p.stderr and known[-1] in p.stderr, p.stderr


def test_a_folder_written_before_the_columns_is_resumed_and_reported(
    hub: Hub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Part files without the release columns (an older version's) read as
    rows judged under no setting whose releases were not recorded: a rerun
    without `--llama-cpp` skips them, the report counts them apart."""
    out = tmp_path / "scan"
    urls = [hub.url("llama__complete.gguf"), hub.url("qwen3__complete.gguf")]
    scan(urls[:1], out)
    (part,) = out.glob("part-*.parquet")
    old = pq.read_table(part).drop_columns(["loads_from", "loads_until", "loads_because", "llama_cpp"])
    pq.write_table(old, part)
    assert "loads_from" not in pq.read_schema(part).names
    s = scan(urls, out)
    assert s.skipped == 1 and s.rows == 1 and s.rejudged == 0, s
    fig = write_report(out, tmp_path / "page.html")
    hist = {r["release"]: r["files"] for r in fig["releases"]}
    assert hist == {"b5590": 1, "none": 0, "not a model": 0, "not recorded": 1, "not read": 0}, hist
    # Under a setting, the old rows are judged again (the command line
    # says so).
    from gguf_validate.scan import main

    listed = tmp_path / "urls.txt"
    listed.write_text("\n".join(urls) + "\n")
    assert main([str(listed), "--output", str(out), "--llama-cpp", "b3889..", "--quiet"]) == 0
    line = capsys.readouterr().out
    assert "2 files: 2 read, 0 duplicates, 2 judged again under --llama-cpp b3889.., 0 skipped" in line, line
    assert {r["llama_cpp"] for r in latest_rows(out).values()} == {"b3889.."}
    # The report reads the old part and the new ones together.
    fig = write_report(out, tmp_path / "page.html")
    assert {r["release"]: r["files"] for r in fig["releases"] if r["files"]} == {"b3889": 1, "b5590": 1}
