"""What the reader stages read: the evidence (every passage's context vector from the retriever's
context tower, embedded once per process, in a faiss Flat index), each question's top-k passages
(`Retrieved`: fixed, or refreshed end to end by the builder) and the trainer sources built on them.

A sample is one question: its k reader rows (span.py's `reader_row`, gold spans marked), its
query-tower row and, per passage, the context vector (end to end) or the fixed retrieval prior
log p(z | q). `collate` stacks n samples into one micro-batch of tensors (model.py's row
layout, loss.py's inputs).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from megazoo.tasks.retrieval.inputs import Row, pad_rows
from megazoo.tasks.retrieval.reader.model import QUESTION, READER

_VECTORS: dict = {}  # (retriever, passages, length, pooling) -> context vectors: runs in one process share them


class Evidence:
    """The passages, their context vectors and index, and the retriever's own encoder (its query
    tower gives the fixed retrieval's question vectors; its tokenizer the query rows)."""

    def __init__(self, retriever, passages, question_length: int, passage_length: int | None):
        from megazoo.tasks.retrieval.encoder import BiEncoder
        from megazoo.tasks.retrieval.index import build_index

        self.passages = passages
        self.enc = BiEncoder(retriever, None, question_length, passage_length or None, batch=32)
        if self.enc.similarity != "dot":  # p(z | q) below and loss.py are raw inner products
            from megazoo.core.train.config import ConfigError

            raise ConfigError(f"{retriever}: a {self.enc.similarity}-similarity retriever; the reader's p(z | q) is "
                              f"the softmax of inner products, so the reader stages take a dot retriever for now")
        key = (str(Path(retriever).resolve()), tuple(p.id for p in passages), self.enc.passage_length, self.enc.pooling)
        if key not in _VECTORS:
            _VECTORS.clear()
            _VECTORS[key] = self.enc.passages([p.title for p in passages], [p.text for p in passages], progress=True)
        self.vectors = _VECTORS[key]
        self.table = torch.from_numpy(self.vectors)
        self.index = build_index(self.vectors, "flat", device="auto")  # on the GPUs of a GPU faiss

    def search(self, q: np.ndarray, k: int) -> np.ndarray:
        from megazoo.tasks.retrieval.index import search

        return search(self.index, np.ascontiguousarray(q, dtype=np.float32), min(k, len(self.passages)))[1]

    def prior(self, q: torch.Tensor, found) -> torch.Tensor:
        """[n, k] log p(z | q): the softmax over each question's k passages of the inner products."""
        idx = torch.as_tensor(np.asarray(found), dtype=torch.long)
        return torch.log_softmax(torch.einsum("nh,nkh->nk", q.float(), self.table[idx]), -1)


class ReaderRows:
    """Reader rows of (question, passage) pairs, with the passages tokenised once."""

    def __init__(self, tok, passages, reader_length: int, question_length: int):
        self.tok, self.passages = tok, passages
        self.length, self.question_length = reader_length, question_length
        self.titles = tok.encode_batch([p.title for p in passages])
        self.texts = tok.encode_batch([p.text for p in passages])

    def rows(self, question: str, answers: list[str], found) -> list:
        from megazoo.tasks.retrieval.reader.span import reader_row

        q = self.tok.encode(question)
        a = [self.tok.encode(x) for x in answers]
        return [reader_row(q, self.titles[int(j)], self.texts[int(j)], a, self.tok.cls, self.tok.sep, self.length,
                           self.question_length) for j in found]


class Retrieved:
    """Each question's top-k passage rows of the collection, and (fixed retrieval) its prior."""

    def __init__(self, questions, query_rows: list[Row]):
        self.questions, self.query_rows = questions, query_rows
        self.found: np.ndarray | None = None  # [n, k] passage rows
        self.vectors: torch.Tensor | None = None  # fixed retrieval: the retriever's question vectors
        self.prior: torch.Tensor | None = None  # fixed retrieval: [n, k] log p(z | q)

    def __len__(self) -> int:
        return len(self.questions)


class ReaderExamples:
    """Trainer source over a Retrieved set: sample i is question order[i mod n] (shuffled per epoch
    with `seed`, or in file order), read from the set's current top-k."""

    def __init__(self, retrieved: Retrieved, rows: ReaderRows, evidence: Evidence, end_to_end: bool,
                 seed: int | None):
        from megazoo.core.train.data import EpochSource

        self.retrieved, self.rows, self.evidence, self.end_to_end = retrieved, rows, evidence, end_to_end
        self.order = EpochSource(list(range(len(retrieved))), seed or 0, shuffle=seed is not None)

    def __len__(self) -> int:
        return len(self.retrieved)

    def get(self, i: int) -> dict:
        j = self.order.get(i)
        r = self.retrieved
        x, found = r.questions[j], r.found[j]
        out = {"rows": self.rows.rows(x.question, x.answers, found), "question": r.query_rows[j]}
        if self.end_to_end:
            out["ctx"] = self.evidence.table[torch.as_tensor(np.asarray(found), dtype=torch.long)]
        else:
            out["prior"] = r.prior[j]
        return out


def collate(samples: list[dict], pad_id: int, end_to_end: bool) -> dict:
    """n samples -> input_ids / token_type_ids / attention_mask [n k (+ n), L] (reader rows, then the
    query rows end to end), labels [rows] (READER / QUESTION), spans [n k, S, 2] (-1 padded), text
    [n k, 2], answerable [n], and ctx [n, k, h] or prior [n, k]."""
    reader_rows = [r for s in samples for r in s["rows"]]
    rows = [r.row for r in reader_rows] + ([s["question"] for s in samples] if end_to_end else [])
    mb = pad_rows(rows, pad_id, multiple=8)
    mb["labels"] = torch.tensor([READER] * len(reader_rows) + [QUESTION] * (len(rows) - len(reader_rows)))
    most = max(1, max(len(r.spans) for r in reader_rows))
    spans = torch.full((len(reader_rows), most, 2), -1, dtype=torch.long)
    for i, r in enumerate(reader_rows):
        if r.spans:
            spans[i, :len(r.spans)] = torch.tensor(r.spans)
    mb["spans"] = spans
    mb["text"] = torch.tensor([[r.text_start, r.text_end] for r in reader_rows], dtype=torch.long)
    mb["answerable"] = torch.tensor([any(r.spans for r in s["rows"]) for s in samples], dtype=torch.long)
    key = "ctx" if end_to_end else "prior"
    mb[key] = torch.stack([s[key] for s in samples])
    return mb
