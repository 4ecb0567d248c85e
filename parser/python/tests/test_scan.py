"""The hub scan (`gguf_validate.scan`) end to end against a fake hub on
127.0.0.1 (tests/fakehub.py): a listing API, `resolve` redirects to a
content server on another origin, copies of corpus files under several
repositories, 404s, a 429 with `Retry-After`, a server that stalls."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from conftest import ROOT, cli_entries  # noqa: E402
from fakehub import FakeHub  # noqa: E402

from gguf_validate.scan import scan  # noqa: E402

TOKEN = "hf_secret_token_for_the_test"

#: Distinct corpus files served (the fleet is these, their copies and faults).
DISTINCT = 160

#: Copies of corpus files under other repositories.
COPIES = 60

#: Seconds a stalled file may hold the scan (its timeout).
STALL_TIMEOUT = 3.0

#: Columns that differ between two runs of the same scan.
VOLATILE = ("seconds", "scanned_at", "requests", "bytes", "duplicate_of", "attempts")


def corpus_files() -> list[Path]:
    files = sorted((ROOT / "corpus" / "gguf").glob("*.gguf")) + sorted((ROOT / "corpus" / "models").glob("*.gguf"))
    step = max(1, len(files) // DISTINCT)
    return files[::step][:DISTINCT] + [ROOT / "corpus" / "samples" / "tiny-llama.gguf"]


class Fleet:
    """The fake hub and what it serves: URL -> local file."""

    def __init__(self, hub: FakeHub, tmp: Path) -> None:
        self.hub = hub
        self.local: dict[str, Path] = {}
        self.missing: list[str] = []
        files = corpus_files()
        for i, f in enumerate(files):
            self.local[hub.add(f"org{i % 7}/model-{i}", f.name, str(f))] = f
        # Copies (a hard link, then plain copies) under other repositories.
        for i in range(COPIES):
            f = files[(i * 5) % len(files)]
            path = tmp / f"copy-{i}.gguf"
            if i == 0:
                os.link(f, path)
            else:
                shutil.copyfile(f, path)
            self.local[hub.add(f"mirror{i % 3}/re-upload-{i}", f.name, str(path))] = f
        for i in range(4):
            self.missing.append(hub.add(f"gone/model-{i}", "model.gguf", str(files[0]), fault="404"))
        self.rate_limited = hub.add("busy/model", "busy.gguf", str(files[1]), fault="429", fault_count=1)
        self.local[self.rate_limited] = files[1]
        self.stalled = hub.add("slow/model", "slow.gguf", str(files[2]), fault="stall")

    def urls(self) -> list[str]:
        return [*self.local, *self.missing, self.stalled]


@pytest.fixture()
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fleet]:
    with FakeHub() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.hub_url)
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        yield Fleet(hub, tmp_path)


def rows_of(folder: Path, *, latest: bool = False) -> dict[str, dict[str, Any]]:
    """The rows of a scan by URL: one each (`latest`: the latest row of each
    URL, after checking that its rows are its attempts, none lost or
    doubled)."""
    table = pq.read_table(folder)
    rows = table.to_pylist()
    if not latest:
        by_url = {r["url"]: r for r in rows}
        assert len(by_url) == len(rows), "a file has more than one row"
        return by_url
    current: dict[str, tuple[tuple[int, int, str], dict[str, Any]]] = {}
    for r in rows:
        n = r["attempts"] or 1
        key = (n, 0, "") if r["scanned_at"] is None else (n, 1, r["scanned_at"])
        if r["url"] not in current or key >= current[r["url"]][0]:
            current[r["url"]] = (key, r)
    per_url = Counter(r["url"] for r in rows)
    for url, (_, r) in current.items():
        assert sorted(x["attempts"] for x in rows if x["url"] == url) == list(range(1, per_url[url] + 1)), url
        assert r["attempts"] == per_url[url], url
    return {u: r for u, (_, r) in current.items()}


def stable(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {u: {k: v for k, v in r.items() if k not in VOLATILE} for u, r in rows.items()}


def write_urls(tmp: Path, urls: list[str]) -> Path:
    p = tmp / "urls.txt"
    p.write_text("# the fleet\n" + "\n".join(urls) + "\n\n")
    return p


def test_every_file_has_one_row_with_the_clis_verdicts(fleet: Fleet, tmp_path: Path, cli: list[str]) -> None:
    out = tmp_path / "scan"
    s = scan(str(write_urls(tmp_path, fleet.urls())), out, concurrency=8, timeout=STALL_TIMEOUT)
    rows = rows_of(out)
    assert set(rows) == set(fleet.urls())
    assert s.rows == len(rows) and s.files == len(rows)
    # The CLI's verdicts for the same files, under each profile.
    paths = sorted({str(p.relative_to(ROOT)) for p in fleet.local.values()})
    for profile in ("strict", "spec", "ggml"):
        entries = cli_entries(cli, paths, "--profile", profile)
        for url, local in fleet.local.items():
            e = entries[str(local.relative_to(ROOT))]
            r = rows[url]
            assert r[f"valid_{profile}"] == e["valid"], (url, profile)
            if profile == "strict":
                assert r["status"] == ("valid" if e["valid"] else "invalid")
                assert r["errors"] == e["counts"]["errors"] and r["warnings"] == e["counts"]["warnings"]
                assert r["rules"] == sorted({d["rule"] for d in e["diagnostics"]})
                assert r["architecture"] == e["summary"].get("architecture")
                assert r["format"] == e.get("format")
                findings = json.loads(r["findings"])
                assert [d["rule"] for d in findings] == [d["rule"] for d in e["diagnostics"][:10]]
    for url in fleet.missing:
        assert rows[url]["status"] == "unreadable" and rows[url]["error_class"] == "not_found"
    stalled = rows[fleet.stalled]
    assert stalled["status"] == "unreadable" and stalled["error_class"] in ("timeout", "network"), stalled
    # The 429 was waited out (Retry-After: 1) and the file read.
    assert rows[fleet.rate_limited]["status"] in ("valid", "invalid")
    # What the hub said is kept.
    sample = next(u for u, p in fleet.local.items() if p.name == "tiny-llama.gguf")
    r = rows[sample]
    assert r["repo"].startswith("org") and len(r["revision"]) == 40 and len(r["sha256"]) == 64
    assert r["size"] == (ROOT / "corpus/samples/tiny-llama.gguf").stat().st_size
    assert r["template_hashes"] and all(len(h) == 64 for h in r["template_hashes"])


def test_duplicates_are_fetched_once(fleet: Fleet, tmp_path: Path) -> None:
    out = tmp_path / "scan"
    s = scan(fleet.urls(), out, concurrency=8, timeout=STALL_TIMEOUT)
    rows = rows_of(out)
    hub = fleet.hub
    # One file read per SHA-256: every range request for a content went
    # through one file's reading (at most 3 requests of metadata each).
    for sha, n in hub.content_bytes.items():
        gets = sum(c for k, c in hub.requests.items() if k.startswith("cdn GET") and k.endswith(sha))
        assert 1 <= gets <= 3, (sha, gets)
    dups = [r for r in rows.values() if r["duplicate_of"]]
    distinct = {r["sha256"] for r in rows.values() if r["sha256"] and r["status"] != "unreadable"}
    assert s.duplicates == len(dups) and len(dups) + len(distinct) == len([r for r in rows.values() if r["status"] != "unreadable"])
    for d in dups:
        # One HEAD (two for the file answered 429 first).
        assert d["bytes"] == 0 and d["requests"] == (2 if d["url"] == fleet.rate_limited else 1), d
        of = rows[d["duplicate_of"]]
        assert of["sha256"] == d["sha256"] and of["status"] == d["status"] and of["rules"] == d["rules"]


def test_a_rerun_skips_what_is_done_and_fetches_nothing_again(fleet: Fleet, tmp_path: Path) -> None:
    out = tmp_path / "scan"
    first = scan(fleet.urls(), out, concurrency=8, timeout=STALL_TIMEOUT)
    before = sum(fleet.hub.content_bytes.values())
    again = scan(fleet.urls(), out, concurrency=8, timeout=STALL_TIMEOUT)
    assert sum(fleet.hub.content_bytes.values()) == before, "a rerun fetched file contents again"
    # Every file keeps its row but the stalled one, a failure that may pass
    # (the 404s stay: --retry-failed retries them).
    assert first.transient == 1 and again.retried == 1 and again.rows == 1, again
    assert again.skipped == first.rows - 1, again
    rows = rows_of(out, latest=True)
    assert len(rows) == first.rows and rows[fleet.stalled]["attempts"] == 2


def test_a_killed_run_resumed_gives_the_same_table(fleet: Fleet, tmp_path: Path) -> None:
    urls = write_urls(tmp_path, fleet.urls())
    whole = tmp_path / "whole"
    scan(str(urls), whole, concurrency=4, timeout=STALL_TIMEOUT)
    out = tmp_path / "killed"
    env = dict(os.environ, GGUF_VALIDATE_SCAN_PART_ROWS="10")
    fleet.hub.latency = 0.02
    cmd = [sys.executable, "-m", "gguf_validate.scan", str(urls), "--output", str(out), "--concurrency", "2",
           "--timeout", str(STALL_TIMEOUT), "--quiet"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (out.exists() and len(list(out.glob("part-*.parquet"))) >= 2):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    partial = rows_of(out, latest=True)
    assert 0 < len(partial) < len(fleet.urls()), len(partial)
    fleet.hub.latency = 0.0
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert stable(rows_of(out, latest=True)) == stable(rows_of(whole))


def test_a_rerun_finishes_what_transient_failures_left(fleet: Fleet, tmp_path: Path, cli: list[str]) -> None:
    # Files whose HEAD answers but whose range reads get 503 (a CDN in
    # trouble), one of them with a copy under another repository: the run
    # records them unreadable, the copy is read itself (it does not inherit
    # a failure that may pass), and a rerun on the recovered hub reads them.
    hub = fleet.hub
    f = corpus_files()[5]
    flaky = [hub.add(f"flaky/m{i}", "m.gguf", str(f), sha256=f"{0xF1A0 + i:064x}", fault="range503", fault_count=10**6)
             for i in range(3)]
    flaky.append(hub.add("flaky-mirror/m0", "m.gguf", str(f), sha256=f"{0xF1A0:064x}", fault="range503",
                         fault_count=10**6))
    urls = fleet.urls() + flaky
    out = tmp_path / "scan"
    first = scan(urls, out, concurrency=8, timeout=STALL_TIMEOUT)
    rows = rows_of(out)
    for u in flaky:
        assert rows[u]["status"] == "unreadable" and rows[u]["error_class"] in ("read", "server_error"), rows[u]
        assert rows[u]["duplicate_of"] is None and rows[u]["attempts"] == 1
    assert first.transient == len(flaky) + 1, first  # and the stalled file
    # The hub recovers.
    for repo in hub.repos.values():
        for hf in repo.files.values():
            if hf.fault == "range503":
                hf.fault = None
    again = scan(urls, out, concurrency=8, timeout=STALL_TIMEOUT)
    assert again.retried == len(flaky) + 1 and again.skipped == len(urls) - len(flaky) - 1, again
    rows = rows_of(out, latest=True)
    assert set(rows) == set(urls)
    want = cli_entries(cli, [str(f.relative_to(ROOT))])[str(f.relative_to(ROOT))]
    for u in flaky:
        assert rows[u]["status"] == ("valid" if want["valid"] else "invalid") and rows[u]["attempts"] == 2, rows[u]
    # A lasting failure is kept unless asked: --retry-failed scans the 404s again.
    third = scan(urls, out, concurrency=8, timeout=STALL_TIMEOUT, retry_failed=True)
    assert third.retried == len(fleet.missing) + 1, third
    rows = rows_of(out, latest=True)
    assert all(rows[u]["attempts"] == 2 and rows[u]["error_class"] == "not_found" for u in fleet.missing)


def test_the_summary_line_says_what_a_rerun_will_retry(
    fleet: Fleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gguf_validate.scan import main

    urls = write_urls(tmp_path, [fleet.stalled, fleet.missing[0]])
    args = [str(urls), "--output", str(tmp_path / "scan"), "--timeout", str(STALL_TIMEOUT), "--quiet"]
    assert main(args) == 0
    line = capsys.readouterr().out
    assert "2 unreadable (1 of them may pass: a rerun retries them)" in line, line
    assert main(args) == 0
    line = capsys.readouterr().out
    assert "1 retried, 1 skipped, 1 unreadable (1 of them may pass" in line, line


def test_the_token_goes_to_the_hub_only_and_never_into_outputs(fleet: Fleet, tmp_path: Path) -> None:
    out = tmp_path / "scan"
    urls = write_urls(tmp_path, fleet.urls())
    proc = subprocess.run(
        [sys.executable, "-m", "gguf_validate.scan", str(urls), "--output", str(out), "--timeout", str(STALL_TIMEOUT)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert fleet.hub.auth_seen["hub"] == {f"Bearer {TOKEN}"}
    assert fleet.hub.auth_seen["cdn"] == set(), "the token reached the content server"
    page = tmp_path / "report.html"
    rep = subprocess.run(
        [sys.executable, "-m", "gguf_validate.scan", "report", str(out), "--output", str(page)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert rep.returncode == 0, rep.stderr
    blobs = [proc.stdout, proc.stderr, rep.stdout, rep.stderr, page.read_text()]
    for blob in [*blobs, *(p.read_bytes().decode("latin-1") for p in out.iterdir())]:
        assert TOKEN not in blob and "secret-signature" not in blob


def test_a_hub_listing_is_scanned_pinned_to_its_revisions(fleet: Fleet, tmp_path: Path) -> None:
    fleet.hub.page_size = 7  # several pages, followed by their Link headers
    out = tmp_path / "scan"
    s = scan("hub:org1", out, concurrency=4, timeout=STALL_TIMEOUT)
    rows = rows_of(out)
    expected = {n for n in fleet.hub.repos if "org1" in n}
    assert {r["repo"] for r in rows.values()} == expected and s.files == len(rows)
    for r in rows.values():
        assert f"/resolve/{r['revision']}/" in r["url"]
    # Pinned: a rerun skips them all without a request.
    before = dict(fleet.hub.requests)
    again = scan("hub:org1", out)
    assert again.skipped == len(rows) and again.rows == 0
    new = {k for k, v in fleet.hub.requests.items() if v != before.get(k)}
    assert new == {"hub GET /api/models"}, new


def test_ray_local_mode_gives_the_same_table(fleet: Fleet, tmp_path: Path) -> None:
    if os.environ.get("CI") != "true":
        pytest.importorskip("ray")
    import ray

    urls = fleet.urls()[:60] + fleet.urls()[-8:]  # copies, 404s, the 429 and the stall among them
    local = tmp_path / "local"
    # Judged against a window of llama.cpp releases: Ray's readers get the
    # setting too.
    scan(urls, local, concurrency=4, timeout=STALL_TIMEOUT, llama_cpp="b4980..")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = tmp_path / "ray"
        s = scan(urls, out, engine="ray", concurrency=2, threads=4, timeout=STALL_TIMEOUT, llama_cpp="b4980..")
    finally:
        ray.shutdown()
    assert s.files == len(urls)
    rows = rows_of(out)
    assert stable(rows) == stable(rows_of(local))
    assert {r["llama_cpp"] for r in rows.values()} == {"b4980.."}
    assert any("llama-cpp-release" in (r["rules"] or []) for r in rows.values())


def test_a_rate_cap_holds_across_threads_and_progress_is_shown(fleet: Fleet, tmp_path: Path) -> None:
    import io

    urls = list(fleet.local)[:20]
    lines = io.StringIO()
    t = time.monotonic()
    s = scan(urls, tmp_path / "scan", concurrency=8, rate=10.0, progress=lines)
    spent = time.monotonic() - t
    assert s.rows == 20
    # 20 HEADs to the hub at 10 a second from 8 threads: 19 gaps of 0.1 s.
    assert spent >= 1.8, spent
    last = lines.getvalue().strip().splitlines()[-1]
    assert last.startswith("scan: 20/20 files,") and "files/s" in last and "ETA" in last, last


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="profile"):
        scan([], tmp_path / "a", profile="lenient")
    with pytest.raises(ValueError, match="engine"):
        scan([], tmp_path / "b", engine="spark")
    p = subprocess.run([sys.executable, "-m", "gguf_validate.scan", str(tmp_path / "nope.txt"), "--output", str(tmp_path / "c")],
                       capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == 2 and "nope.txt" in p.stderr, p.stderr
