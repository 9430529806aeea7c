"""Megatron's RACE inputs: [CLS] qa [SEP] article [SEP], token types, truncation, padding."""

from pathlib import Path

import pytest

from megazoo.tasks.race.data import RaceQuestion, read_race_dir
from megazoo.tasks.race.inputs import build_inputs, clean_text, qa_text
from megazoo.zoo.heads.choice import pair_ids

FIXTURE = Path(__file__).parent / "fixtures" / "race" / "RACE"
CLS, SEP, PAD = 101, 102, 0


class CharTokenizer:
    """One id per character (ids 1000+), so lengths are easy to reason about."""
    cls, sep, pad, name = CLS, SEP, PAD, "chars"

    def encode(self, text):
        return [1000 + ord(c) for c in text]

    def encode_batch(self, texts):
        return [self.encode(t) for t in texts]


def test_clean_text_and_qa():
    assert clean_text("A  cat.\n\nIt sat .  Then left . ") == "A cat. It sat. Then left. "
    assert qa_text("Tom met his friend _ .", "at home") == "Tom met his friend at home ."
    assert qa_text("Where did Tom go?", "home") == "Where did Tom go? home"


def test_pair_layout_types_and_padding():
    ids, types, mask = pair_ids([7, 8], [9, 10, 11], 10, CLS, SEP, PAD)
    assert ids == [CLS, 7, 8, SEP, 9, 10, 11, SEP, PAD, PAD]
    assert types == [0, 0, 0, 0, 1, 1, 1, 1, 0, 0]
    assert mask == [1] * 8 + [0, 0]


def test_total_truncation_keeps_the_final_sep():
    ids, types, mask = pair_ids([7, 8], list(range(20, 40)), 8, CLS, SEP, PAD)
    assert ids == [CLS, 7, 8, SEP, 20, 21, 22, SEP]
    assert types == [0, 0, 0, 0, 1, 1, 1, 1] and mask == [1] * 8


def test_build_inputs_truncates_qa_and_total():
    q = RaceQuestion(uid="x#0", article="a" * 600, question="q" * 200 + " _", options=("1", "2", "3", "4"),
                     label=2, level="high", doc_id="x")
    batch = build_inputs([q], CharTokenizer(), max_seq_length=512, max_qa_length=128)
    assert batch.input_ids.shape == (1, 4, 512) and batch.labels.tolist() == [2]
    row = batch.input_ids[0, 1].tolist()
    assert row[0] == CLS and row[129] == SEP and row[-1] == SEP  # qa cut to 128 tokens
    assert row[1:129] == [1000 + ord("q")] * 128
    assert batch.token_type_ids[0, 1, :130].sum() == 0 and batch.token_type_ids[0, 1, 130:].tolist() == [1] * 382
    assert batch.attention_mask.all()


def test_build_inputs_with_bert_wordpiece():
    tok = pytest.importorskip("megazoo.core.data.tokenizers").wordpiece_tokenizer()
    qs = read_race_dir(FIXTURE, "train")
    batch = build_inputs(qs, tok, max_seq_length=96, max_qa_length=32)
    assert batch.input_ids.shape == (5, 4, 96)
    q = next(i for i, q in enumerate(qs) if q.question.startswith("Lena waters"))
    ids = batch.input_ids[q, 1]
    n = int(batch.attention_mask[q, 1].sum())
    text = tok.decode(ids[:n].tolist())
    assert text.startswith("[CLS] lena waters the tomatoes before school. [SEP] lena keeps a small garden")
    assert text.endswith("[SEP]") and (ids[n:] == tok.pad).all()
    sel = batch.select([q])  # columns that are padding everywhere are dropped
    assert sel.input_ids.shape[-1] == int(batch.attention_mask[q].sum(-1).max())


def test_build_inputs_needs_bert_specials():
    tok = CharTokenizer()
    tok.cls = None
    with pytest.raises(ValueError, match="has no cls token"):
        build_inputs([], tok)
