"""Tokenizers: known ids for the bundled vocabularies, special ids, sentinels, pickling, errors."""

from __future__ import annotations

import pickle

import pytest

from megazoo.core.data.errors import DataError
from megazoo.core.data.tokenizers import bert_vocab_file, build_tokenizer, train_sentencepiece
from tests.test_data_common import SAMPLE_TEXTS, bert, data_cache, gpt2  # noqa: F401


def test_gpt2_known_ids_and_transformers_agree(gpt2, data_cache):
    from transformers import GPT2TokenizerFast

    assert gpt2.encode("Hello world") == [15496, 995]
    assert gpt2.vocab_size == 50257 and gpt2.eod == gpt2.eos == 50256
    assert gpt2.cls is None and gpt2.mask is None
    reference = GPT2TokenizerFast.from_pretrained(str(data_cache / "tokenizers" / "gpt2"))
    assert len(reference) == 50257  # the from_pretrained(dir) route is not the empty-tokenizer trap
    for text in SAMPLE_TEXTS[:5]:
        assert gpt2.encode(text) == reference(text)["input_ids"]
        assert gpt2.decode(gpt2.encode(text)) == text
    # a second build reads the saved tokenizer.json and agrees
    assert build_tokenizer("gpt2").encode(SAMPLE_TEXTS[3]) == gpt2.encode(SAMPLE_TEXTS[3])


def test_bert_wordpiece_matches_the_model_folder(bert):
    assert bert.encode("Hello world") == [7592, 2088]
    assert (bert.cls, bert.sep, bert.mask, bert.pad, bert.unk) == (101, 102, 103, 0, 100)
    assert bert.vocab_size == 30522 + 100 and len(bert.sentinels) == 100
    assert bert.token_to_id("<extra_id_0>") == bert.sentinels[0] == 30522
    folder = build_tokenizer("hf:" + str(bert_vocab_file().parent))
    assert folder.vocab_size == 30522 and folder.cls == 101 and folder.mask == 103
    for text in SAMPLE_TEXTS[:5]:
        assert bert.encode(text) == folder.encode(text)  # no padding or [CLS]/[SEP] added
    cased = build_tokenizer("bert-wordpiece-cased")
    assert cased.encode("Hello") != bert.encode("Hello") or cased.name.endswith("cased")


def test_sentencepiece_model_file(data_cache):
    sp = build_tokenizer("sentencepiece", extra_ids=3)
    assert sp.vocab_size == 32000 + 3 and (sp.unk, sp.bos, sp.eos) == (0, 1, 2)
    ids = sp.encode("The quick brown fox.")
    assert sp.decode(ids) == "The quick brown fox."
    assert sp.sentinels == [32000, 32001, 32002]
    assert sp.decode(ids[:2] + [32001] + ids[2:]).count("<extra_id_1>") == 1
    assert sp.token_to_id("<extra_id_2>") == 32002


def test_train_sentencepiece_domain_vocab(tmp_path):
    from megazoo.core.data.corpus import documents

    tok = train_sentencepiece(documents()[:60], tmp_path / "dom", vocab_size=600,
                              user_defined_symbols=["<mask>", "<cls>", "<sep>"])
    assert (tmp_path / "dom.model").is_file() and tok.vocab_size == 600
    assert tok.pad == 3 and tok.mask is not None and tok.cls is not None
    text = "The interpreter evaluates the expression."
    assert tok.decode(tok.encode(text)) == text
    again = build_tokenizer(f"sentencepiece:{tmp_path / 'dom.model'}")
    assert again.encode(text) == tok.encode(text)


def test_pickle_round_trip(gpt2, bert, data_cache):
    for tok in (gpt2, bert, build_tokenizer("sentencepiece", extra_ids=2)):
        copy = pickle.loads(pickle.dumps(tok))
        assert copy.encode(SAMPLE_TEXTS[1]) == tok.encode(SAMPLE_TEXTS[1])
        assert copy.special_ids() == tok.special_ids() and copy.sentinels == tok.sentinels
        assert copy.fingerprint() == tok.fingerprint()
    assert gpt2.fingerprint() != bert.fingerprint()


def test_tokenizer_errors(tmp_path):
    with pytest.raises(DataError, match="unknown tokenizer `gtp2`.*Did you mean `gpt2`"):
        build_tokenizer("gtp2")
    with pytest.raises(DataError, match=r"nope\.model: no such SentencePiece"):
        build_tokenizer(f"sentencepiece:{tmp_path / 'nope.model'}")
    (tmp_path / "junk.model").write_bytes(b"not a model")
    with pytest.raises(DataError, match=r"junk\.model: not a SentencePiece model"):
        build_tokenizer("sentencepiece", str(tmp_path / "junk.model"))
    with pytest.raises(DataError, match=r"vocab\.txt: no such vocab\.txt"):
        build_tokenizer("bert-wordpiece", str(tmp_path / "vocab.txt"))
    with pytest.raises(DataError, match="not a folder"):
        build_tokenizer("hf:" + str(tmp_path / "missing"))
    with pytest.raises(DataError, match=r"vocab\.json: missing; a GPT-2 tokenizer folder needs"):
        build_tokenizer("gpt2", str(tmp_path))
