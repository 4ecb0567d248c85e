#!/usr/bin/env python3
"""Fail on any broken relative link or #anchor in the built book.

Usage: python3 parser/docs/check_links.py parser/docs/book

Reads every HTML page `mdbook build parser/docs` wrote and checks each
`href` and `src` that stays inside the book: the file it names exists, and
its `#fragment` is an `id` (or `name`) in that file. Absolute URLs
(`https://...`, `mailto:`) are not fetched: CI reaches only the package
registries. Links starting with `/` are taken as under the book's
`site-url` (book.toml), which is how mdBook's 404 page links. Python 3
standard library only.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# Attributes that name another resource.
LINK_ATTRS = {"href", "src"}


class Page(HTMLParser):
    """The ids a page defines and the links it makes (with their line)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[int, str]] = []
        self.base: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            elif name in LINK_ATTRS:
                if tag == "base":
                    self.base = value
                else:
                    self.links.append((self.getpos()[0], value))

    handle_startendtag = handle_starttag


def site_prefix(book: Path) -> str:
    """`site-url` from the book.toml beside the book's folder, as `/x/`."""
    toml = book.parent / "book.toml"
    try:
        import tomllib  # Python 3.11+

        with open(toml, "rb") as f:
            url = tomllib.load(f).get("output", {}).get("html", {}).get("site-url", "/")
    except (ImportError, OSError):
        url = "/"
    return "/" + url.strip("/") + "/" if url.strip("/") else "/"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    book = Path(argv[1]).resolve()
    if not (book / "index.html").is_file():
        print(f"{book}: no index.html (run `mdbook build` first)", file=sys.stderr)
        return 2
    prefix = site_prefix(book)

    broken: list[str] = []
    pages: dict[Path, Page] = {}
    for html in sorted(book.rglob("*.html")):
        text = html.read_text(encoding="utf-8")
        if "{{#include" in text:
            # mdBook logs a failed include and goes on: the generated rules
            # chapter would be missing from the book.
            broken.append(f"{html.relative_to(book)}: an {{{{#include}}}} that mdBook did not resolve")
        page = Page()
        page.feed(text)
        page.close()
        pages[html] = page

    def ids_of(path: Path) -> set[str]:
        if path not in pages:
            page = Page()
            page.feed(path.read_text(encoding="utf-8", errors="replace"))
            pages[path] = page
        return pages[path].ids

    checked = 0
    for html, page in list(pages.items()):
        here = html.relative_to(book)
        for line, link in page.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue  # absolute: not part of the book
            checked += 1
            path = unquote(parts.path)
            if path.startswith("/"):
                if not path.startswith(prefix):
                    broken.append(f"{here}:{line}: {link}: outside the site-url {prefix}")
                    continue
                target = book / path[len(prefix) :]
            elif path:
                base = page.base
                if base and base.startswith(prefix):
                    target = book / base[len(prefix) :] / path
                else:
                    target = html.parent / path
            else:
                target = html
            target = Path(*target.parts)  # normalise
            try:
                target = target.resolve()
                target.relative_to(book)
            except ValueError:
                broken.append(f"{here}:{line}: {link}: leaves the book")
                continue
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{here}:{line}: {link}: no such file {target.relative_to(book)}")
                continue
            fragment = unquote(parts.fragment)
            if fragment and target.suffix == ".html" and fragment not in ids_of(target):
                broken.append(f"{here}:{line}: {link}: no anchor #{fragment} in {target.relative_to(book)}")

    for b in broken:
        print(b, file=sys.stderr)
    print(
        f"check_links: {len(pages)} pages, {checked} relative links and anchors checked, "
        f"{len(broken)} broken"
    )
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
