"""The dialogue readers on hand-made fixtures: Wizard of Wikipedia (ParlAI JSON), Wizard of Internet
(JSONL) and conversation JSONL flattened to Megatron's 4-field TSV as its preprocessing does (one
sample per wizard turn after the first, history of every earlier turn, checked sentence or
no_passages_used); the TSV round trip; the bad inputs the issue names, each one `file:line: problem` (a bad dialogue of a
WoW array, streamed without counting lines: `file: item N: problem`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from megazoo.eval.readers.common import LineError
from megazoo.eval.readers.json_stream import ItemError
from megazoo.tasks.dialogue.data import (read_any, read_conversations, read_tsv, read_woi, read_wow,
                                          write_tsv)

FIX = Path(__file__).parent / "fixtures" / "dialogue"


def test_wow_flattened_as_megatron_does():
    samples = read_wow(FIX / "wow.json")
    rows = [(s.topic, s.turns, s.knowledge, s.response) for s in samples]
    assert rows == [
        ("Blue whale", ["I love the ocean."], "It is the largest animal known to have existed.",
         "The blue whale is the biggest animal ever!"),
        ("Blue whale", ["I love the ocean.", "The blue whale is the biggest animal ever!", "How big is it?"],
         "no_passages_used", "Up to thirty metres long."),
        ("Swing music", ["Do you like jazz? It started in New Orleans.", "Yes, I play it on the piano."],
         "Swing uses a strong rhythm section.", "Swing and blues notes are part of it."),
    ]
    assert [(s.item, s.line) for s in samples] == [(1, 0), (1, 0), (2, 0)]  # the dialogue's number; no line


def test_woi_flattened_with_selected_sentences_and_search_topic():
    rows = [(s.topic, s.turns, s.knowledge, s.response) for s in read_woi(FIX / "woi.jsonl")]
    assert rows == [
        ("Alps hiking", ["I want to hike in the Alps."], "Mont Blanc is the highest peak.",
         "Mont Blanc is the highest peak there."),
        ("no_topic", ["I want to hike in the Alps.", "Mont Blanc is the highest peak there.", "Is it hard to climb?"],
         "no_passages_used", "It can be, take a guide."),
        ("no_topic", ["Hello! What shall we talk about?", "Tea."],
         "Green tea is popular in Japan. Tea comes from Camellia sinensis.", "Green tea is popular in Japan."),
    ]


def test_conversations_and_tsv_round_trip(tmp_path):
    convs = read_conversations(FIX / "conversations.jsonl")
    assert [t.speaker for t in convs[0].turns] == ["ann", "bob", "ann"] and convs[0].knowledge
    samples = read_any(FIX / "conversations.jsonl")
    assert [(s.topic, s.turns, s.response) for s in samples] == [
        ("tea", ["Do you drink tea?"], "Every morning."),
        ("tea", ["Do you drink tea?", "Every morning."], "Green or black?"),
        ("c2", ["Hi."], "Hello there.")]
    assert samples[2].knowledge == "no_passages_used"
    every = read_wow(FIX / "wow.json") + read_woi(FIX / "woi.jsonl") + samples
    path = write_tsv(every, tmp_path / "all.tsv")
    first = path.read_text().split("\n")[0]
    assert first == ("Blue whale\tI love the ocean.\tIt is the largest animal known to have existed.\t"
                     "The blue whale is the biggest animal ever!")
    back = read_tsv(path)
    assert [(s.topic, s.turns, s.knowledge, s.response) for s in back] == \
        [(s.topic, s.turns, s.knowledge, s.response) for s in every]


def _wow(tmp_path, dialogues) -> Path:
    path = tmp_path / "train.json"
    path.write_text(json.dumps(dialogues, indent=1))
    return path


def test_wow_dialogue_without_dialog_names_file_and_item(tmp_path):
    path = _wow(tmp_path, [{"chosen_topic": "a", "dialog": [{"speaker": "0_Wizard", "text": "hi"}]},
                           {"chosen_topic": "b", "persona": "x"}])
    with pytest.raises(ItemError) as e:
        read_wow(path)
    assert str(e.value) == f'{path}: item 2: dialogue 2 has no "dialog" (the list of turns)'


def test_wow_turn_without_text_names_its_item_and_turn(tmp_path):
    path = _wow(tmp_path, [{"chosen_topic": "a", "dialog": [{"speaker": "1_Apprentice", "text": "hi"},
                                                            {"speaker": "0_Wizard", "checked_sentence": {}}]}])
    with pytest.raises(ItemError) as e:
        read_wow(path)
    assert str(e.value) == f'{path}: item 1: dialogue 1 turn 2 has no "text"'


def test_conversation_and_woi_turn_without_text(tmp_path):
    conv = tmp_path / "c.jsonl"
    conv.write_text('{"id": "x", "turns": [{"speaker": "a", "text": "hi"}]}\n\n'
                    '{"id": "y", "turns": [{"speaker": "a", "text": "hi"}, {"speaker": "b"}]}\n')
    with pytest.raises(LineError, match=r"c\.jsonl:3: turn 2 has no \"text\"$"):
        read_conversations(conv)
    woi = tmp_path / "w.jsonl"
    woi.write_text(json.dumps({"d": {"dialog_history": [{"action": "Apprentice => Wizard"}]}}) + "\n")
    with pytest.raises(LineError, match=r"w\.jsonl:1: dialogue d turn 1 has no \"text\"$"):
        read_woi(woi)


def test_tsv_line_with_too_few_fields(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text("topic\ta [SEP] b\tknow\tresp\n\ntopic\tonly three\tfields\n")
    with pytest.raises(LineError) as e:
        read_tsv(path)
    assert str(e.value).startswith(f"{path}:3: 3 tab-separated fields, expected 4")


def test_broken_wow_json_names_the_line(tmp_path):
    path = tmp_path / "valid_random_split.json"
    path.write_text('[\n {"chosen_topic": "a",\n  "dialog": [}\n]')
    with pytest.raises(LineError, match=r"valid_random_split\.json:3: not valid JSON"):
        read_wow(path)
