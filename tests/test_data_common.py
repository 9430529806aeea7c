"""Shared fixtures and helpers of the data-pipeline tests (imported by the test_data_* modules)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from megazoo.core.data.indexed import IndexedDatasetWriter


@pytest.fixture(scope="module")
def data_cache(tmp_path_factory):
    """A private MEGAZOO_CACHE for the module (tokenizer copies, corpus, indices), set back when the
    module is done so that other modules find the user's cache (a dequantised GGUF, say)."""
    path = tmp_path_factory.mktemp("megazoo_cache")
    old = os.environ.get("MEGAZOO_CACHE")
    os.environ["MEGAZOO_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("MEGAZOO_CACHE", None)
    else:
        os.environ["MEGAZOO_CACHE"] = old


@pytest.fixture(scope="module")
def gpt2(data_cache):
    from megazoo.core.data.tokenizers import build_tokenizer

    return build_tokenizer("gpt2")


@pytest.fixture(scope="module")
def bert(data_cache):
    from megazoo.core.data.tokenizers import build_tokenizer

    return build_tokenizer("bert-wordpiece", extra_ids=100)


def write_random_dataset(prefix, num_docs: int, seed: int = 0, dtype=np.uint16, max_len: int = 60,
                         vocab: int = 1000, sentences: bool = False, min_len: int = 1) -> list[list[np.ndarray]]:
    """A dataset of random documents; returns each document's sequences."""
    rng = np.random.RandomState(seed)
    docs = []
    with IndexedDatasetWriter(prefix, dtype) as writer:
        for _ in range(num_docs):
            n_seq = rng.randint(1, 5) if sentences else 1
            seqs = [rng.randint(0, vocab, size=rng.randint(min_len, max_len + 1)) for _ in range(n_seq)]
            writer.add_document(np.concatenate(seqs), [len(s) for s in seqs])
            docs.append(seqs)
    return docs


def write_jsonl(path: Path, texts, key: str = "text") -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({key: t, "meta": 1}) + "\n")
    return path


SAMPLE_TEXTS = [
    "The quick brown fox jumps over the lazy dog. It was not amused.",
    "Megatron splits tensors across devices. Each rank holds a slice! Does it work? Yes.",
    "Short one.",
    "Unicode text: caf\u00e9, na\u00efve, \u00fcber, \u65e5\u672c\u8a9e. Emoji too \U0001F600.",
    "A document\nwith a newline inside it. And a second sentence here.",
] * 7
