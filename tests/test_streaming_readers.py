"""The streaming readers of issue #38 on tiny files: a gzip copy of each format gives the same records
(known by its magic bytes, whatever its name), a generator yields its first record before a bad record
later in the file raises, a byte that is not UTF-8 is named with its line, and SQuAD's "version" may
come after "data" while a truncated SQuAD file names the article."""

import gzip
import json
from pathlib import Path

import pytest

from megazoo.eval.readers.common import LineError, numbered_lines, read_jsonl, text_lines
from megazoo.eval.readers.race import read_race
from megazoo.tasks.bias.data import load_posts
from megazoo.tasks.biomed.data import (BiomedFormatError, iter_chemprot_tsv, iter_squad_json, read_chemprot_tsv,
                                       read_ner_tsv, read_squad_json)
from megazoo.tasks.detox.data import PromptsFormatError, iter_prompts, load_prompts
from megazoo.tasks.retrieval.data import RetrievalFormatError, iter_passages, read_passages, read_qas_csv
from megazoo.tasks.story.data import StoryDataError, read_records, read_rocstories
from megazoo.tasks.story.knowledge import KnowledgeError, iter_conceptnet, read_conceptnet
from megazoo.tasks.synthetic_qa.builder import DEV
from megazoo.tasks.synthetic_qa.squad import SquadFormatError, iter_squad, read_squad

FIXTURES = Path(__file__).parent / "fixtures"
PROMPT = '{"prompt": {"text": "The cat", "toxicity": 0.1}, "challenging": false}\n'
SQUAD_ARTICLE = {"title": "t", "paragraphs": [{"context": "Pdb sets a handler for SIGINT.", "qas": [
    {"id": "a", "question": "Which signal?", "answers": [{"text": "SIGINT", "answer_start": 23}]}]}]}


def gz_copy(src: Path, tmp_path: Path, name: str = "copy.txt") -> Path:
    """A gzip of `src` under a name without .gz: the readers go by the first bytes, not the name."""
    out = tmp_path / name
    out.write_bytes(gzip.compress(src.read_bytes()))
    return out


def write(tmp_path: Path, name: str, data) -> Path:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def squad_text(articles: list, version_first: bool = True) -> str:
    return json.dumps({"version": "v2.0", "data": articles} if version_first else {"data": articles, "version": "v2.0"})


# a gzip copy gives the same records -------------------------------------------------------------
@pytest.mark.parametrize("reader, fixture", [
    (read_passages, "retrieval/psgs.tsv"),
    (read_qas_csv, "retrieval/nq-test.csv"),
    (read_squad_json, "biomed/bioasq/train.json"),
    (read_ner_tsv, "biomed/ner/train.tsv"),
    (read_chemprot_tsv, "biomed/chemprot/test.tsv"),
    (load_posts, "bias/SBIC.v2.tiny.csv"),
    (load_posts, "bias/SBIC.v2.agg.tiny.csv"),
    (read_rocstories, "story/rocstories_raw.csv"),
    (read_rocstories, "story/cloze_2016.csv"),
    (read_conceptnet, "story/conceptnet.csv"),
    (lambda p: read_records(p, lambda r: "sentences" in r, "bad", "empty"), "story/generations.jsonl"),
])
def test_a_gzip_copy_gives_the_same_records(tmp_path, reader, fixture):
    src = FIXTURES / fixture
    plain = reader(src)
    assert plain and reader(gz_copy(src, tmp_path, src.name)) == plain


def test_gzip_squad_and_race_and_prompts(tmp_path):
    squad = DEV  # the shipped hand-written SQuAD dev set
    assert read_squad(gz_copy(squad, tmp_path, "s.json")).questions == read_squad(squad).questions
    race = sorted((FIXTURES / "race" / "RACE").rglob("*.txt"))[0]
    (tmp_path / race.parent.name).mkdir()  # the level is the folder's name
    assert read_race(gz_copy(race, tmp_path / race.parent.name, "1.txt")) == read_race(race)
    prompts = write(tmp_path, "p.jsonl", PROMPT * 3)
    assert load_prompts(gz_copy(prompts, tmp_path, "p2.jsonl")) == load_prompts(prompts)


def test_a_truncated_gzip_is_one_line(tmp_path):
    src = gz_copy(FIXTURES / "retrieval" / "psgs.tsv", tmp_path)
    src.write_bytes(src.read_bytes()[:-30])
    with pytest.raises(RetrievalFormatError, match=rf"^{src}:\d+: not a readable gzip file"):
        list(iter_passages(src))


# lazy: the first record comes out before a bad one later raises ------------------------------------
def first_then_error(records, error):
    first = next(records)
    with pytest.raises(error) as e:
        list(records)
    return first, str(e.value)


