"""SBIC v2 readers: per-post aggregation checked by hand on a fixture, the aggregated layout, the
shipped hand-written set, and each malformed file with its `file:line: problem` message."""

from pathlib import Path

import pytest

from megazoo.tasks.bias.data import SbicFormatError, load_posts, read_aggregated, read_annotations
from megazoo.tasks.bias.generate import generate_sbic, read_posts, shipped_dir

FIX = Path(__file__).parent / "fixtures" / "bias"
TINY = FIX / "SBIC.v2.tiny.csv"
BEACH, CLOWN, IDIOT, BUS = "Nice day at the beach.", "You absolute clown.", "Shut up, idiot.", "The bus was late\nagain."


def _by_text(posts):
    return {p.text: p for p in posts}


def test_offensive_mean_over_annotators_then_threshold():
    posts = read_annotations(TINY, "offensive")
    assert [p.text for p in posts] == [BEACH, CLOWN, IDIOT, BUS]  # order of first appearance
    got = _by_text(posts)
    # beach: 0.0, 0.5, 0.0 -> 1/6; clown: 1.0, 0.5, 0.0 -> 0.5 (>= 0.5: positive)
    assert got[BEACH].mean == pytest.approx(1 / 6) and got[BEACH].label == 0 and got[BEACH].annotators == 3
    assert got[CLOWN].mean == pytest.approx(0.5) and got[CLOWN].label == 1
    # idiot: w1 has two rows (two targeted groups) and counts once; w2 agrees -> 1.0
    assert got[IDIOT].mean == 1.0 and got[IDIOT].annotators == 2 and got[IDIOT].target_categories == ("gender", "social")
    # bus (a quoted post over two lines): w3 left offensiveYN empty, so only w2's 0.0 counts
    assert got[BUS].mean == 0.0 and got[BUS].annotators == 2 and got[BUS].label == 0


def test_other_categories_and_target_categories():
    intent = _by_text(read_annotations(TINY, "intent"))
    assert [intent[t].label for t in (BEACH, CLOWN, IDIOT, BUS)] == [0, 1, 1, 0]
    group = _by_text(read_annotations(TINY, "group"))  # whoTarget: empty cells are unanswered
    assert [group[t].mean for t in (BEACH, CLOWN, IDIOT, BUS)] == [0.0, 0.0, 1.0, 0.0]
    gender = _by_text(read_annotations(TINY, "group:gender"))  # w1 names gender, w2 does not -> 0.5
    assert gender[IDIOT].mean == 0.5 and gender[IDIOT].label == 1 and gender[BEACH].label == 0
    race = _by_text(read_annotations(TINY, "group:race"))
    assert race[IDIOT].label == 0
    with pytest.raises(ValueError, match="unknown category 'hateful'"):
        read_annotations(TINY, "hateful")


def test_aggregated_csv_and_layout_detection():
    agg = read_aggregated(FIX / "SBIC.v2.agg.tiny.csv", "offensive")
    assert [(p.text, p.label) for p in agg] == [(BEACH, 0), (CLOWN, 1), (IDIOT, 1)]
    assert agg[0].mean == pytest.approx(0.1667)
    assert [p.label for p in load_posts(FIX / "SBIC.v2.agg.tiny.csv", "group")] == [0, 0, 1]
    assert [p.label for p in load_posts(TINY, "offensive")] == [0, 1, 1, 0]


def test_missing_post_column():
    with pytest.raises(SbicFormatError) as err:
        load_posts(FIX / "no_post.csv")
    assert str(err.value).startswith(f"{FIX / 'no_post.csv'}:1: no `post` column")


def test_yn_value_that_is_not_a_number():
    with pytest.raises(SbicFormatError) as err:
        read_annotations(FIX / "bad_yn.csv", "offensive")
    assert str(err.value) == f"{FIX / 'bad_yn.csv'}:3: offensiveYN is 'yes', not a number (1.0, 0.5 or 0.0)"
    with pytest.raises(SbicFormatError, match=":3: offensiveYN is 'yes'"):  # whatever category is asked
        read_annotations(FIX / "bad_yn.csv", "intent")


def test_shipped_set_is_the_generator_output(tmp_path):
    counts = generate_sbic(tmp_path, seed=0)
    for name in ("trn", "dev", "tst", "agg.trn", "agg.dev", "agg.tst"):
        assert (tmp_path / f"SBIC.v2.{name}.csv").read_text() == (shipped_dir() / f"SBIC.v2.{name}.csv").read_text()
    written = sum(len(v["ok"]) + len(v["offensive"]) for v in read_posts().values())
    assert written >= 120 and sum(c["posts"] for c in counts.values()) == written
    splits = {s: load_posts(shipped_dir() / f"SBIC.v2.{s}.csv") for s in ("trn", "dev", "tst")}
    texts = [p.text for posts in splits.values() for p in posts]
    assert len(texts) == len(set(texts)) == written  # each post in one split only
    for s, posts in splits.items():
        assert {p.label for p in posts} == {0, 1} and all(p.annotators == 3 for p in posts), s
    offensive = {t for v in read_posts().values() for t in v["offensive"]}
    assert all((p.label == 1) == (p.text in offensive) for posts in splits.values() for p in posts)
