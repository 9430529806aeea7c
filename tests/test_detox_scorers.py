"""The scorer interface: the offline profanity classifier, a Hugging Face sequence-classifier folder
(a tiny BERT made here: its toxic label's softmax probability), the score cache keyed by text hash
(a second pass asks the scorer nothing), and an unknown scorer name."""

from __future__ import annotations

import pytest
import torch

from megazoo.tasks.detox.cache import ScoreCache
from megazoo.tasks.detox.scorers import HFScorer, ProfanityScorer, make_scorer, score_texts, toxic_label


class Counting:
    key = "counting"

    def __init__(self):
        self.asked: list[str] = []

    def score(self, texts):
        self.asked.extend(texts)
        return [len(t) / 100 for t in texts]


def test_profanity_scorer_separates_rude_from_plain():
    rude, plain = ProfanityScorer().score(["shut up you stupid idiot", "the module reads configuration files"])
    assert rude > 0.5 > plain


def test_cache_by_text_hash_survives_a_reload_and_skips_known_texts(tmp_path):
    path = tmp_path / "scores.cache.jsonl"
    scorer = Counting()
    first = score_texts(scorer, ["abc", "", "abcdef", "abc"], ScoreCache(path))
    assert first == [0.03, -1.0, 0.06, 0.03] and scorer.asked == ["abc", "abcdef"]  # duplicates asked once
    with open(path, "a") as f:
        f.write('{"key": "torn')  # a kill mid-write leaves a torn last line: ignored
    again = Counting()
    assert score_texts(again, ["abcdef", "abc", "xy"], ScoreCache(path)) == [0.06, 0.03, 0.02]
    assert again.asked == ["xy"]
    other = Counting()
    other.key = "another scorer"  # the key holds the scorer: another scorer's scores are not reused
    score_texts(other, ["abc"], ScoreCache(path))
    assert other.asked == ["abc"]


def make_classifier(folder, labels: dict[int, str]):
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "you", "are", "nice", "awful", "hello"]
    folder.mkdir()
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    tok = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=32, num_labels=len(labels),
                     id2label=labels, label2id={v: k for k, v in labels.items()})
    model = BertForSequenceClassification(cfg).eval()
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return model, tok


def test_hf_folder_scores_its_toxic_label(tmp_path):
    model, tok = make_classifier(tmp_path / "clf", {0: "toxic", 1: "non-toxic"})
    texts = ["you are awful", "hello you are nice"]
    scorer = make_scorer(f"hf:{tmp_path / 'clf'}")
    assert isinstance(scorer, HFScorer) and scorer.label == 0
    with torch.no_grad():
        want = model(**tok(texts, padding=True, return_tensors="pt")).logits.softmax(-1)[:, 0].tolist()
    assert scorer.score(texts) == pytest.approx(want, abs=1e-6)


def test_toxic_label_choice():
    assert toxic_label({0: "LABEL_0", 1: "LABEL_1"}, "d") == 1
    assert toxic_label({"0": "Non-Toxic", "1": "Toxic"}, "d") == 1
    with pytest.raises(ValueError, match="none of its labels"):
        toxic_label({0: "joy", 1: "anger", 2: "fear"}, "d")


def test_unknown_scorer_names_the_known_ones(tmp_path):
    with pytest.raises(ValueError, match=r"unknown scorer `profanty`; did you mean `profanity`\? \(scorers: "
                                         r"profanity, hf:DIR, perspective\)"):
        make_scorer("profanty")
    with pytest.raises(FileNotFoundError, match="no config.json there"):
        make_scorer(f"hf:{tmp_path}")
