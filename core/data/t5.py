"""T5 samples: span corruption with sentinel tokens.

From a block of sentences (blocks.py) of at most encoder_seq_length - 1 tokens, noise spans are
chosen by one of two rules (`masking`):
  t5        the T5 paper's `random_spans_noise_mask` (the default): 15% of the tokens (rounded, at
            least one) in spans of mean length 3; the noise and non-noise token counts are each
            split at random into the same number of positive-length runs, interleaved non-noise
            first.
  megatron  Megatron-LM's T5 masking (pretrain_t5.py: masking_do_full_word, geometric
            distribution, max n-gram 10): spans of whole words (WordPiece "##" tokens continue a
            word), each of min(Geometric(0.2), 10) words, shortened at the budget of 15% of the
            tokens and never overlapping (bert.ngram_spans, the same draws as megatron-core);
            spans may touch, and a sequence too short for one 15% token has none.
Each noise span is replaced in the encoder input by the next sentinel <extra_id_k>; the decoder
target lists each sentinel followed by the span it hides, then EOS. Per-sample
RandomState(seed + index).

Item (int64 arrays):
  text_enc   [encoder_seq_length]  corrupted input + EOS, padded     enc_mask [enc]  1 on real tokens
  text_dec   [decoder_seq_length]  BOS + labels[:-1] (teacher forcing), padded
  labels     [decoder_seq_length]  sentinel, span, sentinel, span, ..., EOS, padded with -1
  loss_mask  [decoder_seq_length]  1 on real targets                 dec_mask [dec]  1 on real inputs
"""

from __future__ import annotations

import os

import numpy as np

from megazoo.core.data.blocks import SentenceBlocks
from megazoo.core.data.errors import DataError
from megazoo.core.data.indexed import IndexedDataset


def span_counts(length: int, noise_density: float = 0.15, mean_span: float = 3.0) -> tuple[int, int]:
    """(noise tokens, noise spans) for a sequence of `length` tokens."""
    noise = min(max(1, int(round(length * noise_density))), length - 1)
    spans = max(1, int(round(noise / mean_span)))
    return noise, min(spans, noise, length - noise)


def decoder_length_needed(max_input: int, noise_density: float = 0.15, mean_span: float = 3.0) -> int:
    """Longest decoder sequence (sentinels + spans + EOS) any input up to max_input tokens needs."""
    return max(sum(span_counts(n, noise_density, mean_span)) + 1 for n in range(2, max_input + 1))


def _partition(total: int, parts: int, rng: np.random.RandomState) -> np.ndarray:
    """`total` split into `parts` positive integers, uniformly over such splits."""
    cuts = np.sort(rng.choice(np.arange(1, total), size=parts - 1, replace=False)) if parts > 1 else np.empty(0, int)
    return np.diff(np.concatenate([[0], cuts, [total]])).astype(np.int64)


def noise_spans(length: int, rng: np.random.RandomState, noise_density: float = 0.15,
                mean_span: float = 3.0) -> list[tuple[int, int]]:
    """[start, end) of each noise span, in order; spans never touch and never start the sequence."""
    noise, spans = span_counts(length, noise_density, mean_span)
    noise_lengths = _partition(noise, spans, rng)
    keep_lengths = _partition(length - noise, spans, rng)
    out, pos = [], 0
    for keep, span in zip(keep_lengths, noise_lengths):
        pos += int(keep)
        out.append((pos, pos + int(span)))
        pos += int(span)
    return out


def corrupt(tokens: np.ndarray, spans: list[tuple[int, int]], sentinels: list[int], eos: int
            ) -> tuple[list[int], list[int]]:
    """(encoder input ending in EOS, decoder labels ending in EOS) for these noise spans."""
    enc, dec, pos = [], [], 0
    for k, (start, end) in enumerate(spans):
        enc.extend(int(t) for t in tokens[pos:start])
        enc.append(sentinels[k])
        dec.append(sentinels[k])
        dec.extend(int(t) for t in tokens[start:end])
        pos = end
    enc.extend(int(t) for t in tokens[pos:])
    return enc + [eos], dec + [eos]


T5_MASKING = ("t5", "megatron")
MEGATRON_SPAN_P, MEGATRON_MAX_SPAN = 0.2, 10  # Megatron's geometric span length (words) and its cap


def megatron_noise_spans(tokens: np.ndarray, target_length: int, rng: np.random.RandomState, starts: np.ndarray,
                         noise_density: float = 0.15, specials: tuple = ()) -> list[tuple[int, int]]:
    """[start, end) of each noise span by Megatron's T5 rule, in order (spans may touch). Tokens in
    `specials` ([CLS], [SEP], as Megatron) are never masked."""
    from megazoo.core.data.bert import group_words, ngram_spans

    budget = min(noise_density * target_length, max(1, int(round(len(tokens) * noise_density))))
    candidates = np.flatnonzero(~np.isin(tokens, list(specials))) if specials else np.arange(len(tokens))
    words = group_words(tokens, candidates, starts)
    out = []
    for _, pos in ngram_spans(words, budget, rng, MEGATRON_MAX_SPAN, geometric_p=MEGATRON_SPAN_P):
        start = pos[0]  # a span's positions are consecutive unless a special token sits inside it
        for a, b in zip(pos, pos[1:] + [None]):
            if b != a + 1:
                out.append((start, a + 1))
                start = b
    return out


