"""Training examples of the two objectives, as trainer sources (`len()`, `get(i)`).

An example is (question row, [positive row, negative rows ...]) of inputs.py; every example of a
run has the same number of negatives, so micro-batches have equal shapes on every rank (the
global in-batch negatives are gathered across data parallelism).

ICT (Lee et al. 2019; Megatron's ict_dataset.py): sentence blocks of a sentence-split `.bin/.idx`
dataset (core/data/blocks.py, the blocks BERT samples are cut from; a block never crosses a
document). Example i picks one sentence of block i mod N as the query, seeded by i: epoch e, whose
examples are eN ... eN + N - 1, asks a fresh sentence of each block (several queries per block).
The context is the block (its document's title first, when a titles dataset is given) with that
sentence removed, except with probability `query_in_block_prob` (0.1) where it stays, so the
model also learns lexical match.

Supervised (DPR; Megatron's orqa/supervised/data.py): each question of nq-train.json with its
positive_ctxs[0] and `hard_negatives` negatives: its hard_negative_ctxs, then its negative_ctxs,
then BM25-mined ones (negatives.py) when the file has too few, then random passages of the pool.
"""

from __future__ import annotations

import numpy as np

from megazoo.core.train.data import EpochSource
from megazoo.tasks.retrieval.inputs import Row, RowEncoder, passage_row, question_row


class ICTExamples:
    def __init__(self, blocks, rows: RowEncoder, seed: int, query_in_block_prob: float = 0.1, titles=None,
                 document_indices=None):
        self.blocks, self.rows, self.seed, self.prob = blocks, rows, seed, query_in_block_prob
        self.titles, self.document_indices = titles, document_indices

    def __len__(self) -> int:
        return len(self.blocks)

    def _title(self, first_sentence: int) -> list[int]:
        if self.titles is None:
            return []
        doc = int(np.searchsorted(self.document_indices, first_sentence, side="right")) - 1
        return [int(t) for t in self.titles[doc]]

    def get(self, i: int) -> tuple[Row, list[Row]]:
        n = len(self.blocks)
        sentences, _ = self.blocks.sentences(i % n)
        rng = np.random.RandomState((self.seed * 1_000_003 + i) % (2 ** 32))
        pick = int(rng.randint(len(sentences)))
        query = [int(t) for t in sentences[pick]]
        keep = rng.random_sample() < self.prob
        context = [int(t) for j, s in enumerate(sentences) if keep or j != pick for t in s]
        tok = self.rows.tok
        first = int(self.blocks.mapping[i % n][0])
        return (question_row(query, tok.cls, tok.sep, self.rows.q_len),
                [passage_row(self._title(first), context, tok.cls, tok.sep, self.rows.p_len)])


def ict_blocks(prefix: str, split: str, weights, passage_length: int, seed: int, cache_dir, titles_prefix=None,
               block_length: int = 0):
    """(SentenceBlocks of one split of a sentence-split dataset, titles dataset or None); blocks of
    up to `block_length` tokens (0: passage_length - 3, the row's room after [CLS] and two [SEP])."""
    from megazoo.core.data import IndexedDataset
    from megazoo.core.data.blend import parse_split, split_ranges
    from megazoo.core.data.blocks import SentenceBlocks

    ds = IndexedDataset(prefix)
    names = ("train", "valid", "test")
    rng = split_ranges(ds.num_documents, parse_split(weights))[names.index(split)]
    if rng is None:
        return None
    titles = IndexedDataset(titles_prefix) if titles_prefix else None
    size = min(block_length, passage_length - 3) if block_length else passage_length - 3
    blocks = SentenceBlocks(ds, np.arange(*rng, dtype=np.int64), size, None, seed, split, "ict",
                            min_sentences=2, short_seq_prob=0.0, cache_dir=cache_dir)
    return blocks, titles, ds.document_indices


class SupervisedExamples:
    def __init__(self, questions, negatives: list[list[dict]], rows: RowEncoder, hard_negatives: int, pool: list[dict],
                 seed: int):
        """`negatives`: per question, the ordered candidates (file's, then mined)."""
        self.items = []
        rng = np.random.RandomState(seed)
        for q, cands in zip(questions, negatives):
            cands = list(cands)
            positive = q.positives[0]
            while len(cands) < hard_negatives and pool:  # the pool's random passages fill the rest
                p = pool[int(rng.randint(len(pool)))]
                if p["text"] != positive["text"]:
                    cands.append(p)
            ctxs = [positive, *cands[:hard_negatives]]
            self.items.append((q.question, ctxs))
        titles = [c["title"] for _, ctxs in self.items for c in ctxs]
        texts = [c["text"] for _, ctxs in self.items for c in ctxs]
        flat = rows.passages(titles, texts)
        qrows = rows.questions([q for q, _ in self.items])
        per = hard_negatives + 1
        self.examples = [(qrows[i], flat[i * per:(i + 1) * per]) for i in range(len(self.items))]

    def __len__(self) -> int:
        return len(self.examples)

    def get(self, i: int):
        return self.examples[i % len(self.examples)]


class Shuffled:
    """Examples in a fresh seeded order every epoch; global example i of epoch e = i // N is
    example e N + perm_e[i mod N] (sources that index modulo N see the epoch: ICT asks another
    sentence of the block)."""

    def __init__(self, examples, seed: int):
        self.examples, self.order = examples, EpochSource(list(range(len(examples))), seed)

    def __len__(self) -> int:
        return len(self.examples)

    def get(self, i: int):
        return self.examples.get(self.order.get(i) + len(self.examples) * (i // len(self.examples)))
