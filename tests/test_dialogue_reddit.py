"""Reddit-style dumps (tasks/dialogue/reddit.py): the hand-made fixture (12 comments) read into the
right threads (root-to-leaf paths, replies in time order, an orphan starting its own thread, a removed
comment ending the paths through it, a single comment no conversation), actors (no [deleted]) and
linked URLs; the .gz read directly, also by the generic readers; every bad line one `file:line` error,
a line without `parent_id` also through the CLI; a held-out share keeps a thread together."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from megazoo.cli import main as megazoo
from megazoo.eval.readers.common import LineError
from megazoo.tasks.dialogue.builder import split_conversations
from megazoo.tasks.dialogue.data import read_any, read_conversations
from megazoo.tasks.dialogue.links import find_urls
from megazoo.tasks.dialogue.reddit import read_reddit

FIXTURE = Path(__file__).parent / "fixtures" / "dialogue" / "reddit.jsonl"
THREADS = {
    "t3_s1/a3": [("ann", "Owls hunt at night, see https://en.wikipedia.org/wiki/Owl for more."),
                 ("bob", "Do they really? I thought they slept all night."), ("ann", "Yes, most owls are nocturnal.")],
    "t3_s1/a4": [("ann", "Owls hunt at night, see https://en.wikipedia.org/wiki/Owl for more."),
                 ("cy", "Barn owls are my favourite ([link](https://www.audubon.org/barn-owl)).")],
    "t3_s2/b3": [("bob", "Green or black tea? https://example.org/tea#types"), ("[deleted]", "Black, always."),
                 ("ann", "Same here, with milk.")],
    "t3_s2/b5": [("dee", "Continuing from before: oolong is great."), ("ann", "Agreed.")],
}


def check_fixture(found):
    convs = found.conversations
    assert {c.id: [(t.speaker, t.text) for t in c.turns] for c in convs} == THREADS
    assert [c.id for c in convs] == list(THREADS)  # a2 (time 110) before a4 (time 130), though a4 comes first
    assert [c.thread for c in convs] == ["t3_s1", "t3_s1", "t3_s2", "t3_s2"]
    assert [c.topic for c in convs] == ["birds", "birds", "tea", "tea"]
    assert [c.line for c in convs] == [4, 2, 9, 11]  # each conversation's last comment
    assert found.actors == {"ann": ["t3_s1/a3", "t3_s1/a4", "t3_s2/b3", "t3_s2/b5"], "bob": ["t3_s1/a3", "t3_s2/b3"],
                            "cy": ["t3_s1/a4"], "dee": ["t3_s2/b5"]}
    assert found.urls == {"https://en.wikipedia.org/wiki/Owl": ["a1"], "https://www.audubon.org/barn-owl": ["a4"],
                          "https://example.org/tea#types": ["b1"]}  # not a6's: it sits below a removed comment
    assert (found.comments, found.removed, found.orphans) == (12, 2, 1)


def test_fixture_threads_actors_and_urls():
    check_fixture(read_reddit(FIXTURE))


def test_gz_read_directly_and_by_the_generic_readers(tmp_path):
    gz = tmp_path / "RC_2020-01.jsonl.gz"
    gz.write_bytes(gzip.compress(FIXTURE.read_bytes()))
    check_fixture(read_reddit(gz))
    assert [c.id for c in read_conversations(gz)] == list(THREADS)
    samples = read_any(gz)  # one sample per turn after the first, as any conversation file
    assert len(samples) == sum(len(t) - 1 for t in THREADS.values())
    assert samples[0].turns == [THREADS["t3_s1/a3"][0][1]] and samples[0].response == THREADS["t3_s1/a3"][1][1]


def write_lines(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def comment(cid, parent, **extra):
    return {"id": cid, "parent_id": parent, "link_id": "t3_s", "author": "ann", "body": f"text {cid}", **extra}


def test_a_line_without_parent_id_is_one_error(tmp_path, capsys):
    bad = write_lines(tmp_path / "dump.jsonl", [comment("a", "t3_s"), comment("b", "t1_a"),
                                                {k: v for k, v in comment("c", "t1_b").items() if k != "parent_id"}])
    with pytest.raises(LineError) as e:
        read_reddit(bad)
    assert str(e.value).startswith(f'{bad}:3: missing "parent_id"')
    assert megazoo(["task", "dialogue", "flatten", str(bad), "--out", str(tmp_path / "out.tsv")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f'{bad}:3: missing "parent_id"' in err
    assert not (tmp_path / "out.tsv").exists()


@pytest.mark.parametrize("rows, line, problem", [
    ([comment("a", "t3_s"), comment("b", "a")], 2, '"parent_id" must be t1_ID (a comment) or t3_ID'),
    ([comment("a", "t3_s", link_id="s")], 1, '"link_id" must be t3_ID'),
    ([comment("a", "t3_other")], 1, '"parent_id" t3_other is a submission but "link_id" is t3_s'),
    ([comment("a", "t3_s"), comment("a", "t3_s")], 2, "comment id 'a' already given on line 1"),
    ([comment("a", "t1_a")], 1, '"parent_id" names the comment itself'),
    ([comment("a", "t3_s"), comment("b", "t1_c"), comment("c", "t1_b")], 2, "comment 'b' is in a cycle"),
    ([comment("a", "t3_s", author=None)], 1, '"author" must be a string, got NoneType'),
    ([comment("a", "t3_s", created_utc="noon")], 1, '"created_utc" must be a number'),
    ([comment("a", "t3_s"), "[1, 2]"], 2, "expected a JSON object"),
])
def test_bad_lines_name_file_and_line(tmp_path, rows, line, problem):
    path = write_lines(tmp_path / "dump.jsonl", rows)
    with pytest.raises(LineError) as e:
        read_reddit(path)
    assert str(e.value).startswith(f"{path}:{line}: ") and problem in str(e.value)


def test_find_urls():
    text = ("See https://en.wikipedia.org/wiki/Owl_(bird). Also [this](https://a.org/x?y=1&z=2), "
            "and <https://b.org/>! Again https://en.wikipedia.org/wiki/Owl_(bird) http:// nothing")
    assert find_urls(text) == ["https://en.wikipedia.org/wiki/Owl_(bird)", "https://a.org/x?y=1&z=2",
                               "https://b.org/"]


def test_a_held_out_share_keeps_each_thread_together(tmp_path):
    data = tmp_path / "dump.jsonl"
    shutil.copy(FIXTURE, data)
    for seed in range(4):
        train, valid = split_conversations(data, 0.5, seed)
        assert len(train) == len(valid) == 2  # two threads of two conversations each
        assert len({c.thread for c in train}) == len({c.thread for c in valid}) == 1
        assert {c.thread for c in train} != {c.thread for c in valid}
