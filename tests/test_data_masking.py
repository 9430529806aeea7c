"""Megatron's masking (issue 16 points 7 and 8): BERT's whole-word n-gram masking and T5's
whole-word geometric spans, on the embedded corpus with BERT's WordPiece vocabulary; the same
masks as megatron-core's own code for the same random state."""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

from megazoo.core.data import build_bert_datasets, build_t5_datasets
from megazoo.core.data.bert import group_words, mask_whole_words, ngram_spans, word_starts
from megazoo.core.data.t5 import megatron_noise_spans
from tests.test_data_common import bert, data_cache  # noqa: F401

SAMPLES = 2000


@pytest.fixture(scope="module")
def starts(bert):
    return word_starts(bert)


@pytest.fixture(scope="module")
def whole_word(bert):  # the default masking
    return build_bert_datasets(None, bert, seq_length=128, seed=11, num_samples=(SAMPLES, None, None)).train


@pytest.fixture(scope="module")
def items(whole_word):
    return [whole_word[i] for i in range(SAMPLES)]


def _original(item) -> np.ndarray:
    n = int(item["padding_mask"].sum())
    return np.where(item["loss_mask"] == 1, item["labels"], item["text"])[:n]


def _candidates(tokens: np.ndarray, tok) -> np.ndarray:
    return np.flatnonzero(~np.isin(tokens, [tok.cls, tok.sep]))


def test_word_starts_follow_wordpiece(bert, starts):
    ids = bert.encode("unbelievably tokenization")
    pieces = [bert.backend.id_to_token(i) for i in ids]
    assert any(p.startswith("##") for p in pieces)
    assert [bool(starts[i]) for i in ids] == [not p.startswith("##") for p in pieces]


def test_masked_share_is_15_percent_with_80_10_10(items, bert):
    tokens = predicted = masked = kept = 0
    for item in items:
        chosen = item["loss_mask"] == 1
        tokens += len(_candidates(_original(item), bert))
        predicted += int(chosen.sum())
        masked += int(np.count_nonzero(item["text"][chosen] == bert.mask))
        kept += int(np.count_nonzero(item["text"][chosen] == item["labels"][chosen]))
    assert predicted > 25_000
    assert abs(predicted / tokens - 0.15) < 0.01
    assert abs(masked / predicted - 0.80) < 0.01
    assert abs(kept / predicted - 0.10) < 0.01  # a random id equal to the original is 1 in 30,000


def test_every_masked_word_is_masked_as_a_whole(items, bert, starts):
    multi_piece_masked = 0
    for item in items:
        tokens = _original(item)
        for word in group_words(tokens, _candidates(tokens, bert), starts):
            flags = item["loss_mask"][word]
            assert flags.all() or not flags.any(), [bert.backend.id_to_token(int(t)) for t in tokens[word]]
            multi_piece_masked += int(flags.all() and len(word) > 1)
    assert multi_piece_masked > 500  # the check saw many words of several pieces


def test_ngram_lengths_follow_one_over_n(items, bert, starts):
    # n is drawn with P(n) proportional to 1/n: 6/11, 3/11, 2/11 for n = 1, 2, 3 (Megatron's nprobs).
    # Counted over the masked n-grams by the n drawn for them; the words an n-gram ends up with are
    # fewer (about 0.60 / 0.26 / 0.15 here) because Megatron shortens an n-gram that would pass the
    # 15% budget and skips one that overlaps an earlier one: megatron-core does the same (see below).
    drawn = np.zeros(4)
    for i, item in enumerate(items):
        tokens = _original(item)
        rng = np.random.RandomState(i)
        _, labels, spans = mask_whole_words(tokens, _candidates(tokens, bert), rng, bert, starts, len(tokens) - 3)
        assert sorted(p for _, pos in spans for p in pos) == np.flatnonzero(labels >= 0).tolist()
        for n, _ in spans:
            drawn[n] += 1
    share = drawn[1:] / drawn[1:].sum()
    assert drawn.sum() > 15_000
    np.testing.assert_allclose(share, np.array([6, 3, 2]) / 11, atol=0.02)


