"""The embedded default corpus: real prose, cleaned, deterministic, tokenised once into the cache."""

from __future__ import annotations

import importlib.util
import os

import pytest

from megazoo.core.data.corpus import clean_text, corpus_prefix, documents
from megazoo.core.data.errors import DataError
from megazoo.core.data.indexed import IndexedDataset
from tests.test_data_common import data_cache, gpt2  # noqa: F401


def test_documents_are_clean_prose_in_a_fixed_order():
    docs = documents()
    assert len(docs) > 150 and sum(map(len, docs)) > 300_000
    assert docs == documents()
    assert docs[0].startswith('The "assert" statement')  # pydoc topics first, sorted by name
    text = "\n".join(docs)
    for noise in (":func:`", ":class:`", "``", ">>>", "::=", "******", "======", ".. note::"):
        assert noise not in text, noise
    assert "  " not in text  # whitespace collapsed
    words = text.split()
    assert sum(w.isalpha() for w in words) / len(words) > 0.6
    assert any("shallow copy" in d for d in docs)  # the copy module's docstring is in


def test_clean_text_rules():
    raw = ("Title\n=====\n\nUse :func:`len` or ``x.y`` with *care*.\n\n.. note::\n\n"
           ">>> print(1)\n1\n\nFor example, run this::\n\n    a = f(b)[0]\n\n+---+---+\n| a | b |\n+===+===+\n\n"
           "End   of   text here.\n")
    assert clean_text(raw) == "Use len or x.y with care.\nFor example, run this:\nEnd of text here."


def test_corpus_prefix_written_once(gpt2, tmp_path):
    prefix = corpus_prefix(gpt2, cache_dir=tmp_path)
    ds = IndexedDataset(prefix)
    docs = documents()
    assert ds.num_documents == len(docs)
    assert ds.document(0).tolist() == gpt2.encode(docs[0]) + [gpt2.eod]
    stamp = os.path.getmtime(prefix + ".bin")
    assert corpus_prefix(gpt2, cache_dir=tmp_path) == prefix and os.path.getmtime(prefix + ".bin") == stamp
    sentences = IndexedDataset(corpus_prefix(gpt2, split_sentences=True, cache_dir=tmp_path))
    assert len(sentences) > 3 * sentences.num_documents  # one sequence per sentence


def test_optional_corpora():
    with pytest.raises(DataError, match="unknown corpus `wiki`"):
        documents("wiki")
    if importlib.util.find_spec("gensim") is None:
        with pytest.raises(DataError, match="needs the gensim package"):
            documents("gensim-lee")
    else:
        lee = documents("gensim-lee")
        assert len(lee) > 100


def test_corpus_tokenizer_small_vocab(tmp_path):
    from megazoo.core.data.corpus import corpus_tokenizer

    tok = corpus_tokenizer(1024, cache_dir=tmp_path)
    assert tok.vocab_size == 1024 and tok.eod == tok.eos == 2 and tok.pad == 3
    again = corpus_tokenizer(1024, cache_dir=tmp_path)  # from the cache
    text = documents()[7]
    assert again.encode(text) == tok.encode(text) and again.decode(tok.encode(text)) == text
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".model", ".vocab"]
