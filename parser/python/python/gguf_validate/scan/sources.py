"""What a scan reads: the sources named on its command line.

- a text file with one URL per line (blank lines and `#` comments skipped);
- a `.parquet` or `.csv` file with a `url` column (and optionally `repo`
  and `revision` columns);
- `hub:QUERY`: the GGUF files of the models a hub's listing API returns for
  QUERY (`HF_ENDPOINT`, huggingface.co by default), each URL pinned to the
  revision the listing gives.

The listing is read page by page (the `Link: <...>; rel="next"` header), at
most `MAX_LISTING_PAGES` pages; `HF_TOKEN` goes to the hub's own origin
only, `Retry-After` is honoured up to `MAX_RETRY_AFTER` seconds and
`LISTING_RETRIES` times.
"""

from __future__ import annotations

import csv
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

#: Pages of a hub listing read at most (a listing that never ends stops here).
MAX_LISTING_PAGES = 10_000

#: Models asked for per page of a listing.
LISTING_PAGE_SIZE = 1000

#: Retries of a listing page that failed in a way that may pass.
LISTING_RETRIES = 3

#: Longest `Retry-After` honoured, in seconds.
MAX_RETRY_AFTER = 60.0

#: Seconds a listing request may take.
LISTING_TIMEOUT = 60.0

#: Bytes of one listing page read at most.
MAX_LISTING_PAGE_BYTES = 256 << 20

#: The hub `hub:` listings and `hf://` names use when `HF_ENDPOINT` is unset.
DEFAULT_ENDPOINT = "https://huggingface.co"

_RESOLVE = re.compile(r"^/(?P<repo>.+?)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")
_PINNED = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True, slots=True)
class Source:
    """One file to scan: its URL, and what the listing said of it."""

    url: str
    repo: str | None = None
    revision: str | None = None


def endpoint() -> str:
    """The hub's URL (`HF_ENDPOINT`, else huggingface.co), without a final `/`."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def repo_of(url: str) -> tuple[str | None, str | None]:
    """The repository and revision a hub `resolve` URL names (or `hf://` name)."""
    if url.startswith("hf://"):
        rest = url[len("hf://") :]
        head, _, rev = rest.partition("@")
        parts = head.split("/")
        return ("/".join(parts[:2]) if len(parts) >= 3 else None), (rev or None)
    m = _RESOLVE.match(urllib.parse.urlsplit(url).path)
    if not m:
        return None, None
    return urllib.parse.unquote(m.group("repo")), urllib.parse.unquote(m.group("rev"))


def pinned_revision(url: str) -> str | None:
    """The commit a URL is pinned to (`resolve/<40 hex>/`), if it is."""
    _, rev = repo_of(url)
    return rev if rev and _PINNED.match(rev) else None


def read_sources(spec: str) -> Iterator[Source]:
    """The sources `spec` names (see the module)."""
    if spec.startswith("hub:"):
        yield from list_hub(spec[len("hub:") :])
        return
    lower = spec.lower()
    if lower.endswith(".parquet"):
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        table = pq.read_table(spec)
        if "url" not in table.column_names:
            raise ValueError(f"{spec}: no `url` column")
        cols = {c: table.column(c).to_pylist() for c in ("url", "repo", "revision") if c in table.column_names}
        for i, url in enumerate(cols["url"]):
            if url:
                yield _source(str(url), cols.get("repo", [None] * (i + 1))[i], cols.get("revision", [None] * (i + 1))[i])
        return
    if lower.endswith(".csv"):
        with open(spec, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if "url" not in (reader.fieldnames or []):
                raise ValueError(f"{spec}: no `url` column")
            for row in reader:
                if row.get("url"):
                    yield _source(row["url"].strip(), row.get("repo") or None, row.get("revision") or None)
        return
    with open(spec, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                yield _source(line, None, None)


def _source(url: str, repo: str | None, revision: str | None) -> Source:
    r, rev = repo_of(url)
    return Source(url, repo or r, revision or (rev if rev and _PINNED.match(rev) else None))


class ListingError(ValueError):
    """A hub listing that stopped before its end (a page that failed after
    its retries, or was not a listing): the pages before it were listed."""


def _get_json(url: str, hub: str) -> tuple[object, str | None]:
    """GET a listing page: its JSON and the next page's URL."""
    headers = {"Accept": "application/json", "User-Agent": "gguf-validate-scan"}
    token = os.environ.get("HF_TOKEN", "").strip()
    if token and _origin(url) == _origin(hub):
        headers["Authorization"] = f"Bearer {token}"
    for attempt in range(LISTING_RETRIES + 1):
        req = urllib.request.Request(url, headers=headers)
        try:
            with _OPENER.open(req, timeout=LISTING_TIMEOUT) as resp:
                body = resp.read(MAX_LISTING_PAGE_BYTES + 1)
                if len(body) > MAX_LISTING_PAGE_BYTES:
                    raise ListingError(f"a listing page of {_origin(url)} is over {MAX_LISTING_PAGE_BYTES} bytes")
                return json.loads(body), _next_link(resp.headers.get("Link", ""), url)
        except urllib.error.HTTPError as e:
            if e.code not in (429, 500, 502, 503, 504) or attempt == LISTING_RETRIES:
                raise ListingError(f"the hub's listing at {_origin(url)} answered HTTP {e.code}") from None
            wait = _retry_after(e.headers.get("Retry-After"), attempt)
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            if attempt == LISTING_RETRIES:
                raise ListingError(f"the hub's listing at {_origin(url)}: {getattr(e, 'reason', e)}") from None
            wait = _retry_after(None, attempt)
        time.sleep(wait)
    raise AssertionError("unreachable")


