"""Faults a hub really has, injected into the loopback fake hub
(tests/fakehub.py), under each engine (local, and Ray with a real local
cluster): `503`, connection resets and stalls on the hub's `resolve` (the
HEAD) and on the content's range reads, a listing that fails
mid-way, the scan killed with SIGKILL at a random moment, a Ray worker
killed mid-batch. After the faulted run and at most one rerun on a healthy
hub, every URL has exactly one current row, its rows are its attempts (none
lost or doubled), and every verdict is the command line's.

Each case adds a line to the fault table (`GGUF_VALIDATE_FAULT_TABLE`, by
default `target/scan-faults.md`): the rows after the first run and after
the rerun.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")

from conftest import ROOT, cli_entries  # noqa: E402
from fakehub import FakeHub  # noqa: E402
from test_scan import rows_of, write_urls  # noqa: E402

from gguf_validate.scan import scan  # noqa: E402
from gguf_validate.scan.schema import TRANSIENT_CLASSES  # noqa: E402

#: Healthy files, faulted files and copies of the fleet of one case.
HEALTHY = 24
FAULTED = 6
COPIES = 4

#: Seconds a file may take (a stalled read is given up after this).
TIMEOUT = 2.0

#: The faults that last until the hub is healthy, by where they strike.
FAULTS = ["head503", "head_reset", "head_stall", "range503", "range_reset", "range_stall"]

TABLE = Path(os.environ.get("GGUF_VALIDATE_FAULT_TABLE", ROOT / "target" / "scan-faults.md"))
_rows: list[str] = []


def record(fault: str, engine: str, urls: int, first: dict[str, int], after: dict[str, int], note: str = "") -> None:
    def cell(c: dict[str, int]) -> str:
        return f"{c['rows']} current, {c['unreadable']} unreadable ({c['transient']} may pass)"

    _rows.append(f"| {fault} | {engine} | {urls} | {cell(first)} | {cell(after)} | {note} |")


@pytest.fixture(scope="module", autouse=True)
def fault_table() -> Iterator[None]:
    yield
    if _rows:
        TABLE.parent.mkdir(parents=True, exist_ok=True)
        head = [
            "| fault | engine | URLs | after the faulted run | after one rerun on a healthy hub | note |",
            "|---|---|---|---|---|---|",
        ]
        TABLE.write_text("\n".join(head + _rows) + "\n")


def corpus() -> list[Path]:
    files = sorted((ROOT / "corpus" / "gguf").glob("*.gguf"))
    step = max(1, len(files) // (HEALTHY + FAULTED))
    return files[::step][: HEALTHY + FAULTED]


@pytest.fixture(scope="module")
def verdicts(cli: list[str]) -> dict[str, str]:
    """The command line's verdict of each corpus file used, by path."""
    files = [str(f.relative_to(ROOT)) for f in corpus()]
    entries = cli_entries(cli, files)
    return {str(ROOT / f): ("valid" if entries[f]["valid"] else "invalid") for f in files}


class Fleet:
    """A fleet of one case: URL -> the local file it serves."""

    def __init__(self, hub: FakeHub, tmp: Path, fault: str | None) -> None:
        self.hub = hub
        self.local: dict[str, Path] = {}
        self.faulted: list[str] = []
        files = corpus()
        for i, f in enumerate(files[:HEALTHY]):
            self.local[hub.add(f"org{i % 5}/m{i}", f.name, str(f))] = f
        for i, f in enumerate(files[HEALTHY:]):
            u = hub.add(f"flaky{i % 2}/m{i}", f.name, str(f), fault=fault, fault_count=10**6)
            self.local[u] = f
            self.faulted.append(u)
        # Copies of faulted files under other repositories (met in the same
        # chunk: they must not inherit a failure that may pass).
        for i in range(COPIES):
            f = files[HEALTHY + i % FAULTED]
            u = hub.add(f"mirror/m{i}", f.name, str(f), fault=fault, fault_count=10**6)
            self.local[u] = f
            self.faulted.append(u)

    def urls(self) -> list[str]:
        return list(self.local)


