"""The hand-made Wizard of Wikipedia-format set (tasks/dialogue/wow_handmade.json): it reads with the
official reader, holds at least 30 dialogues, every checked sentence is verbatim a sentence of a passage
its turn retrieved (the one checked_passage names, at the index its key gives), every passage is the
WordNet text of a topic, and the topics split as documented (seen topics to test_random_split, unseen
ones to test_topic_split), which is what `data` writes unless --wow-test generated."""

from __future__ import annotations

import json

import pytest

from megazoo.eval.metrics.dialogue import NO_PASSAGE
from megazoo.tasks.dialogue.data import read_wow
from megazoo.tasks.dialogue.facts import load_topics, topic_facts
from megazoo.tasks.dialogue.handmade import HANDMADE, load_handmade, split_handmade, write_handmade

SEEN = {t.name for t in load_topics() if t.seen}


def wizard_turns(dialogues):
    for d in dialogues:
        for turn in d["dialog"]:
            if "wizard" in turn["speaker"].lower():
                yield d, turn


def test_the_set_reads_with_the_official_reader():
    dialogues = load_handmade()
    samples = read_wow(HANDMADE)
    assert len(dialogues) >= 30
    grounded = [s for s in samples if s.knowledge != NO_PASSAGE]
    assert len(grounded) >= 60 and len(samples) - len(grounded) >= 10  # some no_passages_used turns, as in WoW
    assert all(s.turns and s.response for s in samples)
    for d in dialogues:  # ParlAI's fields; the first speaker is 0_, the other 1_, turns alternate
        assert {"chosen_topic", "persona", "wizard_eval", "chosen_topic_passage", "dialog"} <= set(d)
        speakers = [t["speaker"] for t in d["dialog"]]
        assert speakers[0].startswith("0_") and speakers[1].startswith("1_")
        assert set(speakers[::2]) == {speakers[0]} and set(speakers[1::2]) == {speakers[1]}
        assert {s.split("_")[1] for s in speakers} == {"Wizard", "Apprentice"}


def test_every_checked_sentence_is_in_its_retrieved_passage():
    checked = 0
    for _, turn in wizard_turns(load_handmade()):
        (key, sentence), = turn["checked_sentence"].items()
        (pkey, title), = turn["checked_passage"].items()
        if sentence == NO_PASSAGE:
            assert key == pkey == title == NO_PASSAGE
            continue
        passages = {t: s for p in turn["retrieved_passages"] for t, s in p.items()}
        assert title in passages and title in turn["retrieved_topics"]
        index = int(key.rsplit("_", 1)[1])
        assert passages[title][index] == sentence  # verbatim, where its key says
        assert key.rsplit("_", 1)[0] == pkey == f"{pkey.split('_')[0]}_{title.replace(' ', '_')}"
        checked += 1
    assert checked >= 60


def test_apprentice_turns_check_nothing_and_texts_are_written_once():
    dialogues = load_handmade()
    texts = [t["text"] for d in dialogues for t in d["dialog"]]
    assert len(set(texts)) == len(texts)  # no turn repeated: not template-made
    for d in dialogues:
        for t in d["dialog"]:
            if "apprentice" in t["speaker"].lower():
                assert t["checked_sentence"] == {} and t["checked_passage"] == {}


def test_passages_are_the_wordnet_sentences_of_topics():
    facts = {t.name: list(topic_facts(t).values()) for t in load_topics()}
    for d in load_handmade():
        assert d["chosen_topic_passage"] == facts[d["chosen_topic"]]
        for t in d["dialog"]:
            assert t["retrieved_topics"][0] == d["chosen_topic"]
            for p in t["retrieved_passages"]:
                (title, sentences), = p.items()
                assert sentences == facts[title]


def test_topics_split_as_documented(tmp_path):
    counts = write_handmade(tmp_path)
    assert counts["test_random_split"] + counts["test_topic_split"] == len(load_handmade())
    seen_samples = read_wow(tmp_path / "test_random_split.json")
    unseen_samples = read_wow(tmp_path / "test_topic_split.json")
    assert counts["test_topic_split"] >= 10 and counts["test_random_split"] >= 20
    assert {s.topic for s in seen_samples} <= SEEN  # every sample's topic (its checked passage) is seen
    assert not {s.topic for s in unseen_samples} & SEEN


def test_a_topic_outside_topics_txt_is_refused():
    with pytest.raises(ValueError, match="hand-made dialogue on 'Zebra': not a topic of topics.txt"):
        split_handmade([{"chosen_topic": "Zebra", "dialog": []}])


def test_generate_writes_the_hand_made_test_files_unless_asked_for_generated_ones(tmp_path):
    from megazoo.tasks.dialogue.generate import generate_wow

    counts = generate_wow(tmp_path / "made", 0)
    expected = split_handmade(load_handmade())
    for name, dialogues in expected.items():
        assert json.loads((tmp_path / "made" / f"{name}.json").read_text()) == dialogues
        assert counts[name] == len(dialogues)
    generate_wow(tmp_path / "gen", 0, test="generated")
    for name in expected:
        dialogues = json.loads((tmp_path / "gen" / f"{name}.json").read_text())
        assert dialogues and all(d["dialog"][0]["speaker"] == "1_Apprentice" for d in dialogues)
        assert dialogues != expected[name]
    train = json.loads((tmp_path / "made" / "train.json").read_text())
    assert {d["chosen_topic"] for d in train} == SEEN  # the hand-made seen topics are all in train
    with pytest.raises(ValueError, match="test must be one of handmade, generated"):
        generate_wow(tmp_path / "bad", 0, test="both")
