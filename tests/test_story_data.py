"""tasks/story data: ROCStories readers (raw and Story Cloze layouts), bad rows, the seeded 90/5/5
split, reversible delexicalisation, the generated set and the hand-written evaluation set."""

from __future__ import annotations

from pathlib import Path

import pytest

from megazoo.core.data.errors import DataError
from megazoo.tasks.story.data import Story, read_rocstories, split_stories, write_rocstories
from megazoo.tasks.story.delex import delexicalise, relexicalise, relexicalise_story
from megazoo.tasks.story.generate import generate_stories, write_generated
from megazoo.tasks.story.keywords import story_keywords

FIX = Path(__file__).parent / "fixtures" / "story"
HANDWRITTEN = Path(__file__).parent.parent / "tasks" / "story" / "handwritten.csv"


def test_raw_csv_with_quotes_and_commas():
    stories = read_rocstories(FIX / "rocstories_raw.csv")
    assert [s.id for s in stories] == ["9a1f", "b2c3", "c4d5"]
    assert stories[2].title == "Quotes, Commas"
    assert stories[2].sentences[0] == 'Mike said "hello, friend" to the baker.'
    assert stories[2].sentences[3] == "It was warm, soft and fresh."
    assert all(len(s.sentences) == 5 for s in stories)


def test_story_cloze_layout_takes_the_right_ending():
    a, b = read_rocstories(FIX / "cloze_2016.csv")
    assert a.id == "e5f6" and a.sentences[4] == "She was relieved."
    assert b.sentences[4] == "He came home with a puppy." and b.sentences[:2] == ["Paul wanted a dog.",
                                                                                 "His parents said no."]


def test_row_with_fewer_than_five_sentences_names_file_and_line():
    with pytest.raises(DataError) as e:
        read_rocstories(FIX / "short_row.csv")
    assert str(e.value) == f"{FIX / 'short_row.csv'}:3: a story needs five sentences, this row has 4"


def test_unknown_header_and_missing_file(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("id,text\n1,hello\n")
    with pytest.raises(DataError, match=r"x\.csv:1: unknown header"):
        read_rocstories(bad)
    with pytest.raises(DataError, match="no such file"):
        read_rocstories(tmp_path / "missing.csv")


def test_write_then_read_round_trips(tmp_path):
    stories = read_rocstories(FIX / "rocstories_raw.csv")
    assert read_rocstories(write_rocstories(tmp_path / "out.csv", stories)) == stories


def test_split_is_seeded_90_5_5_and_disjoint():
    stories = [Story(f"s{i}", "", ["a."] * 5) for i in range(200)]
    parts = split_stories(stories, seed=3)
    assert [len(parts[k]) for k in ("train", "valid", "test")] == [180, 10, 10]
    ids = [s.id for k in parts for s in parts[k]]
    assert sorted(ids) == sorted(s.id for s in stories)
    assert split_stories(stories, seed=3) == parts
    assert split_stories(stories, seed=4)["test"] != parts["test"]


def test_delexicalisation_replaces_names_by_gender_and_reverses_exactly():
    story = Story("1", "Anna and Tom", ["Anna went to the market with Tom.", "Will she buy apples, Tom asked.",
                                        "Rose was there too.", "The seller gave Rose a pear.",
                                        "Jo and Anna went home happy."])
    d = delexicalise(story)
    assert d.sentences == ["[FEMALE] went to the market with [MALE].", "Will she buy apples, [MALE] asked.",
                           "[FEMALE] was there too.", "The seller gave [FEMALE] a pear.",
                           "[NEUTRAL] and [FEMALE] went home happy."]
    assert d.title == "[FEMALE] and [MALE]"
    back = relexicalise_story(d)
    assert (back.title, back.sentences) == (story.title, story.sentences)
    # a generated sentence takes the story's first name of each kind
    assert relexicalise("[MALE] thanked [FEMALE].", d.names, len(d.names))[0] == "Tom thanked Anna."


def test_generated_set_is_seeded_varied_and_in_the_official_format(tmp_path):
    files = write_generated(tmp_path, n=200, seed=1)
    stories = read_rocstories(files["stories"])
    assert len(stories) == 200 and [len(read_rocstories(files[k])) for k in ("train", "valid", "test")] == [180, 10, 10]
    assert generate_stories(5, seed=1) == stories[:5]
    assert len({s.sentences[1] for s in stories}) > 100  # goals vary with place, verb and object
    keywords = {w for s in stories[:60] for ws in story_keywords(delexicalise(s).sentences) for w in ws}
    assert len(keywords) > 60


def test_hand_written_set_has_at_least_20_stories_with_names():
    stories = read_rocstories(HANDWRITTEN)
    assert len(stories) >= 20 and len({s.id for s in stories}) == len(stories)
    delexed = [delexicalise(s) for s in stories]
    assert sum(bool(d.names) for d in delexed) >= 20


def test_data_stage_splits_a_given_csv_and_writes_keywords_and_knowledge(tmp_path, capsys):
    import json

    from megazoo.cli import main
    from megazoo.tasks.story.knowledge import read_knowledge

    out = tmp_path / "d"
    assert main(["task", "story", "data", str(out), "--rocstories", str(FIX / "rocstories_raw.csv")]) == 0
    assert [len(read_rocstories(out / f"{k}.csv")) for k in ("train", "valid", "test")] == [1, 1, 1]
    rows = [json.loads(x) for x in (out / "handwritten-keywords.jsonl").read_text().splitlines()]
    assert len(rows) == len(read_rocstories(HANDWRITTEN)) and all(len(r["keywords"]) == 4 for r in rows)
    heads = {t.head for t in read_knowledge(out / "knowledge.csv")}
    assert {w for r in rows for ws in r["keywords"] for w in ws} & heads
    assert main(["task", "story", "data", str(tmp_path / "e"), "--rocstories", str(FIX / "short_row.csv")]) == 2
    assert capsys.readouterr().err.strip().endswith("short_row.csv:3: a story needs five sentences, this row has 4")
