"""BERT masked-LM / sentence-order samples and T5 span corruption, on the embedded corpus."""

from __future__ import annotations

import numpy as np
import pytest

from megazoo.core.data import build_bert_datasets, build_t5_datasets
from megazoo.core.data.errors import DataError
from megazoo.core.data.t5 import noise_spans
from tests.test_data_common import bert, data_cache, gpt2  # noqa: F401


@pytest.fixture(scope="module")
def bert_train(bert):
    return build_bert_datasets(None, bert, seq_length=128, seed=5, num_samples=(2500, None, None)).train


def test_bert_masking_rates(bert_train, bert):
    candidates = predicted = masked = kept = replaced = 0
    for i in range(2500):
        item = bert_train[i]
        real = item["padding_mask"] == 1
        specials = np.isin(np.where(item["loss_mask"] == 1, item["labels"], item["text"]), [bert.cls, bert.sep])
        candidates += int(np.count_nonzero(real & ~specials))
        chosen = item["loss_mask"] == 1
        predicted += int(chosen.sum())
        masked += int(np.count_nonzero(item["text"][chosen] == bert.mask))
        kept += int(np.count_nonzero(item["text"][chosen] == item["labels"][chosen]))
        replaced += int(np.count_nonzero((item["text"][chosen] != bert.mask) & (item["text"][chosen] != item["labels"][chosen])))
    assert predicted > 30_000  # a large sample
    assert abs(predicted / candidates - 0.15) < 0.01
    assert abs(masked / predicted - 0.80) < 0.01
    assert abs(kept / predicted - 0.10) < 0.01
    assert abs(replaced / predicted - 0.10) < 0.01


def test_bert_layout_and_sentence_order(bert_train, bert):
    swapped = 0
    for i in range(400):
        item = bert_train[i]
        n = int(item["padding_mask"].sum())
        original = np.where(item["loss_mask"] == 1, item["labels"], item["text"])[:n]
        assert original[0] == bert.cls and original[-1] == bert.sep
        seps = np.flatnonzero(original == bert.sep)
        assert len(seps) == 2
        assert np.all(item["types"][:seps[0] + 1] == 0) and np.all(item["types"][seps[0] + 1:n] == 1)
        assert np.all(item["text"][n:] == bert.pad) and np.all(item["labels"][n:] == -1)
        a, b = original[1:seps[0]], original[seps[0] + 1:seps[1]]
        first, end, _ = (int(x) for x in bert_train.blocks.mapping[i])
        block = np.concatenate([bert_train.blocks.indexed[s] for s in range(first, end)])
        is_random = int(item["is_random"])
        swapped += is_random
        if not item["truncated"]:
            joined = np.concatenate([b, a] if is_random else [a, b])
            np.testing.assert_array_equal(joined, block)  # A then B is the block, unless swapped
    assert 0.4 < swapped / 400 < 0.6


def test_bert_samples_deterministic_and_independent_of_order(bert_train):
    late = bert_train[1234]
    for i in range(5):
        bert_train[i]
    again = bert_train[1234]
    for key in late:
        np.testing.assert_array_equal(late[key], again[key])


def test_bert_needs_bert_specials(gpt2):
    with pytest.raises(DataError, match="tokenizer gpt2 has no cls, sep, mask token"):
        build_bert_datasets(None, gpt2, 128, 0)


@pytest.fixture(scope="module")
def t5_train(bert):
    return build_t5_datasets(None, bert, encoder_seq_length=96, seed=3, num_samples=(600, None, None)).train


def test_t5_sentinels_well_formed(t5_train, bert):
    sentinels = bert.sentinels
    noise = total = spans = 0
    for i in range(600):
        item = t5_train[i]
        enc = item["text_enc"][item["enc_mask"] == 1].tolist()
        labels = item["labels"][item["loss_mask"] == 1].tolist()
        assert enc[-1] == bert.eos and labels[-1] == bert.eos
        in_enc = [t for t in enc if t in sentinels]
        k = len(in_enc)
        assert in_enc == sentinels[:k] and k >= 1              # <extra_id_0>, <extra_id_1>, ... once each, in order
        assert [t for t in labels if t in sentinels] == sentinels[:k]
        assert labels[0] == sentinels[0]
        np.testing.assert_array_equal(item["text_dec"][:len(labels)], [bert.bos] + labels[:-1])
        # putting the spans back where their sentinels are gives the original block
        spans_of, current = {}, None
        for t in labels[:-1]:
            if t in sentinels:
                current = t
                spans_of[t] = []
            else:
                spans_of[current].append(t)
        assert all(len(s) >= 1 for s in spans_of.values())
        rebuilt = [x for t in enc[:-1] for x in (spans_of[t] if t in sentinels else [t])]
        first, end, goal = (int(x) for x in t5_train.blocks.mapping[i])
        block = np.concatenate([t5_train.blocks.indexed[s] for s in range(first, end)])[:min(goal, 95)]
        assert rebuilt == block.tolist()
        noise += sum(len(s) for s in spans_of.values())
        total += len(rebuilt)
        spans += k
    assert abs(noise / total - 0.15) < 0.01
    assert abs(noise / spans - 3.0) < 0.3


def test_noise_spans_shape():
    rng = np.random.RandomState(0)
    for length in (2, 3, 10, 95, 500):
        spans = noise_spans(length, rng)
        assert spans[0][0] >= 1 and spans[-1][1] <= length
        assert all(s < e for s, e in spans) and all(e1 < s2 for (_, e1), (s2, _) in zip(spans, spans[1:]))


def test_t5_errors(data_cache):
    from megazoo.core.data.tokenizers import build_tokenizer

    plain = build_tokenizer("bert-wordpiece")
    with pytest.raises(DataError, match=r"has 0 sentinel tokens; .* extra_ids=100"):
        build_t5_datasets(None, plain, 96, 0)
    with_sentinels = build_tokenizer("bert-wordpiece", extra_ids=100)
    with pytest.raises(DataError, match="decoder_seq_length 5 is too short"):
        build_t5_datasets(None, with_sentinels, 96, 0, decoder_seq_length=5)


def test_bert_on_unsplit_data_says_split_sentences(tmp_path, bert):
    from megazoo.core.data import DataConfig
    from tests.test_data_common import write_random_dataset

    write_random_dataset(tmp_path / "docs", 50, seed=1, vocab=30000)  # one sequence per document
    with pytest.raises(DataError, match="preprocessed with --split-sentences"):
        build_bert_datasets(DataConfig(path=str(tmp_path / "docs"), cache_dir=str(tmp_path / "c")), bert, 64, 0)
