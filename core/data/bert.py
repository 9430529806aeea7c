"""BERT samples: sentence pairs with masked-LM targets and a sentence-order label.

Each sample is a block of consecutive sentences (blocks.py) cut at a random sentence into A and
B; with probability 1/2 the two are swapped and `is_random` is 1 (the sentence-order prediction
task Megatron's BERT trains; with binary_head=False there is one segment and no label). The pair
is truncated to seq_length - 3 tokens and laid out as [CLS] A [SEP] B [SEP]. Every sample draws
from RandomState(seed + index), so it does not depend on which samples were read before it
(resuming mid-epoch gives the same samples).

Masking (`masking`):
  whole_word  Megatron's default (pretrain_bert.py: masking_do_full_word, max n-gram 3): the
              non-special tokens are grouped into words (a WordPiece token starting with "##"
              continues the previous word); from each word, taken in a random order, an n-gram
              of n = 1..3 whole words is tried, n drawn with probability proportional to 1/n and
              shortened while it would pass the budget of min(15% of the target length, 15% of the
              sequence rounded) tokens; n-grams overlapping an already masked one are skipped.
              Each masked token becomes [MASK] (80%), a random id from the whole vocabulary (10%)
              or stays (10%), drawn as Megatron draws them, so the same RandomState gives the same
              masks as megatron-core's _create_masked_lm_predictions.
  token       megazoo's token-level masking: 15% of the non-special tokens (rounded, at least one),
              chosen uniformly, 80/10/10 with random tokens that are not special tokens.

Item (int64 arrays of length seq_length unless noted):
  text          token ids after masking     types        segment ids (0 for A, 1 for B)
  labels        original id where predicted, -1 elsewhere
  loss_mask     1 where predicted           padding_mask 1 on real tokens, 0 on padding
  is_random     0-d: 1 when A and B were swapped
"""

from __future__ import annotations

import bisect
import os

import numpy as np

from megazoo.core.data.blocks import SentenceBlocks
from megazoo.core.data.errors import DataError
from megazoo.core.data.indexed import IndexedDataset


def special_id_set(tokenizer) -> set[int]:
    ids = {getattr(tokenizer, n) for n in ("eod", "pad", "cls", "sep", "mask", "bos", "eos", "unk")}
    return {int(i) for i in ids if i is not None} | {int(i) for i in tokenizer.sentinels}


def random_token(rng: np.random.RandomState, vocab_size: int, specials: set[int]) -> int:
    while True:
        t = int(rng.randint(0, vocab_size))
        if t not in specials:
            return t


def mask_tokens(tokens: np.ndarray, candidates: np.ndarray, rng: np.random.RandomState, tokenizer,
                specials: set[int], prob: float = 0.15) -> tuple[np.ndarray, np.ndarray]:
    """Masked-LM corruption in place on a copy: returns (corrupted tokens, labels with -1)."""
    out = tokens.copy()
    labels = np.full_like(tokens, -1)
    if len(candidates) == 0:
        return out, labels
    count = min(len(candidates), max(1, int(round(len(candidates) * prob))))
    chosen = np.sort(rng.choice(candidates, size=count, replace=False))
    labels[chosen] = tokens[chosen]
    for pos in chosen:
        u = rng.random_sample()
        if u < 0.8:
            out[pos] = tokenizer.mask
        elif u >= 0.9:
            out[pos] = random_token(rng, tokenizer.vocab_size, specials)
        # else: keep the original token (still predicted)
    return out, labels


MASKING_STYLES = ("whole_word", "token")


def word_starts(tokenizer) -> np.ndarray:
    """Per vocabulary id, True where the token starts a word: WordPiece marks a continuation with a
    leading "##" (Megatron's rule). A tokenizer whose vocabulary cannot be listed counts every token
    as a word, so whole-word masking becomes token-level n-gram masking."""
    starts = np.ones(tokenizer.vocab_size, dtype=bool)
    backend = getattr(tokenizer, "backend", None)
    if backend is not None and hasattr(backend, "get_vocab"):
        for token, i in backend.get_vocab(with_added_tokens=True).items():
            if token.startswith("##") and i < len(starts):
                starts[i] = False
    return starts


