"""What the reader stages read: the evidence (every passage's context vector from the retriever's
context tower, embedded once per run, each rank its share, in a faiss Flat index), each question's
top-k passages (`Retrieved`: fixed, or refreshed end to end by the builder) and the trainer sources
built on them.

A sample is one question: its k reader rows (span.py's `reader_row`, gold spans marked), its
query-tower row and, per passage, the context vector (end to end) or the fixed retrieval prior
log p(z | q). `collate` stacks n samples into one micro-batch of tensors (model.py's row
layout, loss.py's inputs).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from megazoo.core.train.config import ConfigError
from megazoo.tasks.retrieval.inputs import Row, pad_rows
from megazoo.tasks.retrieval.reader.model import QUESTION, READER


class Evidence:
    """The passages (a store.py store), their context vectors and index, and the retriever's own
    encoder (its query tower gives the fixed retrieval's question vectors; its tokenizer the query
    rows). The vectors are the retriever's context tower's: read from `vectors`, a folder `megazoo
    task retrieval embed` wrote from this store with this retriever (any size: read by row), else
    embedded by `embed(ctx)` (small collections), each rank its share; `index`, an index folder built
    from them (`megazoo task retrieval index --vectors`), else a Flat index made by `embed`."""

    def __init__(self, retriever, passages, question_length: int, passage_length: int | None, vectors: str = "",
                 index: str = ""):
        from megazoo.tasks.retrieval.encoder import BiEncoder

        self.passages = passages
        self.enc = BiEncoder(retriever, None, question_length, passage_length or None, batch=32)
        if self.enc.similarity != "dot":  # p(z | q) below and loss.py are raw inner products
            raise ConfigError(f"{retriever}: a {self.enc.similarity}-similarity retriever; the reader's p(z | q) is "
                              f"the softmax of inner products, so the reader stages take a dot retriever for now")
        self.vectors = _stored(vectors, passages, self.enc, retriever) if vectors else None
        self.table: torch.Tensor | None = None  # the vectors embedded here (no vectors folder), by embed()
        self.index = self._index(index) if index else None

    def embed(self, ctx=None) -> None:
        """Make the evidence ready to search (once; later calls return at once). Without a vectors
        folder, rank r of the run's `ctx.world_size` ranks embeds the r-th contiguous range of
        passages and an all_gather over the world assembles the table on every rank (every rank
        calls this: a collective); `ctx` None or one rank: every passage here. Then the Flat index,
        unless an index folder was given."""
        if self.vectors is None and self.table is None:
            self.table = torch.from_numpy(embed_across_ranks(self.enc, self.passages, ctx))
        if self.index is None:
            self.index = self._index("")

    def _index(self, folder: str):
        from megazoo.tasks.retrieval.index import build_index, load_index

        if folder:
            try:
                return load_index(folder, expect_dim=self.enc.hidden_size, expect_count=len(self.passages),
                                  device="auto", expect_similarity=self.enc.similarity, store=self.passages)[0]
            except ValueError as e:
                raise ConfigError(f"task.index: {e}") from None
        table = self.table.numpy() if self.vectors is None else self.vectors.all()
        return build_index(table, "flat", device="auto")  # on the GPUs of a GPU faiss

    def take(self, found) -> torch.Tensor:
        """The context vectors of passage rows `found` (any shape), float32 [..., h]."""
        idx = np.asarray(found, dtype=np.int64)
        if self.vectors is None:
            self._check_ready()
            return self.table[torch.from_numpy(idx)]
        return torch.from_numpy(self.vectors.take(idx.ravel())).view(*idx.shape, -1)

    def search(self, q: np.ndarray, k: int) -> np.ndarray:
        from megazoo.tasks.retrieval.index import search

        self._check_ready()
        return search(self.index, np.ascontiguousarray(q, dtype=np.float32), min(k, len(self.passages)))[1]

    def _check_ready(self) -> None:
        if self.index is None or (self.vectors is None and self.table is None):
            raise RuntimeError("Evidence.embed(ctx) first: the evidence is embedded on every rank together")

    def prior(self, q: torch.Tensor, found) -> torch.Tensor:
        """[n, k] log p(z | q): the softmax over each question's k passages of the inner products."""
        return torch.log_softmax(torch.einsum("nh,nkh->nk", q.float(), self.take(found)), -1)


def embed_across_ranks(enc, passages, ctx=None) -> np.ndarray:
    """float32 [len(passages), h]: every passage's context vector. Rank r of `ctx.world_size` embeds
    only rows index.row_ranges(n, world)[r] (a progress bar on rank 0), then one all_gather over the
    world (tensors on ctx.device, padded to the longest range) gives every rank the whole table in
    row order. `ctx` None or a single rank: every row in this process."""
    from megazoo.tasks.retrieval.index import row_ranges

    n = len(passages)
    rank, world = (ctx.rank, ctx.world_size) if ctx is not None else (0, 1)
    a, b = row_ranges(n, world)[rank]
    mine = passages.rows(a, b) if hasattr(passages, "rows") else list(passages[a:b])
    part = enc.passages([p.title for p in mine], [p.text for p in mine], progress=rank == 0)
    if world == 1:
        return part
    import torch.distributed as dist

    ranges = row_ranges(n, world)
    x = torch.zeros((max(hi - lo for lo, hi in ranges), enc.hidden_size), dtype=torch.float32, device=ctx.device)
    x[:len(part)] = torch.from_numpy(part).to(ctx.device)
    got = [torch.empty_like(x) for _ in range(world)]
    dist.all_gather(got, x)
    return torch.cat([g[:hi - lo] for g, (lo, hi) in zip(got, ranges)]).cpu().numpy()


def _stored(folder: str, passages, enc, retriever):
    """The vectors folder, checked against the store and the retriever (ConfigError, one line)."""
    from megazoo.tasks.retrieval.vectors import open_vectors

    try:
        vec = open_vectors(folder)
    except ValueError as e:
        raise ConfigError(f"task.vectors: {e}") from None
    m = vec.manifest
    if vec.store_fingerprint != passages.fingerprint:
        raise ConfigError(f"task.vectors={folder!r}: embedded from another passage store than task.passages "
                          f"({passages.source}); embed this store, or name the store they came from")
    if Path(m.get("checkpoint", "")).resolve() != Path(retriever).resolve() or vec.dim != enc.hidden_size or \
            m.get("pooling") != enc.pooling:
        raise ConfigError(f"task.vectors={folder!r}: embedded with {m.get('checkpoint')!r} ({m.get('pooling')} "
                          f"pooling), not task.retriever={retriever!r}; embed the store with the retriever")
    return vec


class ReaderRows:
    """Reader rows of (question, passage) pairs; a passage is tokenised when first read, then kept."""

    def __init__(self, tok, passages, reader_length: int, question_length: int):
        self.tok, self.passages = tok, passages
        self.length, self.question_length = reader_length, question_length
        self._tokens: dict[int, tuple[list[int], list[int]]] = {}

    def tokens(self, j: int) -> tuple[list[int], list[int]]:
        """(title, text) token ids of passage row j."""
        if j not in self._tokens:
            p = self.passages[j]
            self._tokens[j] = (self.tok.encode(p.title), self.tok.encode(p.text))
        return self._tokens[j]

    def rows(self, question: str, answers: list[str], found) -> list:
        from megazoo.tasks.retrieval.reader.span import reader_row

        q = self.tok.encode(question)
        a = [self.tok.encode(x) for x in answers]
        return [reader_row(q, *self.tokens(int(j)), a, self.tok.cls, self.tok.sep, self.length,
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
            out["ctx"] = self.evidence.take(found)
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