def megatron_max_noise(max_input: int, noise_density: float = 0.15) -> int:
    """Most noise tokens (and so spans) Megatron's rule hides in max_input tokens."""
    return int(noise_density * max_input + 1e-9)


def decoder_length_for(max_input: int, masking: str = "t5", noise_density: float = 0.15,
                       mean_span: float = 3.0) -> int:
    """Longest decoder sequence either masking rule needs for inputs up to max_input tokens."""
    if masking == "megatron":  # every noise token its own span at worst: sentinel + token each, EOS
        return 2 * megatron_max_noise(max_input, noise_density) + 1
    return decoder_length_needed(max_input, noise_density, mean_span)


def check_t5_options(tokenizer, encoder_seq_length: int, decoder_seq_length: int | None,
                     noise_density: float = 0.15, mean_span: float = 3.0, masking: str = "t5") -> int:
    """Fail before any data work on a bad tokenizer/length; returns the decoder length to use."""
    if masking not in T5_MASKING:
        raise DataError(f"T5 masking {masking!r} is not one of {', '.join(T5_MASKING)}")
    missing = [n for n in ("pad", "bos", "eos") if getattr(tokenizer, n) is None]
    if missing:
        raise DataError(f"tokenizer {tokenizer.name} has no {', '.join(missing)} token; T5 samples need them")
    if encoder_seq_length < 4:
        raise DataError(f"T5 encoder_seq_length {encoder_seq_length} is too short (at least 4)")
    max_input = encoder_seq_length - 1
    needed = decoder_length_for(max_input, masking, noise_density, mean_span)
    dec_len = decoder_seq_length or needed
    if dec_len < needed:
        raise DataError(f"T5 decoder_seq_length {dec_len} is too short: inputs of {max_input} tokens "
                        f"need up to {needed} (sentinels + spans + EOS)")
    if masking == "megatron":
        max_spans = megatron_max_noise(max_input, noise_density)
    else:
        max_spans = max(span_counts(n, noise_density, mean_span)[1] for n in range(2, max_input + 1))
    if len(tokenizer.sentinels) < max_spans:
        raise DataError(f"tokenizer {tokenizer.name} has {len(tokenizer.sentinels)} sentinel tokens; T5 "
                        f"samples of {max_input} tokens need up to {max_spans}: build it with "
                        f"extra_ids={max(100, max_spans)} (preprocess --vocab-extra-ids)")
    return dec_len


class T5Dataset:
    """Span-corruption samples over the documents `documents` of a sentence-split dataset."""

    def __init__(self, indexed: IndexedDataset, documents: np.ndarray, num_samples: int | None,
                 encoder_seq_length: int, seed: int, tokenizer, decoder_seq_length: int | None = None,
                 split: str = "train", noise_density: float = 0.15, mean_span: float = 3.0,
                 short_seq_prob: float = 0.1, cache_dir: str | os.PathLike | None = None, masking: str = "t5"):
        from megazoo.core.data.bert import word_starts

        self.tokenizer, self.seed, self.masking = tokenizer, seed, masking
        self.enc_len, self.noise_density, self.mean_span = encoder_seq_length, noise_density, mean_span
        self.dec_len = check_t5_options(tokenizer, encoder_seq_length, decoder_seq_length, noise_density, mean_span,
                                        masking)
        self.starts = word_starts(tokenizer) if masking == "megatron" else None
        max_input = encoder_seq_length - 1  # room for EOS; corruption never lengthens the input
        self.blocks = SentenceBlocks(indexed, documents, max_input, num_samples, seed, split,
                                     "T5Dataset", 1, short_seq_prob, cache_dir)

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, idx: int) -> dict[str, np.ndarray]:
        rng = np.random.RandomState((self.seed + int(idx)) % 2**32)
        sentences, goal = self.blocks.sentences(int(idx))
        tokens = np.concatenate(sentences).astype(np.int64)[:min(goal, self.enc_len - 1)]
        if len(tokens) < 2:  # nothing to hide in a single token: pad it out with a second EOS
            tokens = np.concatenate([tokens, [self.tokenizer.eos]])[:2]
        tok = self.tokenizer
        if self.masking == "megatron":
            specials = tuple(t for t in (tok.cls, tok.sep) if t is not None)
            spans = megatron_noise_spans(tokens, min(goal, self.enc_len - 1), rng, self.starts, self.noise_density,
                                         specials)
        else:
            spans = noise_spans(len(tokens), rng, self.noise_density, self.mean_span)
        enc, labels = corrupt(tokens, spans, tok.sentinels, tok.eos)
        dec = [tok.bos] + labels[:-1]
        pe, pd = self.enc_len - len(enc), self.dec_len - len(labels)
        return {
            "text_enc": np.asarray(enc + [tok.pad] * pe, dtype=np.int64),
            "text_dec": np.asarray(dec + [tok.pad] * pd, dtype=np.int64),
            "labels": np.asarray(labels + [-1] * pd, dtype=np.int64),
            "loss_mask": np.asarray([1] * len(labels) + [0] * pd, dtype=np.int64),
            "enc_mask": np.asarray([1] * len(enc) + [0] * pe, dtype=np.int64),
            "dec_mask": np.asarray([1] * len(dec) + [0] * pd, dtype=np.int64),
        }