def test_random_replacements_come_from_the_whole_vocabulary(items, bert):
    replaced = []
    for item in items:
        chosen = item["loss_mask"] == 1
        text, labels = item["text"][chosen], item["labels"][chosen]
        replaced += text[(text != bert.mask) & (text != labels)].tolist()
    replaced = np.asarray(replaced)
    v = bert.vocab_size
    assert len(replaced) > 2000 and replaced.max() < v
    assert abs(replaced.mean() / v - 0.5) < 0.03  # uniform over all ids
    assert (replaced < 999).sum() > 0.02 * len(replaced)  # [PAD], [unused*] ...: ids no text produces
    assert (replaced >= 30522).any()  # the added <extra_id_*> tokens too


def test_token_masking_is_still_available(bert):
    ds = build_bert_datasets(None, bert, seq_length=128, seed=11, num_samples=(300, None, None), masking="token").train
    partial = 0
    for i in range(300):
        item = ds[i]
        cand = _candidates(_original(item), bert)
        assert int(item["loss_mask"].sum()) == min(len(cand), max(1, int(round(len(cand) * 0.15))))
        words = group_words(_original(item), cand, word_starts(bert))
        partial += sum(0 < item["loss_mask"][w].sum() < len(w) for w in words)
    assert partial > 0  # pieces of a word are masked on their own


def test_bad_masking_name(bert):
    from megazoo.core.data.errors import DataError

    with pytest.raises(DataError, match="BERT masking 'span' is not one of whole_word, token"):
        build_bert_datasets(None, bert, 128, 0, masking="span")


# ---- T5: Megatron's spans ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def t5_megatron(bert):
    return build_t5_datasets(None, bert, encoder_seq_length=256, seed=3, num_samples=(800, None, None),
                             masking="megatron").train


def test_megatron_t5_samples_are_well_formed(t5_megatron, bert):
    sentinels = bert.sentinels
    noise = total = 0
    for i in range(300):
        item = t5_megatron[i]
        enc = item["text_enc"][item["enc_mask"] == 1].tolist()
        labels = item["labels"][item["loss_mask"] == 1].tolist()
        assert enc[-1] == bert.eos and labels[-1] == bert.eos
        k = sum(t in sentinels for t in enc)
        assert [t for t in enc if t in sentinels] == sentinels[:k] == [t for t in labels if t in sentinels]
        np.testing.assert_array_equal(item["text_dec"][:len(labels)], [bert.bos] + labels[:-1])
        noise += len(labels) - 1 - k
        total += len(enc) - 1 - k + len(labels) - 1 - k
    assert abs(noise / total - 0.15) < 0.01


def test_megatron_t5_span_lengths_are_geometric(t5_megatron, bert, starts):
    # Megatron's T5: a span is min(Geometric(0.2), 10) whole words. Counted by the n drawn for each
    # masked span (as for BERT, the budget and overlaps shorten some spans; megatron-core agrees below).
    drawn = np.zeros(11)
    for i in range(len(t5_megatron)):
        first, end, goal = (int(x) for x in t5_megatron.blocks.mapping[i])
        tokens = np.concatenate([t5_megatron.blocks.indexed[s] for s in range(first, end)])[:min(goal, 255)]
        words = group_words(tokens, np.arange(len(tokens)), starts)
        budget = min(0.15 * min(goal, 255), max(1, int(round(len(tokens) * 0.15))))
        for n, _ in ngram_spans(words, budget, np.random.RandomState(i), 10, geometric_p=0.2):
            drawn[n] += 1
    expected = np.array([0.2 * 0.8 ** (k - 1) for k in range(1, 10)] + [0.8 ** 9])
    share = drawn[1:] / drawn[1:].sum()
    assert drawn.sum() > 4000
    np.testing.assert_allclose(share, expected, atol=0.03)
    mean = (share * np.arange(1, 11)).sum()
    assert abs(mean - (expected * np.arange(1, 11)).sum()) < 0.25  # 4.46 words