def group_words(tokens: np.ndarray, candidates: np.ndarray, starts: np.ndarray) -> list[list[int]]:
    """The candidate positions grouped into whole words, in order (a "##" token joins the word
    before it; one at the very start, after truncation, opens a word of its own)."""
    words: list[list[int]] = []
    for pos, start in zip(candidates.tolist(), starts[tokens[candidates]].tolist()):
        if start or not words:
            words.append([pos])
        else:
            words[-1].append(pos)
    return words


def ngram_spans(words: list[list[int]], budget: float, rng: np.random.RandomState, max_ngram: int = 3,
                geometric_p: float | None = None, on_masked=None) -> list[tuple[int, list[int]]]:
    """Megatron's n-gram selection (megatron-core masked_dataset, without permutation). Words are
    visited in a shuffled order; from each, n words are taken: n ~ 1/n over 1..max_ngram, or with
    geometric_p, min(Geometric(p), max_ngram) (SpanBERT; Megatron's T5). While the n-gram would
    pass `budget` masked tokens, n shrinks; n-grams overlapping an earlier one are skipped.
    on_masked(position, rng) runs once per masked token in order (Megatron draws 80/10/10 there).
    Returns (drawn n, positions) of each chosen n-gram, sorted by first position."""
    nvals = np.arange(1, max_ngram + 1, dtype=np.int64)
    probs = 1.0 / nvals
    probs /= probs.sum()
    # RandomState.choice(nvals, p=probs) is one uniform draw against this cdf (computed as numpy
    # computes it); bisecting it ourselves gives the same n without choice's per-call checks
    probs = probs / probs.sum()
    cdf = probs.cumsum()
    cdf = (cdf / cdf[-1]).tolist()
    order = list(range(len(words)))
    rng.shuffle(order)  # the same draws as Megatron's shuffle of its candidate list
    masked: set[int] = set()
    count, spans = 0, []
    for start in order:
        if count >= budget:
            break
        if geometric_p:
            drawn = min(int(rng.geometric(geometric_p)), max_ngram)
        else:
            drawn = bisect.bisect_right(cdf, rng.random_sample()) + 1
        n = drawn
        while True:  # shorten until the n-gram fits the budget; a word too long even alone is skipped
            positions = [p for w in words[start:start + n] for p in w]
            n -= 1
            if budget >= count + len(positions):
                break
            if n == 0:
                positions = []
                break
        if not positions or any(p in masked for p in positions):
            continue
        for p in positions:
            masked.add(p)
            if on_masked is not None:
                on_masked(p, rng)
        count += len(positions)
        spans.append((drawn, positions))
    spans.sort(key=lambda span: span[1][0])
    return spans


def mask_whole_words(tokens: np.ndarray, candidates: np.ndarray, rng: np.random.RandomState, tokenizer,
                     starts: np.ndarray, target_length: int, prob: float = 0.15, max_ngram: int = 3
                     ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, list[int]]]]:
    """Megatron's whole-word n-gram masking: (corrupted tokens, labels with -1, the n-gram spans).
    The budget counts the whole sequence (specials included), capped by prob * target_length."""
    out = tokens.copy()
    labels = np.full_like(tokens, -1)
    budget = min(prob * target_length, max(1, int(round(len(tokens) * prob))))

    def replace(pos: int, r: np.random.RandomState) -> None:
        labels[pos] = tokens[pos]
        if r.random_sample() < 0.8:
            out[pos] = tokenizer.mask
        elif r.random_sample() >= 0.5:  # half of the other 20%: any id of the vocabulary
            out[pos] = r.randint(0, tokenizer.vocab_size)
        # else: keep the original token (still predicted)

    spans = ngram_spans(group_words(tokens, candidates, starts), budget, rng, max_ngram, on_masked=replace)
    return out, labels, spans


def truncate_pair(a: list[int], b: list[int], max_tokens: int, rng: np.random.RandomState) -> bool:
    """Trim the longer side, from its front or back at random, until the pair fits."""
    truncated = False
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random_sample() < 0.5:
            del longer[0]
        else:
            longer.pop()
        truncated = True
    return truncated