def test_generators_yield_before_a_later_bad_record(tmp_path):
    psgs = write(tmp_path, "p.tsv", 'id\ttext\ttitle\n1\t"one"\tA\n2\tno title\n')
    first, err = first_then_error(iter_passages(psgs), RetrievalFormatError)
    assert first.id == 1 and err == f"{psgs}:3: 2 tab-separated fields; expected 3 (id, text, title)"
    squad = write(tmp_path, "s.json", squad_text([SQUAD_ARTICLE, {"title": "u"}]))
    first, err = first_then_error(iter_squad(squad), SquadFormatError)
    assert first.id == "a" and err == f"{squad}: article 2: an article has no 'paragraphs'"
    first, err = first_then_error(iter_squad_json(squad), BiomedFormatError)
    assert first.id == "a" and err == f"{squad}: article 2: an article has no 'paragraphs'"
    chem = write(tmp_path, "c.tsv", "1\t@CHEMICAL$ binds @GENE$ .\tCPR:3\n2\tno masks\tCPR:3\n")
    first, err = first_then_error(iter_chemprot_tsv(chem), BiomedFormatError)
    assert first.id == "1" and err == f"{chem}:2: the sentence lacks the entity mask @CHEMICAL$ and @GENE$"
    kb = (FIXTURES / "story" / "conceptnet.csv").read_text() + "/a/[x]\t/r/IsA\t/c/en/a\n"
    kb_path = write(tmp_path, "kb.csv", kb)
    first, err = first_then_error(iter_conceptnet(kb_path), KnowledgeError)
    assert first.head == "dog" and err.startswith(f"{kb_path}:{kb.count(chr(10))}: a ConceptNet assertion has 5")
    prompts = write(tmp_path, "p.jsonl", PROMPT + '{"prompt": {}}\n')
    first, err = first_then_error(iter_prompts(prompts), PromptsFormatError)
    assert first.text == "The cat" and err.startswith(f"{prompts}:2: no `prompt.text`")
    jsonl = write(tmp_path, "j.jsonl", '{"a": 1}\n\n[2]\n')
    first, err = first_then_error(read_jsonl(jsonl, "objects", LineError), LineError)
    assert first == (1, {"a": 1}) and err == f"{jsonl}:3: expected a JSON object (objects), got list"


# a byte that is not UTF-8 names its line ------------------------------------------------------------
@pytest.mark.parametrize("read, error, head", [
    (lambda p: list(iter_passages(p)), RetrievalFormatError, "id\ttext\ttitle\n1\tfine\tA\n"),
    (read_chemprot_tsv, BiomedFormatError, "1\t@CHEMICAL$ binds @GENE$ .\tCPR:3\n\n"),
    (read_conceptnet, KnowledgeError, "/a/[x]\t/r/IsA\t/c/en/dog\t/c/en/animal\t{}\n\n"),
    (load_prompts, PromptsFormatError, PROMPT + "\n"),
    (read_rocstories, StoryDataError, "storyid,storytitle,sentence1,sentence2,sentence3,sentence4,sentence5\n\n"),
])
def test_a_bad_byte_names_its_line(tmp_path, read, error, head):
    lines = head.count("\n")
    path = write(tmp_path, "bad.txt", head.encode() + b"ab\xffcd\n")
    with pytest.raises(error) as e:
        read(path)
    assert str(e.value) == f"{path}:{lines + 1}: not valid UTF-8 (byte 0xff at column 3); save the file as UTF-8"


def test_text_lines_keeps_line_ends_and_numbered_lines_skips_blanks(tmp_path):
    path = write(tmp_path, "t.txt", "a\r\n\n  \nb\u2028c")  # U+2028 is not a line end
    assert list(text_lines(path, "text")) == [(1, "a\r\n"), (2, "\n"), (3, "  \n"), (4, "b\u2028c")]
    assert list(numbered_lines(path, "text")) == [(1, "a"), (4, "b\u2028c")]
    blank = write(tmp_path, "blank.txt", "\n \n")
    with pytest.raises(LineError, match=rf"^{blank}:1: the file is empty \(expected text\)$"):
        list(numbered_lines(blank, "text", LineError))
    with pytest.raises(FileNotFoundError, match=r"no such file \(expected text\)"):
        list(text_lines(tmp_path / "none.txt", "text"))


# SQuAD: the version in either place, a truncated file --------------------------------------------------
@pytest.mark.parametrize("version_first", [True, False])
def test_squad_version_before_or_after_data(tmp_path, version_first):
    f = read_squad(write(tmp_path, "s.json", squad_text([SQUAD_ARTICLE], version_first)))
    assert f.version == "v2.0" and f.v2 and [q.id for q in f.questions] == ["a"]
    assert f.paragraphs == [("t", "Pdb sets a handler for SIGINT.")]


def test_squad_without_version_is_1_1_and_data_must_be_a_list(tmp_path):
    assert read_squad(write(tmp_path, "s.json", json.dumps({"data": [SQUAD_ARTICLE]}))).version == "1.1"
    path = write(tmp_path, "d.json", '{"version": "1.1", "data": {"title": "t"}}')
    with pytest.raises(SquadFormatError, match=rf"^{path}: the file's 'data' must be a list, got an object$"):
        read_squad(path)
    path = write(tmp_path, "n.json", '{"version": "1.1"}')
    with pytest.raises(SquadFormatError, match=rf"^{path}: the file has no 'data'"):
        read_squad(path)


def test_a_truncated_squad_file_names_the_article(tmp_path):
    text = squad_text([SQUAD_ARTICLE, SQUAD_ARTICLE | {"title": "u"}], version_first=True)
    path = write(tmp_path, "s.json", text[:-40])
    with pytest.raises(SquadFormatError) as e:
        read_squad(path)
    assert str(e.value).startswith(f"{path}:1: not valid JSON after article 1 (")
    path = write(tmp_path, "g.json", gzip.compress(text.encode())[:-12])
    with pytest.raises(SquadFormatError, match=rf"^{path}: not a readable gzip file after article \d"):
        read_squad(path)
