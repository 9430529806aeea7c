"""Train/valid/test datasets from a data config: the functions the trainer calls.

The config's `path` is parsed as Megatron's --data-path (blend.py); unset means the embedded
corpus (corpus.py), tokenised with the run's tokenizer into the cache once. Each dataset is
split into train/valid/test by `split` ("949,50,1", over documents); with several datasets each
split is a blend of the datasets' same splits, by weight.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, fields
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from megazoo.core.data.blend import (BLEND_SURPLUS, SPLIT_NAMES, BlendedDataset, blend_sizes, parse_data_path,
                                     parse_split, split_ranges)
from megazoo.core.data.errors import DataError
from megazoo.core.data.indexed import IndexedDataset

log = logging.getLogger(__name__)


@dataclass
class DataConfig:
    """The `data.*` keys the data pipeline reads."""

    path: Any = None            # a prefix, or weights and prefixes alternating; None: embedded corpus
    split: str = "949,50,1"     # train,valid,test weights over each dataset's documents
    cache_dir: str | None = None  # sample-index cache; default $MEGAZOO_CACHE/indices
    corpus: str = "stdlib"      # the embedded corpus used when path is unset

    @classmethod
    def from_any(cls, obj: Any) -> "DataConfig":
        """Accept a DataConfig, a mapping, any object with these attributes, or None."""
        if obj is None:
            return cls()
        if isinstance(obj, cls):
            return obj
        names = [f.name for f in fields(cls)]
        if isinstance(obj, dict):
            values = {k: obj[k] for k in names if k in obj}
        else:
            values = {k: getattr(obj, k) for k in names if hasattr(obj, k)}
        values = {k: v for k, v in values.items() if v is not None or k == "path"}
        return cls(**values)


class Splits(NamedTuple):
    """train / valid / test; a split is None when its weight is 0 or it has too little data."""

    train: Any
    valid: Any
    test: Any


def _cache_dir(cfg: DataConfig) -> str:
    from megazoo.core.fs import cache_root

    return cfg.cache_dir or str(cache_root() / "indices")


def _resolve(cfg: DataConfig, tokenizer, split_sentences: bool) -> tuple[list[IndexedDataset], list[float] | None]:
    prefixes, weights = parse_data_path(cfg.path)
    if not prefixes:
        from megazoo.core.data.corpus import corpus_prefix

        prefixes = [corpus_prefix(tokenizer, cfg.corpus, split_sentences=split_sentences)]
    datasets = [IndexedDataset(p) for p in prefixes]
    for ds in datasets:
        # A .bin made with a larger vocabulary would index past the embedding table.
        # Scanning is ~0.1 s per 100M tokens; larger datasets are trusted to match.
        top = int(ds.tokens.max()) if 0 < ds.num_tokens <= 100_000_000 else -1
        if top >= tokenizer.vocab_size:
            raise DataError(f"{ds.bin_file}: holds token id {top}, but the tokenizer {tokenizer.name} has "
                            f"{tokenizer.vocab_size} tokens; preprocess it with the same tokenizer")
        if split_sentences and ds.num_documents == len(ds) and ds.num_documents > 0:
            log.warning("%s: one sequence per document; BERT/T5 samples need --split-sentences data", ds.prefix)
    return datasets, weights


def _build_splits(kind: str, config: Any, tokenizer, num_samples: Sequence[int | None] | None,
                  make: Callable, unit: Callable[[IndexedDataset], int], enough: Callable,
                  split_sentences: bool) -> Splits:
    cfg = DataConfig.from_any(config)
    num_samples = list(num_samples) if num_samples is not None else [None, None, None]
    if len(num_samples) != 3:
        raise DataError(f"num_samples must give (train, valid, test), got {num_samples}")
    datasets, weights = _resolve(cfg, tokenizer, split_sentences)
    split_weights = parse_split(cfg.split)
    ranges = [split_ranges(unit(ds), split_weights) for ds in datasets]
    cache = _cache_dir(cfg)
    out = []
    for s, name in enumerate(SPLIT_NAMES):
        parts, part_weights, part_names = [], [], []
        for d, ds in enumerate(datasets):
            rng = ranges[d][s]
            w = 1.0 if weights is None else weights[d]
            if rng is None or w == 0 or not enough(ds, np.arange(*rng)):
                continue
            parts.append((ds, np.arange(*rng, dtype=np.int64)))
            part_weights.append(w if weights is not None else float(ds.sequence_lengths[_seq_range(ds, rng, unit)].sum()))
            part_names.append(os.path.abspath(ds.prefix))
        if not parts:
            if split_weights[s] > 0:
                if name == "train":
                    hint = ("; BERT/T5 samples are cut from sentences, so the data must be preprocessed "
                            "with --split-sentences" if split_sentences else "")
                    raise DataError(f"{datasets[0].prefix}: the train split is too small for one {kind} sample; "
                                    f"use more data, a shorter sequence or a larger train share in data.split{hint}")
                log.warning("%s split has too little data for one %s sample; it is left out", name, kind)
            out.append(None)
            continue
        total = sum(part_weights)
        part_weights = [w / total for w in part_weights]
        want = num_samples[s]
        if len(parts) == 1:
            out.append(make(parts[0][0], parts[0][1], want, name, cache))
            continue
        if want is None:
            components = [make(ds, idx, None, name, cache) for ds, idx in parts]
            # one pass: the largest blend no component runs out of in one epoch (the surplus
            # blend_sizes adds, twice over for the rounding, keeps each within its epoch)
            want = int(min(len(c) / w for c, w in zip(components, part_weights)) / (1 + 2 * BLEND_SURPLUS))
            want = max(1, want)
        sizes = blend_sizes(want, part_weights)
        components = [make(ds, idx, n, name, cache) for (ds, idx), n in zip(parts, sizes)]
        out.append(BlendedDataset(components, part_weights, want, name, cache, part_names))
    return Splits(*out)


def _seq_range(ds: IndexedDataset, rng: tuple[int, int], unit) -> slice:
    if unit is _sequences:
        return slice(*rng)
    return slice(int(ds.document_indices[rng[0]]), int(ds.document_indices[rng[1]]))


def _sequences(ds: IndexedDataset) -> int:
    return len(ds)


def _documents(ds: IndexedDataset) -> int:
    return ds.num_documents


def build_gpt_datasets(config: Any, tokenizer, seq_length: int, seed: int,
                       num_samples: Sequence[int | None] | None = None) -> Splits:
    """GPT train/valid/test datasets; items are {"tokens": int64[seq_length + 1]}.

    num_samples: (train, valid, test) samples wanted, e.g. (steps * global_batch, eval_iters *
    global_batch * evals, ...); None (or a None entry) means one epoch. A dataset with fewer
    samples is repeated over epochs (each reshuffled), so len(split) >= what was asked.
    """
    from megazoo.core.data.gpt import GPTDataset

    def make(ds, idx, n, split, cache):
        return GPTDataset(ds, idx, n, seq_length, seed, split, cache)

    def enough(ds, idx):
        return len(idx) > 0 and int(ds.sequence_lengths[idx].sum(dtype=np.int64)) > seq_length

    return _build_splits("GPT", config, tokenizer, num_samples, make, _sequences, enough, False)


def build_bert_datasets(config: Any, tokenizer, seq_length: int, seed: int,
                        num_samples: Sequence[int | None] | None = None, masking_prob: float = 0.15,
                        short_seq_prob: float = 0.1, binary_head: bool = True, masking: str = "whole_word",
                        max_ngram: int = 3) -> Splits:
    """BERT train/valid/test datasets over sentence-split data (see bert.py for the item keys).
    masking: "whole_word" (Megatron's default: whole-word n-grams of up to max_ngram words) or "token"."""
    from megazoo.core.data.bert import BertDataset, check_bert_options

    check_bert_options(tokenizer, seq_length, masking, max_ngram)

    def make(ds, idx, n, split, cache):
        return BertDataset(ds, idx, n, seq_length, seed, tokenizer, split, masking_prob,
                           short_seq_prob, binary_head, cache, masking, max_ngram)

    def enough(ds, idx):
        need = 2 if binary_head else 1
        return len(idx) > 0 and bool(np.any(np.diff(ds.document_indices)[idx] >= need))

    return _build_splits("BERT", config, tokenizer, num_samples, make, _documents, enough, True)


def build_t5_datasets(config: Any, tokenizer, encoder_seq_length: int, seed: int,
                      num_samples: Sequence[int | None] | None = None,
                      decoder_seq_length: int | None = None, noise_density: float = 0.15,
                      mean_span: float = 3.0, masking: str = "t5") -> Splits:
    """T5 span-corruption train/valid/test datasets (see t5.py for the item keys).
    masking: "t5" (the T5 paper's random spans, mean 3) or "megatron" (whole-word geometric spans)."""
    from megazoo.core.data.t5 import T5Dataset, check_t5_options

    check_t5_options(tokenizer, encoder_seq_length, decoder_seq_length, noise_density, mean_span, masking)

    def make(ds, idx, n, split, cache):
        return T5Dataset(ds, idx, n, encoder_seq_length, seed, tokenizer, decoder_seq_length, split,
                         noise_density, mean_span, cache_dir=cache, masking=masking)

    def enough(ds, idx):
        return len(idx) > 0 and bool(np.any(np.diff(ds.document_indices)[idx] >= 1))

    return _build_splits("T5", config, tokenizer, num_samples, make, _documents, enough, True)
