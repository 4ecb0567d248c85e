"""A fake model hub on 127.0.0.1, for the scan's tests and benchmark.

Two loopback servers: the hub (the model listing API and `resolve` URLs,
which answer with a redirect carrying `X-Repo-Commit`, `X-Linked-Etag` and
`X-Linked-Size`, as the Hugging Face Hub does) and a content server (another
port, so another origin: the token must never reach it) that serves the
bytes with range requests. Faults are set per file: a 404, a 429 with
`Retry-After` the first times, a stall, a latency added to every request;
and faults that last until the hub is `healthy` again (a CDN in trouble):
`head503`, `head_reset` and `head_stall` on the hub's `resolve`, `range503`,
`range_reset` and `range_stall` on the content's range reads, and a
listing whose pages from `listing_fails_from` on answer 500.
Everything is counted: requests per path, content bytes sent per SHA-256,
and the `Authorization` header each server saw.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import struct
import threading
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: Longest a stalled response keeps its client waiting (the test's bound).
STALL_SECONDS = 30.0

_RANGE = re.compile(r"bytes=(\d+)-(\d*)$")


@dataclass
class HubFile:
    """One file of a repository: its bytes on disk and its faults."""

    path: str
    sha256: str
    size: int
    #: "404", "429" (the first `fault_count` requests), "stall", "500";
    #: until the hub is healthy: "head503", "head_reset", "head_stall", "range_reset",
    #: "range_stall";
    #: "range503" (its content's range reads answer 503, the first
    #: `fault_count` of them; the HEAD works: a CDN in trouble).
    fault: str | None = None
    fault_count: int = 1


@dataclass
class Repo:
    """A repository: its revision and files by name."""

    name: str
    revision: str
    files: dict[str, HubFile] = field(default_factory=dict)


def file_sha256(path: str, _cache: dict[str, str] = {}) -> str:  # noqa: B006 - a deliberate memo
    """The SHA-256 of a file (memoised by path)."""
    if path not in _cache:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _cache[path] = h.hexdigest()
    return _cache[path]


class FakeHub:
    """The two servers; `start()` and `stop()`, or use it as a context manager."""

    def __init__(self, *, latency: float = 0.0, page_size: int = 50) -> None:
        self.repos: dict[str, Repo] = {}
        self._by_sha: dict[str, HubFile] = {}
        self.latency = latency
        self.page_size = page_size
        self.requests: Counter[str] = Counter()
        self.content_bytes: Counter[str] = Counter()
        self.auth_seen: dict[str, set[str]] = {"hub": set(), "cdn": set()}
        self.hits: Counter[str] = Counter()
        self.lock = threading.Lock()
        #: The lasting faults (`head503`, ..., the listing's) are off once set.
        self.healthy = False
        #: The listing's pages from this cursor on answer 500 (until healthy).
        self.listing_fails_from: int | None = None
        self._servers: list[ThreadingHTTPServer] = []
        self.hub_url = ""
        self.cdn_url = ""

    # -- set-up ---------------------------------------------------------
    def add(
        self, repo: str, name: str, path: str, *, revision: str | None = None, sha256: str | None = None, **fault: Any
    ) -> str:
        """Adds `path` as `repo/name`; returns its `resolve` URL. `sha256`
        makes the hub call it another file (a benchmark's distinct files)."""
        r = self.repos.setdefault(repo, Repo(repo, revision or hashlib.sha1(repo.encode()).hexdigest()))
        f = HubFile(path, sha256 or file_sha256(path), os.path.getsize(path), **fault)
        r.files[name] = f
        self._by_sha[f.sha256] = f
        return self.url_of(repo, name)

    def url_of(self, repo: str, name: str) -> str:
        return f"{self.hub_url}/{repo}/resolve/main/{urllib.parse.quote(name)}"

    def by_sha(self, sha: str) -> HubFile | None:
        return self._by_sha.get(sha)

    # -- servers --------------------------------------------------------
    def start(self) -> FakeHub:
        hub = _Server(("127.0.0.1", 0), _handler(self, "hub"))
        cdn = _Server(("127.0.0.1", 0), _handler(self, "cdn"))
        for s in (hub, cdn):
            s.daemon_threads = True
            threading.Thread(target=s.serve_forever, daemon=True).start()
            self._servers.append(s)
        self.hub_url = f"http://127.0.0.1:{hub.server_address[1]}"
        # Another origin (a name, not the address) for the content.
        self.cdn_url = f"http://localhost:{cdn.server_address[1]}"
        return self

    def stop(self) -> None:
        for s in self._servers:
            s.shutdown()
            s.server_close()
        self._servers.clear()

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    """Quiet about clients that hang up (the scan gives up on stalls)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def _handler(hub: FakeHub, role: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_HEAD(self) -> None:
            self._serve(head=True)

        def do_GET(self) -> None:
            self._serve(head=False)

        def _serve(self, head: bool) -> None:
            if hub.latency:
                time.sleep(hub.latency)
            path = urllib.parse.urlsplit(self.path).path
            with hub.lock:
                hub.requests[f"{role} {self.command} {path}"] += 1
                auth = self.headers.get("Authorization")
                if auth:
                    hub.auth_seen[role].add(auth)
            if role == "hub":
                self._hub(path, head)
            else:
                self._cdn(path, head)

        def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, head: bool = False) -> None:
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head and body:
                self.wfile.write(body)

        def _reset(self) -> None:
            """Drops the connection with a TCP reset, no answer."""
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()

        def _stall_until_healthy(self, head: bool) -> None:
            """Answers nothing until the hub is healthy (at most
            `STALL_SECONDS`), then a 504."""
            deadline = time.monotonic() + STALL_SECONDS
            while not hub.healthy and time.monotonic() < deadline:
                time.sleep(0.05)
            self._send(504, b"", head=head)

        def _hub(self, path: str, head: bool) -> None:
            if path == "/api/models":
                return self._listing()
            m = re.match(r"^/(.+?)/resolve/([^/]+)/(.+)$", path)
            if not m:
                return self._send(404, b"no such page", head=head)
            repo = hub.repos.get(m.group(1))
            name = urllib.parse.unquote(m.group(3))
            f = repo.files.get(name) if repo else None
            if repo is None or f is None or f.fault == "404":
                return self._send(404, b"Entry not found", {"X-Error-Code": "EntryNotFound"}, head)
            key = f"{repo.name}/{name}"
            with hub.lock:
                hub.hits[key] += 1
                hits = hub.hits[key]
            if f.fault == "429" and hits <= f.fault_count:
                return self._send(429, b"slow down", {"Retry-After": "1"}, head)
            if f.fault == "500" and hits <= f.fault_count:
                return self._send(500, b"oops", head=head)
            if f.fault == "stall":
                time.sleep(STALL_SECONDS)
                return self._send(504, b"", head=head)
            if f.fault == "head503" and not hub.healthy:
                return self._send(503, b"the hub is having a moment", head=head)
            if f.fault == "head_reset" and not hub.healthy:
                return self._reset()
            if f.fault == "head_stall" and not hub.healthy:
                return self._stall_until_healthy(head)
            location = f"{hub.cdn_url}/cdn/{f.sha256}?sig=secret-signature"
            self._send(
                302,
                b"",
                {
                    "Location": location,
                    "X-Repo-Commit": repo.revision,
                    "X-Linked-Etag": f'"{f.sha256}"',
                    "X-Linked-Size": str(f.size),
                    "ETag": f'"{f.sha256}"',
                },
                head,
            )

        def _listing(self) -> None:
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            search = (q.get("search") or [""])[0]
            start = int((q.get("cursor") or ["0"])[0])
            if hub.listing_fails_from is not None and start >= hub.listing_fails_from and not hub.healthy:
                return self._send(500, b"the listing is having a moment")
            limit = min(int((q.get("limit") or [str(hub.page_size)])[0]), hub.page_size)
            names = sorted(n for n in hub.repos if search in n)
            page = names[start : start + limit]
            body = json.dumps(
                [
                    {"id": n, "sha": hub.repos[n].revision, "siblings": [{"rfilename": k} for k in hub.repos[n].files]}
                    for n in page
                ]
            ).encode()
            headers = {"Content-Type": "application/json"}
            if start + limit < len(names):
                nxt = dict(q)
                nxt["cursor"] = [str(start + limit)]
                link = f"{hub.hub_url}/api/models?{urllib.parse.urlencode(nxt, doseq=True)}"
                headers["Link"] = f'<{link}>; rel="next"'
            self._send(200, body, headers)

        def _cdn(self, path: str, head: bool) -> None:
            m = re.match(r"^/cdn/([0-9a-f]{64})$", path)
            f = hub.by_sha(m.group(1)) if m else None
            if f is None:
                return self._send(404, b"", head=head)
            etag = f'"{f.sha256}"'
            rng = _RANGE.match(self.headers.get("Range", ""))
            if rng is not None and not hub.healthy and f.fault == "range_reset":
                return self._reset()
            if rng is not None and not hub.healthy and f.fault == "range_stall":
                return self._stall_until_healthy(head)
            if rng is not None and f.fault == "range503" and not hub.healthy:
                with hub.lock:
                    hub.hits[f"cdn {f.sha256}"] += 1
                    failing = hub.hits[f"cdn {f.sha256}"] <= f.fault_count
                if failing:
                    return self._send(503, b"the CDN is having a moment", head=head)
            if rng is None:
                with open(f.path, "rb") as fh:
                    body = fh.read()
                with hub.lock:
                    hub.content_bytes[f.sha256] += 0 if head else len(body)
                return self._send(200, body, {"ETag": etag, "Accept-Ranges": "bytes"}, head)
            a = int(rng.group(1))
            b = int(rng.group(2)) if rng.group(2) else f.size - 1
            if a >= f.size:
                return self._send(416, b"", {"Content-Range": f"bytes */{f.size}"}, head)
            b = min(b, f.size - 1)
            with open(f.path, "rb") as fh:
                fh.seek(a)
                body = fh.read(b - a + 1)
            with hub.lock:
                hub.content_bytes[f.sha256] += 0 if head else len(body)
            self._send(
                206,
                body,
                {"ETag": etag, "Accept-Ranges": "bytes", "Content-Range": f"bytes {a}-{b}/{f.size}"},
                head,
            )

    return Handler
