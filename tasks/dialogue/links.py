"""Documents linked from a conversation (Santhanam et al. 2020): the URLs in its turns, each resolved
to a document's text from a local copy, never fetched.

    find_urls("see https://en.wikipedia.org/wiki/Owl_(bird).")   # ["https://en.wikipedia.org/wiki/Owl_(bird)"]
    docs = LinkedDocuments("runs/dialogue/data/reddit/links")   # a folder with urls.jsonl, or the .jsonl itself
    docs.sentences(["https://..."])                                # the sentences of the documents found

The index is JSON lines, one URL a line: {"url": U, "file": F} with F a text file relative to the
index's folder (one document, split into sentences as knowledge.py splits the document set), or
{"url": U, "text": T} with the text inline. URLs match after normalisation (scheme and host lower
case, the #fragment and a final "/" dropped); a URL the index does not hold is left out (counted).
"""

from __future__ import annotations

import re
from pathlib import Path

from megazoo.eval.readers.common import LineError, MissingFile

_URL = re.compile(r"https?://[^\s<>\"'\[\]{}|\\^`]+")
_TRAILING = ".,;:!?*_~'\""
INDEX = "urls.jsonl"
WHAT = 'one linked document {"url", "file"} or {"url", "text"} per line'


def find_urls(text: str) -> list[str]:
    """The http(s) URLs of a text in order, each once; a closing bracket or punctuation after a URL
    (markdown `[x](URL)`, end of a sentence) is not part of it, a balanced one inside is."""
    out = []
    for m in _URL.finditer(text):
        url = m.group(0)
        while True:
            stripped = url.rstrip(_TRAILING)
            if stripped.endswith(")") and stripped.count("(") < stripped.count(")"):
                stripped = stripped[:-1]
            if stripped == url:
                break
            url = stripped
        if len(url) > len("https://") and url not in out:
            out.append(url)
    return out


def normalise(url: str) -> str:
    url = url.split("#", 1)[0]
    scheme, _, rest = url.partition("://")
    host, slash, tail = rest.partition("/")
    out = f"{scheme.lower()}://{host.lower()}{slash}{tail}"
    return out[:-1] if out.endswith("/") and tail else out.rstrip("/")


class LinkedDocuments:
    """URL -> document text from a local index (see the module docstring)."""

    def __init__(self, path):
        from megazoo.eval.readers.common import read_jsonl

        path = Path(path)
        index = path / INDEX if path.is_dir() else path
        if not index.is_file():
            raise MissingFile(f"{path}: no such file or folder (expected a folder with {INDEX} or the index itself: "
                              f"{WHAT})")
        self.index = index
        self._where: dict[str, tuple] = {}  # url -> ("file", Path) | ("text", str)
        self._cache: dict[str, list[str]] = {}
        self.missing: set[str] = set()
        for line, obj in read_jsonl(index, WHAT, LineError):
            url = obj.get("url")
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise LineError(index, line, f'"url" must be an http(s) URL, got {url!r}')
            if isinstance(obj.get("text"), str):
                self._where[normalise(url)] = ("text", obj["text"])
            elif isinstance(obj.get("file"), str):
                file = index.parent / obj["file"]
                if not file.is_file():
                    raise LineError(index, line, f'"file" {obj["file"]!r}: no such file in {index.parent}')
                self._where[normalise(url)] = ("file", file)
            else:
                raise LineError(index, line, f'give "file" (a text file beside the index) or "text" for {url}')

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, url: str) -> bool:
        return normalise(url) in self._where

    def document(self, url: str) -> list[str]:
        """The sentences of the document at `url` ([] when the index does not hold it)."""
        from megazoo.tasks.dialogue.data import decode
        from megazoo.tasks.dialogue.knowledge import split_sentences

        key = normalise(url)
        if key not in self._where:
            self.missing.add(url)
            return []
        if key not in self._cache:
            kind, value = self._where[key]
            text = value if kind == "text" else decode(value.read_bytes(), value)
            self._cache[key] = split_sentences(text)
        return self._cache[key]

    def sentences(self, urls: list[str]) -> list[str]:
        """The sentences of every document found, in URL order (a sentence once)."""
        out: dict[str, None] = {}
        for url in urls:
            out.update(dict.fromkeys(self.document(url)))
        return list(out)