@pytest.fixture()
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    with FakeHub() as h:
        monkeypatch.setenv("HF_ENDPOINT", h.hub_url)
        yield h


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    if os.environ.get("CI") != "true":
        pytest.importorskip("ray")
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def counts(rows: dict[str, dict[str, Any]]) -> dict[str, int]:
    return {
        "rows": len(rows),
        "unreadable": sum(r["status"] == "unreadable" for r in rows.values()),
        "transient": sum(r["status"] == "unreadable" and r["error_class"] in TRANSIENT_CLASSES for r in rows.values()),
    }


def check_finished(fleet: Fleet, out: Path, verdicts: dict[str, str]) -> dict[str, dict[str, Any]]:
    """One current row per URL (its rows its attempts: `rows_of` checks),
    each with the command line's verdict."""
    rows = rows_of(out, latest=True)
    assert set(rows) == set(fleet.urls())
    for url, f in fleet.local.items():
        assert rows[url]["status"] == verdicts[str(f)], (url, rows[url]["status"], rows[url].get("error"))
    return rows


def scan_kwargs(engine: str) -> dict[str, Any]:
    if engine == "ray":
        return dict(engine="ray", concurrency=2, threads=4, timeout=TIMEOUT)
    return dict(engine="local", concurrency=4, timeout=TIMEOUT)


@pytest.mark.parametrize("engine", ["local", "ray"])
@pytest.mark.parametrize("fault", FAULTS)
def test_a_fault_that_passes_is_finished_by_one_rerun(
    fault: str, engine: str, hub: FakeHub, tmp_path: Path, verdicts: dict[str, str], request: pytest.FixtureRequest
) -> None:
    if engine == "ray":
        request.getfixturevalue("ray_cluster")
    fleet = Fleet(hub, tmp_path, fault)
    out = tmp_path / "scan"
    first = scan(fleet.urls(), out, **scan_kwargs(engine))
    rows = rows_of(out, latest=True)
    assert set(rows) == set(fleet.urls())
    for u in fleet.faulted:
        assert rows[u]["status"] == "unreadable" and rows[u]["error_class"] in TRANSIENT_CLASSES, rows[u]
        assert rows[u]["duplicate_of"] is None
    assert first.transient == len(fleet.faulted), first
    before = counts(rows)
    hub.healthy = True
    again = scan(fleet.urls(), out, **scan_kwargs(engine))
    assert again.retried == len(fleet.faulted) and again.skipped == HEALTHY, again
    rows = check_finished(fleet, out, verdicts)
    assert all(rows[u]["attempts"] == 2 for u in fleet.faulted)
    assert all(rows[u]["attempts"] == 1 for u in fleet.urls() if u not in fleet.faulted)
    record(fault, engine, len(fleet.urls()), before, counts(rows))


def test_a_listing_that_fails_mid_way_is_finished_by_a_rerun(
    hub: FakeHub, tmp_path: Path, verdicts: dict[str, str]
) -> None:
    fleet = Fleet(hub, tmp_path, None)
    hub.page_size = 4
    hub.listing_fails_from = 8  # the third page
    out = tmp_path / "scan"
    first = scan("hub:", out, **scan_kwargs("local"))
    # The two pages listed before the failure are scanned, and the run says
    # the listing stopped.
    assert first.listing_error and "listing" in first.listing_error, first
    rows_first = rows_of(out, latest=True)
    assert {r["repo"] for r in rows_first.values()} == set(sorted(hub.repos)[:8])
    assert first.files == len(rows_first) > 0
    # The command line exits 2 and says what happened.
    cmd = [sys.executable, "-m", "gguf_validate.scan", "hub:", "--output", str(tmp_path / "cli"), "--quiet"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ), check=False)
    assert done.returncode == 2, done.stderr
    assert "the listing stopped early" in done.stderr and "a rerun lists again" in done.stderr, done.stderr
    # A listing that fails on its first page lists nothing: an error.
    hub.listing_fails_from = 0
    with pytest.raises(ValueError, match="listing"):
        scan("hub:", tmp_path / "none", **scan_kwargs("local"))
    hub.healthy = True
    again = scan("hub:", out, **scan_kwargs("local"))
    assert again.listing_error is None
    rows = rows_of(out, latest=True)
    listed = {r["repo"] for r in rows.values()}
    assert listed == set(hub.repos)
    by_name = {(r["repo"], r["url"].rsplit("/", 1)[1]): r for r in rows.values()}
    for url, f in fleet.local.items():
        repo = url.split("/resolve/")[0].removeprefix(hub.hub_url + "/")
        assert by_name[(repo, f.name)]["status"] == verdicts[str(f)], url
    # The rerun scanned only what the first run had not listed.
    assert again.skipped >= len(rows_first), again
    record("listing fails mid-way (page 3)", "local", len(rows), counts(rows_first), counts(rows),
           "the pages listed before the failure are scanned (exit 2: the listing stopped early); the rerun lists "
           "again and scans the rest")


