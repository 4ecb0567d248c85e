"""Shared fixtures: the repository's corpus, the command line to compare
with (the wheel's `gguf-validate` binary on PATH unless `GGUF_VALIDATE_BIN`
names another, e.g. the cargo-built one), and a loopback HTTP server."""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("GGUF_VALIDATE_ROOT", Path(__file__).resolve().parents[3]))


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def cli_exe() -> str:
    """The command line under test: `GGUF_VALIDATE_BIN`, else `gguf-validate` on PATH."""
    exe = os.environ.get("GGUF_VALIDATE_BIN") or shutil.which("gguf-validate")
    assert exe, "no gguf-validate on PATH (install the wheel) and GGUF_VALIDATE_BIN unset"
    return exe


@pytest.fixture(scope="session")
def cli() -> list[str]:
    return [cli_exe()]


def run_cli(cli: list[str], *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cli, *args], cwd=cwd, capture_output=True, text=True, check=False)


def cli_entries(cli: list[str], files: list[str], *flags: str) -> dict[str, dict]:
    """The CLI's JSON entries by path, for `files` relative to the root."""
    out = run_cli(cli, "--format", "json", "--no-config", "--allow-empty", *flags, *files)
    assert out.returncode in (0, 1, 2), out.stderr
    doc = json.loads(out.stdout)
    return {f["path"]: f for f in doc["files"] if f.get("kind") != "split-set"}


class _RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files with single `Range: bytes=a-b` requests honoured."""

    def log_message(self, *args: object) -> None:
        pass

    def send_head(self):  # type: ignore[no-untyped-def]
        rng = self.headers.get("Range")
        path = Path(self.translate_path(self.path))
        if not rng or not path.is_file():
            return super().send_head()
        size = path.stat().st_size
        start_s, _, end_s = rng.removeprefix("bytes=").partition("-")
        start = int(start_s)
        end = min(int(end_s) if end_s else size - 1, size - 1)
        if start >= size:
            self.send_error(416)
            return None
        f = path.open("rb")
        f.seek(start)
        self.send_response(206)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        self._remaining = end - start + 1
        return f

    def copyfile(self, source, outputfile):  # type: ignore[no-untyped-def]
        remaining = getattr(self, "_remaining", None)
        if remaining is None:
            return super().copyfile(source, outputfile)
        outputfile.write(source.read(remaining))
        return None


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    """`http://127.0.0.1:PORT` serving the repository's corpus folder."""
    handler = functools.partial(_RangeHandler, directory=str(ROOT / "corpus"))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