def test_t5_masking_is_named_in_the_resolved_config():
    from megazoo.core.train import RunConfig

    default = RunConfig.load("t5-tiny", ["model.seq_length=32"]).validate()
    assert default.to_dict()["masking"] == "t5"
    builder = RunConfig.load("t5-tiny", ["model.seq_length=32", "model.masking=megatron"]).validate()
    assert builder.to_dict()["masking"] == "megatron"
    bert_builder = RunConfig.load("bert-tiny", ["model.seq_length=32"]).validate()
    assert bert_builder.to_dict()["masking"] == "whole_word" and bert_builder.to_dict()["add_binary_head"] is True


def test_bert_pretraining_has_the_sentence_order_head_by_default():
    from megazoo.zoo.bert.builder import BertBuilder

    on = BertBuilder({"arch": "bert", "num_layers": 1, "hidden_size": 32, "num_heads": 2})
    assert on.config.add_binary_head is True
    off = BertBuilder({"arch": "bert", "num_layers": 1, "hidden_size": 32, "num_heads": 2, "add_binary_head": False})
    assert off.config.add_binary_head is False


# ---- the same masks as megatron-core --------------------------------------------------------------
def _megatron():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from megatron.core.datasets.bert_dataset import BERTMaskedWordPieceDataset
            from megatron.core.datasets.masked_dataset import MaskedWordPieceDataset
        except ImportError as exc:  # pragma: no cover - CI installs it
            pytest.skip(f"megatron-core is not installed ({exc})")
    return MaskedWordPieceDataset, BERTMaskedWordPieceDataset


def _megatron_masker(tok, max_ngram: int, geometric: bool, bert_mask: bool):
    """megatron-core's _create_masked_lm_predictions on an object with just the config it reads."""
    masked_cls, bert_cls = _megatron()
    vocab = tok.backend.get_vocab(with_added_tokens=True)
    inv_vocab = {i: t for t, i in sorted(vocab.items(), key=lambda kv: kv[1])}
    assert list(inv_vocab) == list(range(tok.vocab_size))
    tokenizer = types.SimpleNamespace(cls=tok.cls, sep=tok.sep, mask=tok.mask, inv_vocab=inv_vocab)
    config = types.SimpleNamespace(tokenizer=tokenizer, masking_probability=0.15, masking_max_ngram=max_ngram,
                                   masking_do_full_word=True, masking_do_permutation=False,
                                   masking_use_longer_ngrams=False, masking_use_geometric_distribution=geometric)
    fake = types.SimpleNamespace(config=config, token_lookup=list(inv_vocab))
    if bert_mask:
        fake._get_token_mask = types.MethodType(bert_cls._get_token_mask, fake)
    else:  # T5: every masked token becomes [MASK] without a draw
        fake._get_token_mask = lambda rng: tok.mask
    return types.MethodType(masked_cls._create_masked_lm_predictions, fake)


def test_bert_masks_equal_megatron_cores(items, bert, starts):
    theirs = _megatron_masker(bert, 3, geometric=False, bert_mask=True)
    for i, item in enumerate(items[:400]):
        tokens = _original(item)
        target = len(tokens) - 3 if i % 2 else 125  # full-length target and the sample's own
        ours, labels, spans = mask_whole_words(tokens, _candidates(tokens, bert), np.random.RandomState(i), bert,
                                               starts, target)
        text, positions, masked_labels, _, mspans = theirs(tokens.tolist(), target, np.random.RandomState(i))
        assert ours.tolist() == list(text)
        assert np.flatnonzero(labels >= 0).tolist() == list(positions)
        assert labels[labels >= 0].tolist() == list(masked_labels)
        assert [pos for _, pos in spans] == [list(ix) for ix, _ in mspans]


def test_t5_spans_equal_megatron_cores(t5_megatron, bert, starts):
    theirs = _megatron_masker(bert, 10, geometric=True, bert_mask=False)
    for i in range(300):
        first, end, goal = (int(x) for x in t5_megatron.blocks.mapping[i])
        tokens = np.concatenate([t5_megatron.blocks.indexed[s] for s in range(first, end)])[:min(goal, 255)]
        ours = megatron_noise_spans(tokens, min(goal, 255), np.random.RandomState(i), starts, 0.15,
                                    (bert.cls, bert.sep))
        *_, mspans = theirs(tokens.tolist(), min(goal, 255), np.random.RandomState(i))
        assert ours == [(ix[0], ix[-1] + 1) for ix, _ in mspans]
