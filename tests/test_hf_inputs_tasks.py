"""The remaining readers take the same data as a Hugging Face dataset (issue #38, point 2): the rows of
each package's native fixture, written here as parquet and as a save_to_disk folder with `datasets`
(offline), give the examples the native file gives (dialogue: WoW, WoI, Reddit comments,
conversations; bias: SBIC both layouts; detox: RealToxicityPrompts; story: ROCStories, Story Cloze,
ConceptNet, triples; biomed: NER, ChemProt); a missing column or a cell of the wrong type is one line
naming the file, the row and the fix."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

datasets = pytest.importorskip("datasets")

from megazoo.eval.readers.common import LineError  # noqa: E402
from megazoo.eval.readers.hf_source import RowError, is_hf_source  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
FORMS = ("parquet", "disk")


def _write(tmp_path, rows, form, name="data", features=None) -> Path:
    """The rows as parquet or a save_to_disk folder."""
    ds = datasets.Dataset.from_list(rows, features=features)
    if form == "parquet":
        ds.to_parquet(str(tmp_path / f"{name}.parquet"))
        return tmp_path / f"{name}.parquet"
    ds.save_to_disk(str(tmp_path / name))
    return tmp_path / name


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _one_line(err, path, row=None) -> str:
    message = str(err.value)
    start = f"{path}: row {row}: " if row is not None else f"{path}: "
    assert message.startswith(start) and "\n" not in message, message
    assert isinstance(err.value, ValueError)  # the CLI boundary: one line, exit code 2
    return message


# ---- dialogue ------------------------------------------------------------------------------------------

def _samples(samples):
    return [(s.topic, s.turns, s.knowledge, s.response) for s in samples]


def _conversations(convs):
    return [(c.id, [(t.speaker, t.text) for t in c.turns], c.knowledge, c.topic, c.thread, c.links) for c in convs]


@pytest.mark.parametrize("form", FORMS)
def test_wow(tmp_path, form):
    from megazoo.tasks.dialogue.data import read_any, read_wow

    native = FIXTURES / "dialogue" / "wow.json"
    path = _write(tmp_path, json.loads(native.read_text()), form)  # a row per dialogue, the json's keys
    want = _samples(read_wow(native))
    assert is_hf_source(path) and want
    assert _samples(read_wow(path)) == want and _samples(read_any(path)) == want
    assert [s.item for s in read_wow(path)] == [s.item for s in read_wow(native)]


@pytest.mark.parametrize("form", FORMS)
def test_woi(tmp_path, form):
    from megazoo.tasks.dialogue.data import read_any, read_woi

    native = FIXTURES / "dialogue" / "woi.jsonl"
    rows = [{"dialog_id": key, **value} for obj in _jsonl(native) for key, value in obj.items()]
    path = _write(tmp_path, rows, form)
    want = _samples(read_woi(native))
    assert want and _samples(read_woi(path)) == want and _samples(read_any(path)) == want


@pytest.mark.parametrize("form", FORMS)
def test_reddit_comments(tmp_path, form):
    from megazoo.tasks.dialogue.builder import split_conversations
    from megazoo.tasks.dialogue.data import read_any, read_conversations
    from megazoo.tasks.dialogue.reddit import read_reddit

    native = FIXTURES / "dialogue" / "reddit.jsonl"
    path = _write(tmp_path, _jsonl(native), form)
    want, got = read_reddit(native), read_reddit(path)
    assert _conversations(got.conversations) == _conversations(want.conversations) != []
    assert (got.actors, got.urls, got.comments, got.removed, got.orphans) == \
        (want.actors, want.urls, want.comments, want.removed, want.orphans)
    assert _conversations(read_conversations(path)) == _conversations(read_conversations(native))
    assert _samples(read_any(path)) == _samples(read_any(native))
    split = [_conversations(part) for part in split_conversations(path, 0.5, 0)]
    assert split == [_conversations(part) for part in split_conversations(native, 0.5, 0)]


def test_reddit_timestamps_and_conversations(tmp_path):
    """created_utc as an Arrow timestamp orders replies as seconds do; conversation rows as the JSONL."""
    import datetime

    from megazoo.tasks.dialogue.data import read_conversations
    from megazoo.tasks.dialogue.reddit import read_reddit

    native = FIXTURES / "dialogue" / "reddit.jsonl"
    rows = _jsonl(native)
    for r in rows:
        r["created_utc"] = datetime.datetime.fromtimestamp(r["created_utc"], datetime.timezone.utc)
    path = _write(tmp_path, rows, "parquet")
    assert _conversations(read_reddit(path).conversations) == _conversations(read_reddit(native).conversations)
    conv = FIXTURES / "dialogue" / "conversations.jsonl"
    path = _write(tmp_path, _jsonl(conv), "disk", "conv")
    assert _conversations(read_conversations(path)) == _conversations(read_conversations(conv)) != []


def test_dialogue_bad_rows(tmp_path):
    from megazoo.tasks.dialogue.data import read_any, read_woi, read_wow
    from megazoo.tasks.dialogue.reddit import read_reddit

    rows = _jsonl(FIXTURES / "dialogue" / "reddit.jsonl")
    for r in rows:
        del r["parent_id"]
    path = _write(tmp_path, rows, "parquet", "no_parent")
    with pytest.raises(LineError) as err:
        read_reddit(path)
    assert "has no column 'parent_id' (expected Reddit comments" in _one_line(err, path)
    rows = _jsonl(FIXTURES / "dialogue" / "reddit.jsonl")
    for r in rows:
        r["id"] = 7
    path = _write(tmp_path, rows, "parquet", "int_id")
    with pytest.raises(LineError) as err:
        read_reddit(path)
    assert '"id" must be a string, got int' in _one_line(err, path, 1)
    dialogues = json.loads((FIXTURES / "dialogue" / "wow.json").read_text())
    dialogues[1]["dialog"][1]["text"] = None  # a turn without text
    path = _write(tmp_path, dialogues, "disk", "wow")
    with pytest.raises(LineError) as err:
        read_wow(path)
    assert 'dialogue 2 turn 2 "text" must be a string, got NoneType' in _one_line(err, path, 2)
    path = _write(tmp_path, [{"dialog_history": "not a list"}], "parquet", "woi")
    with pytest.raises(LineError) as err:
        read_woi(path)
    assert 'has no "dialog_history" list' in _one_line(err, path, 1)
    path = _write(tmp_path, [{"text": "hello"}], "parquet", "other")
    with pytest.raises(RowError) as err:
        read_any(path)
    assert "has none of the columns dialog, dialog_history, body, turns (expected one of" in _one_line(err, path)


# ---- bias --------------------------------------------------------------------------------------------

def _csv_rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", ["SBIC.v2.tiny.csv", "SBIC.v2.agg.tiny.csv"])
def test_sbic(tmp_path, form, name):
    from megazoo.tasks.bias.data import load_posts, read_aggregated, read_annotations

    native = FIXTURES / "bias" / name
    path = _write(tmp_path, _csv_rows(native), form)  # `social_bias_frames`: every cell a string
    categories = ["offensive", "intent", "lewd"] + (["group:race"] if "agg" not in name else [])
    for category in categories:
        want = load_posts(native, category)
        assert want and load_posts(path, category) == want
    read = read_aggregated if "agg" in name else read_annotations
    assert read(path) == read(native)


def test_sbic_numbers_and_nulls(tmp_path):
    """A copy written from pandas: YN cells as floats, NaN or null for an empty cell."""
    from megazoo.tasks.bias.data import load_posts

    native = FIXTURES / "bias" / "SBIC.v2.tiny.csv"
    rows = _csv_rows(native)
    for r in rows:
        for key in ("offensiveYN", "intentYN", "sexYN", "speakerMinorityYN"):
            r[key] = float(r[key]) if r[key] else (float("nan") if key == "intentYN" else None)
    path = _write(tmp_path, rows, "parquet")
    for category in ("offensive", "intent", "ingroup"):
        assert load_posts(path, category) == load_posts(native, category)


def test_sbic_bad_rows(tmp_path):
    from megazoo.tasks.bias.data import SbicFormatError, load_posts

    rows = _csv_rows(FIXTURES / "bias" / "SBIC.v2.tiny.csv")
    path = _write(tmp_path, [{k: v for k, v in r.items() if k != "offensiveYN"} for r in rows], "parquet", "a")
    with pytest.raises(SbicFormatError) as err:
        load_posts(path, "offensive")
    assert "has no column 'offensiveYN' (expected the SBIC CSV columns" in _one_line(err, path)
    rows[2]["offensiveYN"] = "yes"
    path = _write(tmp_path, rows, "disk", "b")
    with pytest.raises(SbicFormatError) as err:
        load_posts(path)
    assert "offensiveYN is 'yes', not a number (1.0, 0.5 or 0.0)" in _one_line(err, path, 3)
    rows[2]["offensiveYN"] = "0.0"
    for r in rows:
        r["whoTarget"] = [1.0]
    path = _write(tmp_path, rows, "parquet", "c")
    with pytest.raises(SbicFormatError) as err:
        load_posts(path)
    assert "whoTarget must be text or a number (as in the CSV), got list" in _one_line(err, path, 1)


# ---- detox -------------------------------------------------------------------------------------------

PROMPTS = [
    {"filename": "a.txt", "begin": 0, "end": 10, "challenging": False,
     "prompt": {"text": "The weather today", "toxicity": 0.05, "profanity": 0.01},
     "continuation": {"text": " is fine.", "toxicity": 0.02, "profanity": 0.0}},
    {"filename": "b.txt", "begin": 5, "end": 20, "challenging": True,
     "prompt": {"text": "You are such a", "toxicity": 0.61, "profanity": 0.4},
     "continuation": {"text": " nice person.", "toxicity": None, "profanity": None}},
    {"filename": "c.txt", "begin": 1, "end": 2, "challenging": False,
     "prompt": {"text": "Nobody scored this", "toxicity": None, "profanity": None},
     "continuation": {"text": " one.", "toxicity": 0.1, "profanity": 0.0}},
]


@pytest.mark.parametrize("form", FORMS)
def test_real_toxicity_prompts(tmp_path, form):
    from megazoo.tasks.detox.cli_sample import read_prompt_texts
    from megazoo.tasks.detox.data import load_prompts

    native = tmp_path / "prompts.jsonl"
    native.write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    path = _write(tmp_path, PROMPTS, form)
    want = load_prompts(native)
    assert load_prompts(path) == want and [p.toxicity for p in want] == [0.05, 0.61, None]
    assert read_prompt_texts(path) == read_prompt_texts(native)


def test_prompts_bad_rows(tmp_path):
    from megazoo.tasks.detox.data import PromptsFormatError, load_prompts

    path = _write(tmp_path, [{"text": "no prompt column"}], "parquet", "a")
    with pytest.raises(PromptsFormatError) as err:
        load_prompts(path)
    assert "has no column 'prompt' (expected the Hugging Face `allenai/real-toxicity-prompts`" in _one_line(err, path)
    rows = [dict(PROMPTS[0]), {**PROMPTS[1], "prompt": {"text": "x", "toxicity": "high"}}]
    rows[0]["prompt"] = {"text": "ok", "toxicity": "0.1"}
    path = _write(tmp_path, rows, "disk", "b")
    with pytest.raises(PromptsFormatError) as err:
        load_prompts(path)
    assert "`prompt.toxicity` must be a number or null, got '0.1'" in _one_line(err, path, 1)


# ---- story -------------------------------------------------------------------------------------------

def _stories(stories):
    return [(s.id, s.title, s.sentences) for s in stories]


@pytest.mark.parametrize("form", FORMS)
def test_rocstories(tmp_path, form, monkeypatch):
    from megazoo.tasks.story import stories
    from megazoo.tasks.story.data import read_rocstories
    from megazoo.tasks.story.stories import load_split

    monkeypatch.setattr(stories, "delexicalise", lambda story: story)  # slow (a tagger), and not what is tested

    native = FIXTURES / "story" / "rocstories_raw.csv"
    path = _write(tmp_path, _csv_rows(native), form)
    assert _stories(read_rocstories(path)) == _stories(read_rocstories(native)) != []
    assert [_stories(part) for part in load_split(path)] == [_stories(part) for part in load_split(native)]


@pytest.mark.parametrize("form", FORMS)
def test_story_cloze(tmp_path, form):
    """The Story Cloze CSV's columns, and the Hub's `story_cloze` names for them (the ending a number)."""
    from megazoo.tasks.story.data import read_rocstories
    from megazoo.tasks.story.data_hf import STORY_CLOZE

    native = FIXTURES / "story" / "cloze_2016.csv"
    rows = _csv_rows(native)
    want = _stories(read_rocstories(native))
    assert _stories(read_rocstories(_write(tmp_path, rows, form, "csv_names"))) == want
    hub = [{new: (int(r[old]) if new == "answer_right_ending" else r[old]) for old, new in zip(r, STORY_CLOZE)}
           for r in rows]
    assert _stories(read_rocstories(_write(tmp_path, hub, form, "hub_names"))) == want


@pytest.mark.parametrize("form", FORMS)
def test_knowledge(tmp_path, form):
    from megazoo.tasks.story.knowledge import read_knowledge

    native = FIXTURES / "story" / "conceptnet.csv"
    fields = [line.split("\t") for line in native.read_text().splitlines() if line.strip()]
    rows = [dict(zip(("full_rel", "rel", "arg1", "arg2", "extra_info"), f), sentence="", lang="en") for f in fields]
    path = _write(tmp_path, rows, form, "conceptnet")  # the Hub's `conceptnet5` columns
    assert read_knowledge(path) == read_knowledge(native) != []
    native = FIXTURES / "story" / "kb.tsv"
    fields = [line.split("\t") for line in native.read_text().splitlines() if line.strip() and line[0] != "#"]
    path = _write(tmp_path, [dict(zip(("head", "relation", "tail"), f)) for f in fields], form, "triples")
    assert read_knowledge(path) == read_knowledge(native) != []


def test_story_bad_rows(tmp_path):
    from megazoo.core.data.errors import DataError
    from megazoo.tasks.story.data import read_rocstories
    from megazoo.tasks.story.knowledge import read_knowledge

    rows = _csv_rows(FIXTURES / "story" / "rocstories_raw.csv")
    path = _write(tmp_path, [{k: v for k, v in r.items() if k != "sentence5"} for r in rows], "parquet", "a")
    with pytest.raises(DataError) as err:
        read_rocstories(path)
    assert "has no ROCStories columns (expected the ROCStories CSV columns storyid" in _one_line(err, path)
    rows[1]["sentence3"] = ""
    path = _write(tmp_path, rows, "disk", "b")
    with pytest.raises(DataError) as err:
        read_rocstories(path)
    assert "a story needs five sentences, this row has 4" in _one_line(err, path, 2)
    rows[1]["sentence3"] = 3.5
    path = _write(tmp_path, rows[1:2], "parquet", "c")
    with pytest.raises(DataError) as err:
        read_rocstories(path)
    assert "sentence3 must be text, got float" in _one_line(err, path, 1)
    path = _write(tmp_path, [{"rel": "IsA", "arg1": "/c/en/dog", "arg2": "/c/en/animal", "full_rel": "",
                              "extra_info": "{}"}], "parquet", "d")
    with pytest.raises(DataError) as err:
        read_knowledge(path)
    assert "expected /r/Relation, /c/lang/start and /c/lang/end, got 'IsA'" in _one_line(err, path, 1)


# ---- biomed ------------------------------------------------------------------------------------------

def _ner_rows(path: Path) -> list[dict]:
    rows, tokens, tags = [], [], []
    for line in path.read_text().splitlines() + [""]:
        if not line.strip():
            if tokens:
                rows.append({"id": str(len(rows)), "tokens": tokens, "ner_tags": tags})
            tokens, tags = [], []
            continue
        token, tag = line.split("\t")
        tokens.append(token)
        tags.append(tag)
    return rows


@pytest.mark.parametrize("form", FORMS)
def test_ner(tmp_path, form):
    from megazoo.tasks.biomed.data import read_ner_tsv, read_split

    native = FIXTURES / "biomed" / "ner" / "devel.tsv"
    rows = _ner_rows(native)
    want = [(s.tokens, s.labels) for s in read_ner_tsv(native)]
    path = _write(tmp_path, rows, form, "strings")
    assert want and [(s.tokens, s.labels) for s in read_ner_tsv(path)] == want
    assert [(s.tokens, s.labels) for s in read_split(path, "ner", "dev")] == want
    # the BLURB layout: tags as ClassLabel numbers, their names in the dataset's features
    names = ["O", "B", "I"]
    features = datasets.Features({"id": datasets.Value("string"), "tokens": datasets.Sequence(datasets.Value("string")),
                                  "ner_tags": datasets.Sequence(datasets.ClassLabel(names=names))})
    numbered = [{**r, "ner_tags": [names.index(t) for t in r["ner_tags"]]} for r in rows]
    path = _write(tmp_path, numbered, form, "numbers", features)
    assert [(s.tokens, s.labels) for s in read_ner_tsv(path)] == want


@pytest.mark.parametrize("form", FORMS)
def test_chemprot(tmp_path, form):
    from megazoo.tasks.biomed.data import read_chemprot_tsv, read_split

    native = FIXTURES / "biomed" / "chemprot" / "dev.tsv"
    rows = [dict(zip(("index", "sentence", "label"), line.split("\t"))) for line in native.read_text().splitlines()
            if line.strip()]
    path = _write(tmp_path, rows, form)
    want = [(r.id, r.sentence, r.label) for r in read_chemprot_tsv(native)]
    assert want and [(r.id, r.sentence, r.label) for r in read_chemprot_tsv(path)] == want
    assert [(r.id, r.sentence, r.label) for r in read_split(path, "re", "dev")] == want


def test_biomed_bad_rows(tmp_path):
    from megazoo.tasks.biomed.data import BiomedFormatError, read_chemprot_tsv, read_ner_tsv

    rows = _ner_rows(FIXTURES / "biomed" / "ner" / "devel.tsv")
    path = _write(tmp_path, [{"tokens": r["tokens"], "tags": r["ner_tags"]} for r in rows], "parquet", "a")
    with pytest.raises(BiomedFormatError) as err:
        read_ner_tsv(path)
    assert "has no column 'ner_tags' (expected the BLURB NER columns" in _one_line(err, path)
    rows[1]["ner_tags"] = ["X"] * len(rows[1]["tokens"])
    path = _write(tmp_path, rows, "disk", "b")
    with pytest.raises(BiomedFormatError) as err:
        read_ner_tsv(path)
    assert "label 'X' is not in the B/I/O scheme" in _one_line(err, path, 2)
    rows = [{**r, "ner_tags": [0] * len(r["tokens"])} for r in rows]
    path = _write(tmp_path, rows, "parquet", "c")
    with pytest.raises(BiomedFormatError) as err:
        read_ner_tsv(path)
    assert "ner_tags holds numbers but the dataset declares no label names" in _one_line(err, path, 1)
    path = _write(tmp_path, [{"index": "1", "sentence": "no masks here", "label": "CPR:3"}], "parquet", "d")
    with pytest.raises(BiomedFormatError) as err:
        read_chemprot_tsv(path)
    assert "the sentence lacks the entity mask @CHEMICAL$ and @GENE$" in _one_line(err, path, 1)


def test_rows_of_several_parts_are_named_by_part(tmp_path):
    """A folder of two parquet shards: a bad row of the second is named by its file and its own row."""
    from megazoo.tasks.detox.data import PromptsFormatError, load_prompts

    folder = tmp_path / "shards"
    folder.mkdir()
    datasets.Dataset.from_list(PROMPTS).to_parquet(str(folder / "train-00000-of-00002.parquet"))
    bad = [PROMPTS[0], {**PROMPTS[1], "challenging": None}, {**PROMPTS[2], "prompt": {"text": None}}]
    datasets.Dataset.from_list(bad).to_parquet(str(folder / "train-00001-of-00002.parquet"))
    with pytest.raises(PromptsFormatError) as err:
        load_prompts(folder)
    _one_line(err, folder / "train-00001-of-00002.parquet", 3)


def test_biomed_builder_takes_a_dataset_dict(tmp_path):
    """data.path may be a DatasetDict folder (train, validation); a label outside task.labels names its row."""
    from megazoo.core.train.errors import ConfigError
    from megazoo.tasks.biomed.builder import BiomedBuilder, BiomedTask

    rows = _ner_rows(FIXTURES / "biomed" / "ner" / "devel.tsv")
    datasets.DatasetDict({"train": datasets.Dataset.from_list(rows), "validation": datasets.Dataset.from_list(rows)}
                         ).save_to_disk(str(tmp_path / "ner"))
    builder = BiomedBuilder.__new__(BiomedBuilder)  # the data checks only: no model
    builder.settings = BiomedTask.from_dict({"kind": "ner"})
    builder.check_data({"path": str(tmp_path / "ner")})
    assert [s.tokens for s in builder.read(str(tmp_path / "ner"), "dev")] == [tuple(r["tokens"]) for r in rows]
    rows[1]["ner_tags"][0] = "B-Chemical"
    datasets.DatasetDict({"train": datasets.Dataset.from_list(rows), "validation": datasets.Dataset.from_list(rows)}
                         ).save_to_disk(str(tmp_path / "bad"))
    with pytest.raises(ConfigError, match=rf"^{tmp_path / 'bad'}: row 2: label 'B-Chemical' is not one of task.labels"):
        builder.check_data({"path": str(tmp_path / "bad")})


def test_cli_flatten_takes_a_dataset(tmp_path, capsys, monkeypatch):
    """`task dialogue flatten` writes the same TSV from the parquet as from the json; an `hf:` id offline
    is one line, exit code 2."""
    from megazoo.cli import main as megazoo

    native = FIXTURES / "dialogue" / "wow.json"
    path = _write(tmp_path, json.loads(native.read_text()), "parquet")
    assert megazoo(["task", "dialogue", "flatten", str(native), "--out", str(tmp_path / "native.tsv")]) == 0
    assert megazoo(["task", "dialogue", "flatten", str(path), "--out", str(tmp_path / "hf.tsv")]) == 0
    assert (tmp_path / "hf.tsv").read_text() == (tmp_path / "native.tsv").read_text() != ""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    capsys.readouterr()
    code = megazoo(["task", "dialogue", "flatten", "hf:megazoo-test-no-such-dataset", "--out", str(tmp_path / "x.tsv")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "hf:megazoo-test-no-such-dataset" in err and "offline" in err, err