def scan_command(urls: Path, out: Path, engine: str) -> list[str]:
    cmd = [sys.executable, "-m", "gguf_validate.scan", str(urls), "--output", str(out), "--timeout", str(TIMEOUT),
           "--quiet", "--engine", engine]
    return cmd + (["--concurrency", "2", "--threads", "4"] if engine == "ray" else ["--concurrency", "2"])


@pytest.mark.parametrize("engine", ["local", "ray"])
@pytest.mark.parametrize("seed", [1, 2])
def test_a_scan_killed_at_a_random_moment_is_finished_by_one_rerun(
    engine: str, seed: int, hub: FakeHub, tmp_path: Path, verdicts: dict[str, str]
) -> None:
    if engine == "ray" and os.environ.get("CI") != "true":
        pytest.importorskip("ray")
    fleet = Fleet(hub, tmp_path, "range503")
    urls = write_urls(tmp_path, fleet.urls())
    out = tmp_path / "scan"
    env = dict(os.environ, GGUF_VALIDATE_SCAN_PART_ROWS="4")
    hub.latency = 0.03
    # A moment between the start (Ray's start-up included) and the end.
    delay = random.Random(seed).uniform(0.5, 6.0 if engine == "ray" else 2.0)
    proc = subprocess.Popen(scan_command(urls, out, engine), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(delay)
    finished_first = proc.poll() is not None
    # The scan and whatever it started (a local Ray cluster's processes).
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    partial = rows_of(out, latest=True) if out.exists() and list(out.glob("part-*.parquet")) else {}
    before = counts(partial)
    hub.latency = 0.0
    hub.healthy = True
    done = subprocess.run(scan_command(urls, out, engine), env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = check_finished(fleet, out, verdicts)
    record(f"SIGKILL after {delay:.1f} s (seed {seed})", engine, len(fleet.urls()), before, counts(rows),
           "the run had finished" if finished_first else "")


def test_a_ray_worker_killed_mid_batch(
    hub: FakeHub, tmp_path: Path, verdicts: dict[str, str], ray_cluster: None
) -> None:
    # Range reads stall until the hub is healthy: the tasks are mid-batch,
    # waiting on the network, when one of their workers is killed.
    fleet = Fleet(hub, tmp_path, "range_stall")
    out = tmp_path / "scan"
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["summary"] = scan(fleet.urls(), out, engine="ray", concurrency=2, threads=4, timeout=20.0)
        except Exception as e:  # noqa: BLE001 - the test reports it
            result["error"] = e

    t = threading.Thread(target=run)
    t.start()
    deadline = time.monotonic() + 120
    killed = None
    while killed is None and time.monotonic() < deadline:
        stalled = sum(n for k, n in hub.requests.items() if k.startswith("cdn GET"))
        if stalled >= FAULTED:
            killed = _kill_a_busy_ray_worker()
        time.sleep(0.1)
    assert killed is not None, "no Ray worker was seen reading"
    hub.healthy = True
    t.join(timeout=300)
    assert not t.is_alive()
    first_error = result.get("error")
    partial = rows_of(out, latest=True) if out.exists() and list(out.glob("part-*.parquet")) else {}
    before = counts(partial)
    # At most one rerun on the healthy hub.
    scan(fleet.urls(), out, engine="ray", concurrency=2, threads=4, timeout=TIMEOUT)
    rows = check_finished(fleet, out, verdicts)
    note = f"worker {killed} killed; " + ("the run raised, the rerun finished" if first_error else "Ray retried its task")
    record("Ray worker SIGKILLed mid-batch", "ray", len(fleet.urls()), before, counts(rows), note)


def _kill_a_busy_ray_worker() -> int | None:
    """SIGKILLs a Ray worker that runs a task (its title names the task)."""
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        pid, _, args = line.strip().partition(" ")
        if args.startswith("ray::") and "IDLE" not in args and ("Map" in args or "ray_batch" in args):
            os.kill(int(pid), signal.SIGKILL)
            return int(pid)
    return None