def _retry_after(value: str | None, attempt: int) -> float:
    try:
        asked = float(value) if value is not None else None
    except ValueError:
        asked = None
    backoff = 0.25 * 2**attempt
    return float(min(max(asked or 0.0, backoff), MAX_RETRY_AFTER))


class _NoRedirectToOtherOrigins(urllib.request.HTTPRedirectHandler):
    """Follows a listing's redirects without the token (urllib drops no
    headers it was given: the token is only added for the hub's origin)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(newurl) != _origin(req.full_url):
            new.remove_header("Authorization")
        return new


_OPENER = urllib.request.build_opener(_NoRedirectToOtherOrigins())


def _origin(url: str) -> tuple[str, str]:
    u = urllib.parse.urlsplit(url)
    return u.scheme.lower(), (u.netloc.rpartition("@")[2]).lower()


def _next_link(link: str, base: str) -> str | None:
    for part in link.split(","):
        m = re.match(r'\s*<([^>]*)>\s*;.*rel="?next"?', part)
        if m:
            return str(urllib.parse.urljoin(base, m.group(1)))
    return None


def list_hub(query: str) -> Iterator[Source]:
    """The GGUF files of the models the hub lists for `query` (its search)."""
    hub = endpoint()
    params = {"search": query, "filter": "gguf", "full": "true", "limit": str(LISTING_PAGE_SIZE)}
    url: str | None = f"{hub}/api/models?{urllib.parse.urlencode(params)}"
    pages = 0
    while url is not None and pages < MAX_LISTING_PAGES:
        page, url = _get_json(url, hub)
        pages += 1
        if not isinstance(page, list):
            raise ListingError("the hub's listing is not a JSON list of models")
        for model in page:
            if not isinstance(model, dict) or not isinstance(model.get("id"), str):
                continue
            repo, sha = model["id"], model.get("sha")
            rev = sha if isinstance(sha, str) and _PINNED.match(sha) else "main"
            for sib in model.get("siblings") or ():
                name = sib.get("rfilename") if isinstance(sib, dict) else None
                if isinstance(name, str) and name.lower().endswith(".gguf"):
                    file_url = f"{hub}/{repo}/resolve/{rev}/{urllib.parse.quote(name)}"
                    yield Source(file_url, repo, rev if rev != "main" else None)
