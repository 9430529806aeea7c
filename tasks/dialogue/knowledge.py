"""Local knowledge (Santhanam et al. 2020): a document set the user gives, and for each conversation
the sentences most relevant to it, retrieved with BM25 (the `bm25s` library, English stop words
removed) with the conversation's last turns as the query.

    docs = DocumentSet("runs/dialogue/documents")      # every *.txt / *.md file, one sentence a line
    docs.retrieve(["What kind of thing is a penguin?"], n=2)   # [[sentence, sentence]]

A file is split into sentences at line ends and after . ! ? followed by a space.
"""

from __future__ import annotations

import re
from pathlib import Path

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    return [s.strip() for line in text.splitlines() for s in _SENTENCE_END.split(line) if s.strip()]


class DocumentSet:
    def __init__(self, folder):
        import bm25s

        from megazoo.eval.readers.common import MissingFile

        folder = Path(folder)
        if not folder.is_dir():
            raise MissingFile(f"{folder}: no such folder (expected a document set: a folder of .txt files)")
        files = sorted(p for p in folder.rglob("*") if p.suffix in (".txt", ".md") and p.is_file())
        self.sentences: list[str] = []
        self.sources: list[str] = []
        from megazoo.tasks.dialogue.data import decode

        for f in files:
            for s in split_sentences(decode(f.read_bytes(), f)):  # an undecodable file is named, with its line
                self.sentences.append(s)
                self.sources.append(f.name)
        if not self.sentences:
            raise ValueError(f"{folder}: the document set has no sentence (expected .txt or .md files with text)")
        self.bm25s = bm25s
        self.index = bm25s.BM25()
        self.index.index(bm25s.tokenize(self.sentences, stopwords="en", show_progress=False), show_progress=False)

    def retrieve(self, queries: list[str], n: int) -> list[list[str]]:
        """The n best sentences per query, best first (fewer when the set is smaller)."""
        n = min(n, len(self.sentences))
        tokens = self.bm25s.tokenize(list(queries), stopwords="en", return_ids=False, show_progress=False)
        rows, scores = self.index.retrieve(tokens, k=n, show_progress=False, n_threads=1)
        return [[self.sentences[int(i)] for i, s in zip(r, sc) if s > 0] for r, sc in zip(rows, scores)]


def best_sentences(sentences: list[str], query: str, n: int) -> list[str]:
    """The n sentences of a small set (a conversation's linked documents) BM25 ranks best for the
    query, best first; when no sentence shares a word with it, the first n (a document's lead)."""
    import bm25s

    if len(sentences) <= n:
        return list(sentences)
    index = bm25s.BM25()
    index.index(bm25s.tokenize(sentences, stopwords="en", show_progress=False), show_progress=False)
    tokens = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)
    if not tokens[0]:
        return sentences[:n]
    rows, scores = index.retrieve(tokens, k=n, show_progress=False, n_threads=1)
    found = [sentences[int(i)] for i, s in zip(rows[0], scores[0]) if s > 0]
    return found or sentences[:n]