def check_bert_options(tokenizer, seq_length: int, masking: str = "whole_word", max_ngram: int = 3) -> None:
    """Fail before any data work when the tokenizer, length or masking cannot make BERT samples."""
    if masking not in MASKING_STYLES:
        raise DataError(f"BERT masking {masking!r} is not one of {', '.join(MASKING_STYLES)}")
    if max_ngram < 1:
        raise DataError(f"BERT max_ngram must be at least 1, got {max_ngram}")
    missing = [n for n in ("cls", "sep", "mask", "pad") if getattr(tokenizer, n) is None]
    if missing:
        raise DataError(f"tokenizer {tokenizer.name} has no {', '.join(missing)} token; BERT samples "
                        f"need [CLS] [SEP] [MASK] [PAD] (use bert-wordpiece, or a vocabulary that has them)")
    if seq_length < 5:
        raise DataError(f"BERT seq_length {seq_length} is too short; it needs room for [CLS] A [SEP] B [SEP]")


class BertDataset:
    """Masked-LM (+ sentence-order) samples over the documents `documents` of a sentence-split dataset."""

    def __init__(self, indexed: IndexedDataset, documents: np.ndarray, num_samples: int | None,
                 seq_length: int, seed: int, tokenizer, split: str = "train", masking_prob: float = 0.15,
                 short_seq_prob: float = 0.1, binary_head: bool = True,
                 cache_dir: str | os.PathLike | None = None, masking: str = "whole_word", max_ngram: int = 3):
        check_bert_options(tokenizer, seq_length, masking, max_ngram)
        self.tokenizer, self.seq_length, self.seed = tokenizer, seq_length, seed
        self.masking_prob, self.binary_head = masking_prob, binary_head
        self.masking, self.max_ngram = masking, max_ngram
        self.specials = special_id_set(tokenizer)
        self.starts = word_starts(tokenizer) if masking == "whole_word" else None
        reserved = 3 if binary_head else 2
        self.max_tokens = seq_length - reserved
        self.blocks = SentenceBlocks(indexed, documents, self.max_tokens, num_samples, seed, split,
                                     "BertDataset", 2 if binary_head else 1, short_seq_prob, cache_dir)

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, idx: int) -> dict[str, np.ndarray]:
        rng = np.random.RandomState((self.seed + int(idx)) % 2**32)
        sentences, goal = self.blocks.sentences(int(idx))
        tok = self.tokenizer
        if self.binary_head:
            cut = int(rng.randint(1, len(sentences)))
            a = np.concatenate(sentences[:cut]).tolist()
            b = np.concatenate(sentences[cut:]).tolist()
            is_random = rng.random_sample() < 0.5
            if is_random:
                a, b = b, a
        else:
            a, b, is_random = np.concatenate(sentences).tolist(), [], False
        truncated = truncate_pair(a, b, min(goal, self.max_tokens), rng)
        tokens = [tok.cls, *a, tok.sep] + ([*b, tok.sep] if self.binary_head else [])
        types = [0] * (len(a) + 2) + [1] * (len(tokens) - len(a) - 2)
        arr = np.asarray(tokens, dtype=np.int64)
        candidates = np.flatnonzero(~np.isin(arr, [tok.cls, tok.sep]))
        if self.masking == "whole_word":
            text, labels, _ = mask_whole_words(arr, candidates, rng, tok, self.starts, min(goal, self.max_tokens),
                                               self.masking_prob, self.max_ngram)
        else:
            text, labels = mask_tokens(arr, candidates, rng, tok, self.specials, self.masking_prob)
        n, pad = len(arr), self.seq_length - len(arr)
        return {
            "text": np.concatenate([text, np.full(pad, tok.pad, dtype=np.int64)]),
            "types": np.asarray(types + [0] * pad, dtype=np.int64),
            "labels": np.concatenate([labels, np.full(pad, -1, dtype=np.int64)]),
            "loss_mask": np.concatenate([(labels >= 0).astype(np.int64), np.zeros(pad, dtype=np.int64)]),
            "padding_mask": np.concatenate([np.ones(n, dtype=np.int64), np.zeros(pad, dtype=np.int64)]),
            "is_random": np.array(int(is_random), dtype=np.int64),
            "truncated": np.array(int(truncated), dtype=np.int64),
        }
