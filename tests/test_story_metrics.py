"""tasks/story metrics against hand-computed values (fixtures/story/generations.jsonl), the keywords
file format and its errors, and the stages' one-line CLI errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from megazoo.cli import main
from megazoo.core.data.errors import DataError
from megazoo.eval.metrics.generation import distinct_n, repeat_n
from megazoo.tasks.story.evaluate import contains, control_rate, distinct_4, repeat_4, story_tokens
from megazoo.tasks.story.keywords_file import read_keywords
from tests.evaluation_shape import check_evaluation

FIX = Path(__file__).parent / "fixtures" / "story"


def gens() -> list[dict]:
    return [json.loads(x) for x in (FIX / "generations.jsonl").read_text().splitlines()]


def test_repeat_4_and_distinct_4_equal_hand_computed_values():
    stories = [g["sentences"] for g in gens()]
    # story 1, 26 lowercased word tokens ("he walked to the park ." ...): 23 4-grams, "ran and ran and"
    # and "and ran and ran" twice each -> 21 distinct; story 2, 16 tokens ("she ate cake . it was good
    # . ..."): 13 4-grams, all distinct. Repeat-4 = 1/2, Distinct-4 = (21 + 13) / (23 + 13)
    assert repeat_4(stories) == 0.5
    assert distinct_4(stories) == pytest.approx(34 / 36)
    # the shared definitions on the same word tokens
    tokens = [story_tokens(s) for s in stories]
    assert repeat_n(tokens, 4) == 0.5 and distinct_n(tokens, 4) == pytest.approx(34 / 36)


# Five hand-made generated stories and their word tokens written out by hand (lowercased; "." "!" ","
# and "n't" split off; a placeholder one token).
HAND = [
    (["[MALE] went to the park.", "He went to the park again."],
     "[male] went to the park . he went to the park again ."),
    (["She didn't like the cake.", "She did not like the tea."],
     "she did n't like the cake . she did not like the tea ."),
    (["We ran home!", "We ran home, fast!", "We ran home!"],
     "we ran home ! we ran home , fast ! we ran home !"),
    (["Ok."], "ok ."),
    (["[FEMALE] smiled at [MALE].", "She did not like the tea."],
     "[female] smiled at [male] . she did not like the tea ."),
]


def test_repeat_4_and_distinct_4_count_word_tokens_as_the_paper_does():
    stories = [s for s, _ in HAND]
    assert [story_tokens(s) for s in stories] == [t.split() for _, t in HAND]
    # 4-grams by hand:
    # 1: 13 tokens, 10 4-grams; "went to the park" twice (on whitespace "park." and "park" differ) -> 9 distinct
    # 2: 14 tokens, 11 4-grams, all distinct
    # 3: 14 tokens, 11 4-grams; "we ran home !" and "! we ran home" twice each -> 9 distinct
    # 4: 2 tokens, no 4-gram (no repeat)
    # 5: 12 tokens, 9 4-grams, none repeated, but 5 of them are story 2's (". she did not" ...
    #    "like the tea .") -> 4 new distinct ones across the set
    # Repeat-4 = stories 1 and 3 of 5; Distinct-4 = (9 + 11 + 9 + 0 + 4) / (10 + 11 + 11 + 0 + 9)
    assert repeat_4(stories) == pytest.approx(2 / 5)
    assert distinct_4(stories) == pytest.approx(33 / 41)
    # on whitespace-split text (the old rule) neither repeat is seen: "park." is not "park", "home!" not "home,"
    texts = [" ".join(s).lower() for s in stories]
    assert repeat_n(texts, 4) == 0.0


def test_control_rate_counts_morphological_variants():
    g = gens()
    # walk~walked, dogs~dog, run~ran, happy no, home yes | cake yes, tea no, sleep~slept: 6 of 8
    assert control_rate([x["sentences"] for x in g], [x["keywords"] for x in g]) == 0.75
    assert contains("The children played.", "child") and not contains("He walked.", "talk")
    assert contains("They set it up.", "set up") and not contains("They set it.", "set up")


def test_keywords_file_reads_both_line_forms(tmp_path):
    f = tmp_path / "k.jsonl"
    f.write_text('{"id": "a", "keywords": [["Dog"], [], ["run", "park"], ["home"]]}\n'
                 '[["x"], ["y"], ["z"], ["w"]]\n')
    assert read_keywords(f, 2) == [[["dog"], [], ["run", "park"], ["home"]], [["x"], ["y"], ["z"], ["w"]]]


@pytest.mark.parametrize("text, n, message", [
    ('[["a"], ["b"], ["c"], ["d"]]\n[["a"], ["b"], ["c"], ["d"]]\n', 1,
     "2: more stories of keywords than the 1 stories of data.csv"),
    ('[["a"], ["b"], ["c"], ["d"]]\n\n', 3, "1: 1 stories of keywords for the 3 stories of data.csv"),
    ('[["a"], ["b"], ["c"]]\n', 1, "1: expected 4 lists of keywords (one per generated sentence), or "
                                   '{"keywords": [...]} holding them'),
    ('[["a"], ["b"], ["c"], ["d"]]\n{"keywords": \n', 2, "2: not valid JSON (Expecting value)"),
])
def test_keywords_file_errors_name_file_and_line(tmp_path, text, n, message):
    f = tmp_path / "k.jsonl"
    f.write_text(text)
    with pytest.raises(DataError) as e:
        read_keywords(f, n, "data.csv")
    assert str(e.value) == f"{f}:{message}"


def test_cli_errors_are_one_line_with_exit_code_2(tmp_path, capsys):
    def megazoo(*args):
        capsys.readouterr()
        code = main(["task", "story", *args])
        return code, capsys.readouterr().err

    data = tmp_path / "data.csv"
    shutil.copyfile(FIX / "rocstories_raw.csv", data)
    keywords = tmp_path / "k.jsonl"
    keywords.write_text('[["a"], ["b"], ["c"], ["d"]]\n' * 2)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    # the stories the fixture's generations were made from (evaluate checks their ids against --data)
    gen_data = tmp_path / "gen-data.csv"
    gen_data.write_text("storyid,storytitle,sentence1,sentence2,sentence3,sentence4,sentence5\n"
                        "s1,Out,Max went out.,A.,B.,C.,D.\ns2,Down,Mia sat down.,A.,B.,C.,D.\n")
    runs = {
        "keywords": megazoo("sample", "--checkpoint", str(ckpt), "--data", str(data), "--keywords", str(keywords),
                            "--out", str(tmp_path / "g.jsonl")),
        "short": megazoo("sample", "--checkpoint", str(ckpt), "--data", str(FIX / "short_row.csv"),
                         "--out", str(tmp_path / "g.jsonl")),
        "knowledge": megazoo("sample", "--checkpoint", str(ckpt), "--data", str(data), "--knowledge",
                             str(FIX / "bad_kb.tsv"), "--out", str(tmp_path / "g.jsonl")),
        "evaluate": megazoo("evaluate", "--data", str(gen_data), "--generations", str(FIX / "generations.jsonl"),
                            "--keywords", str(keywords), "--out", str(tmp_path / "e2.json")),
    }
    expected = {
        "keywords": f"{keywords}:2: 2 stories of keywords for the 3 stories of {data}",
        "short": f"{FIX / 'short_row.csv'}:3: a story needs five sentences, this row has 4",
        "knowledge": f"{FIX / 'bad_kb.tsv'}:2: expected head<TAB>relation<TAB>tail (3 non-empty fields), got 1 "
                     f"field(s)",
        "evaluate": None,
    }
    for name, (code, err) in runs.items():
        if expected[name] is None:
            continue
        assert code == 2, (name, err)
        assert err.strip().splitlines() == [f"megazoo task story sample: error: {expected[name]}"]
    # the stage's older name still runs it, with a one-line note
    code, err = megazoo("generate", "--checkpoint", str(ckpt), "--data", str(FIX / "short_row.csv"), "--out",
                        str(tmp_path / "g.jsonl"))
    assert code == 2 and err.strip().splitlines() == [
        "megazoo task story: note: `generate` is now `sample`",
        f"megazoo task story generate: error: {expected['short']}"]
    # evaluate against the generations' own keywords: the hand-computed figures
    code, err = megazoo("evaluate", "--data", str(gen_data), "--generations", str(FIX / "generations.jsonl"), "--out",
                        str(tmp_path / "e.json"))
    assert code == 0, err
    out = check_evaluation(tmp_path / "e.json", "story")
    assert out["n"] == 2 and "ppl" not in out["metrics"]  # no --checkpoint: no perplexity
    assert out["metrics"]["repeat_4"] == 0.5 and out["metrics"]["control_rate"] == 0.75
    assert out["metrics"]["distinct_4"] == pytest.approx(34 / 36)
    assert out["predictions"] == "e.predictions.jsonl" and (out["keywords_followed"], out["keywords_given"]) == (6, 8)
    per_story = [json.loads(x) for x in (tmp_path / "e.predictions.jsonl").read_text().splitlines()]
    assert [(p["id"], p["keywords_followed"], p["keywords_given"]) for p in per_story] == [("s1", 4, 5), ("s2", 2, 3)]
    # keywords measured from another file: two stories' worth
    assert runs["evaluate"][0] == 0, runs["evaluate"][1]
    other = json.loads((tmp_path / "e2.json").read_text())
    assert other["keywords_given"] == 8 and other["metrics"]["control_rate"] == 0.0


def test_keyword_extractor_is_rake_by_default_yake_on_request_and_recorded(tmp_path, capsys):
    from megazoo.core.train.config import ConfigError
    from megazoo.tasks.story.builder import StoryTask
    from megazoo.tasks.story.data import Story
    from megazoo.tasks.story.inputs import keyword_pairs
    from megazoo.tasks.story.keywords import story_keywords

    def rows(folder):
        return [json.loads(x) for x in (folder / "handwritten-keywords.jsonl").read_text().splitlines()]

    raw = str(FIX / "rocstories_raw.csv")
    assert main(["task", "story", "data", str(tmp_path / "r"), "--rocstories", raw]) == 0
    assert main(["task", "story", "data", str(tmp_path / "y"), "--rocstories", raw, "--keyword-extractor", "yake"]) == 0
    rake, yake = rows(tmp_path / "r"), rows(tmp_path / "y")
    assert {r["extractor"] for r in rake} == {"rake"} and {r["extractor"] for r in yake} == {"yake"}
    assert [r["keywords"] for r in rake] != [r["keywords"] for r in yake]
    assert read_keywords(tmp_path / "r" / "handwritten-keywords.jsonl", len(rake)) == [r["keywords"] for r in rake]
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:  # argparse's own refusal, before anything is written
        main(["task", "story", "data", str(tmp_path / "k"), "--rocstories", raw, "--keyword-extractor", "kb"])
    assert e.value.code == 2 and not (tmp_path / "k").exists()
    assert "argument --keyword-extractor: invalid choice: 'kb' (choose from" in capsys.readouterr().err
    # training: task.keyword_extractor (config.yaml records it), rake unless set
    assert StoryTask.from_dict({}).keyword_extractor == "rake"
    with pytest.raises(ConfigError, match=r"^task.keyword_extractor must be one of rake, yake \(task story\), "
                                          r"got 'keybert'$"):
        StoryTask.from_dict({"keyword_extractor": "keybert"})
    story = Story("s", "t", ["[MALE] was on a long road trip.", "He stopped at a small diner.", "The food was great.",
                             "He felt refreshed.", "He drove on happily."])
    for extractor in ("rake", "yake"):
        words = story_keywords(story.sentences, 2, extractor)
        assert [r for _, r in keyword_pairs([story], 2, extractor)] == [" " + ", ".join(w) for w in words[1:]]
