"""Readers on fixtures in each official format (tests/fixtures/eval/), and their errors for a
wrong format, a missing field and an empty file, each naming the file and the line."""
import os
import shutil

import pytest

from megazoo.eval.metrics import original_token_count
from megazoo.eval.readers import (
    ReaderError,
    read_anli,
    read_boolq,
    read_hans,
    read_hellaswag,
    read_lambada,
    read_piqa,
    read_race,
    read_wic,
    read_wikitext,
    read_winogrande,
    wikitext_detokenize,
)

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "eval")


def fixture(*parts):
    return os.path.join(FIXTURES, *parts)


# ---- the fixtures read as expected ---------------------------------------------------------------

def test_wikitext_articles_and_detokenizer():
    path = fixture("wikitext", "wiki.test.tokens")
    articles = read_wikitext(path)
    assert [a.title for a in articles] == ["Robert Example", "Second Article"]
    raw = open(path, encoding="utf-8").read()
    assert "".join(a.text for a in articles) == raw  # nothing lost: Megatron scores the whole file
    assert "= = Career = =" in articles[0].text
    assert original_token_count(raw) == len(raw.strip().split(" "))
    text = wikitext_detokenize(articles[0].text)
    assert "3,000 roles in the 1998-99 season. He is 1.85 m tall." in text
    assert '"The Bill" (a police drama).' in text
    assert "\n== Career ==\n" in text
    assert "article's text is short; it ends here." in wikitext_detokenize(articles[1].text)


def test_lambada_context_and_target():
    examples = read_lambada(fixture("lambada", "lambada_test.jsonl"))
    assert len(examples) == 3
    assert examples[0].target == "truck"
    assert examples[0].context == "He tossed her the keys and said the old truck was hers now. She smiled and climbed into the"
    assert examples[1].target == "kettle" and examples[1].context.endswith("asked Maria, reaching for the")
    for ex in examples:
        assert ex.text.rstrip().endswith(ex.target)


def test_boolq():
    examples = read_boolq(fixture("boolq", "dev.jsonl"))
    assert [e.answer for e in examples] == [True, False]
    assert examples[1].question == "can penguins fly" and examples[1].title == "Penguin"


def test_race_folder_and_levels():
    examples = read_race(fixture("race", "test"))
    assert [(e.level, e.id, e.label) for e in examples] == [
        ("high", "high7.txt", 1), ("middle", "middle1.txt", 2), ("middle", "middle1.txt", 0)
    ]
    assert examples[1].question == "Where did Tom meet his friend _ ?"
    assert examples[1].options[2] == "in the park"
    assert [e.id for e in read_race(fixture("race", "test", "high"))] == ["high7.txt"]  # RACE-h


def test_piqa_with_labels_file():
    examples = read_piqa(fixture("piqa", "valid.jsonl"))
    assert [e.label for e in examples] == [0, 1]
    assert examples[1].solutions[1] == "Run the lid under hot water for a minute."


def test_hellaswag_winogrande_anli():
    hs = read_hellaswag(fixture("hellaswag", "hellaswag_val.jsonl"))
    assert [(e.ind, e.label, len(e.endings)) for e in hs] == [(24, 3, 4), (92, 0, 4)]
    assert hs[0].activity_label == "Roof shingle removal" and hs[0].ctx_b == "he"
    wg = read_winogrande(fixture("winogrande", "dev.jsonl"))
    assert [(e.options, e.label) for e in wg] == [(["trophy", "suitcase"], 0), (["trophy", "suitcase"], 1)]
    anli = read_anli(fixture("anli", "R2", "dev.jsonl"))
    assert [e.label for e in anli] == [0, 2, 1]  # e, c, n
    assert anli[0].premise.startswith("The Nile") and anli[0].hypothesis == "The Nile flows north."


def test_hans():
    examples = read_hans(fixture("hans", "heuristics_evaluation_set.txt"))
    assert [(e.pair_id, e.label, e.heuristic) for e in examples] == [
        ("ex0", 1, "lexical_overlap"), ("ex1", 0, "lexical_overlap")
    ]
    assert examples[0].premise == "The doctor saw the lawyer ." and examples[0].subcase == "ln_subject/object_swap"


def test_wic_with_gold_file():
    examples = read_wic(fixture("wic", "dev", "dev.data.txt"))
    assert [(e.word, e.pos, e.label) for e in examples] == [("carry", "V", False), ("bank", "N", True)]
    for e in examples:  # the indices point at the target in the tokenised examples
        assert e.sentence1.split()[e.index1].startswith(e.word[:4])
        assert e.sentence2.split()[e.index2].startswith(e.word[:4])


def test_unlabelled_test_files():
    assert read_wic(fixture("wic", "dev", "dev.data.txt"), gold_path="/nonexistent/x.gold.txt", require_labels=False)[0].label is None
    with pytest.raises(FileNotFoundError, match="no such gold file"):
        read_wic(fixture("wic", "dev", "dev.data.txt"), gold_path="/nonexistent/x.gold.txt")


# ---- bad input: wrong format, missing field, empty file --------------------------------------------

def write(tmp_path, name, text):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


def check(err, path, line, message):
    assert isinstance(err.value, ReaderError) and isinstance(err.value, ValueError)
    assert err.value.path == path and err.value.line == line
    assert str(err.value).startswith(f"{path}, line {line}: ")
    assert message in str(err.value)


JSONL_READERS = [
    (read_lambada, '{"text": "one two three"}\n', "text"),
    (read_boolq, '{"question": "q", "passage": "p", "answer": true}\n', "passage"),
    (read_hellaswag, '{"ind": 1, "activity_label": "a", "ctx_a": "b", "ctx_b": "c", "ctx": "b c", '
                     '"endings": ["1", "2", "3", "4"], "label": 0}\n', "ctx_a"),
    (read_winogrande, '{"qID": "x", "sentence": "The _ fell.", "option1": "cup", "option2": "plate", "answer": "1"}\n', "option2"),
    (read_anli, '{"uid": "u", "context": "c", "hypothesis": "h", "label": "n"}\n', "hypothesis"),
]


@pytest.mark.parametrize("reader,good_line,field_name", JSONL_READERS, ids=lambda x: getattr(x, "__name__", None))
def test_jsonl_readers_bad_input(tmp_path, reader, good_line, field_name):
    assert len(reader(write(tmp_path, "ok.jsonl", good_line + "\n" + good_line))) == 2  # blank lines skipped
    path = write(tmp_path, "wrong.jsonl", good_line + "this is not json\n")
    with pytest.raises(ReaderError) as err:
        reader(path)
    check(err, path, 2, "not valid JSON")
    path = write(tmp_path, "array.jsonl", good_line + '["a list"]\n')
    with pytest.raises(ReaderError) as err:
        reader(path)
    check(err, path, 2, "expected a JSON object")
    import json
    obj = json.loads(good_line)
    del obj[field_name]
    path = write(tmp_path, "missing.jsonl", good_line + good_line + json.dumps(obj) + "\n")
    with pytest.raises(ReaderError) as err:
        reader(path)
    check(err, path, 3, f"missing field {field_name!r}")
    path = write(tmp_path, "empty.jsonl", "\n  \n")
    with pytest.raises(ReaderError) as err:
        reader(path)
    check(err, path, 1, "the file is empty")


def test_field_type_and_value_errors(tmp_path):
    path = write(tmp_path, "boolq.jsonl", '{"question": "q", "passage": "p", "answer": "yes"}\n')
    with pytest.raises(ReaderError) as err:
        read_boolq(path)
    check(err, path, 1, "field 'answer' must be true/false")
    path = write(tmp_path, "wg.jsonl", '{"qID": "x", "sentence": "no blank", "option1": "a", "option2": "b", "answer": "1"}\n')
    with pytest.raises(ReaderError) as err:
        read_winogrande(path)
    check(err, path, 1, "exactly one blank")
    path = write(tmp_path, "anli.jsonl", '{"uid": "u", "context": "c", "hypothesis": "h", "label": "x"}\n')
    with pytest.raises(ReaderError) as err:
        read_anli(path)
    check(err, path, 1, "'e', 'n' or 'c'")
    path = write(tmp_path, "hs.jsonl", '{"ind": 1, "activity_label": "a", "ctx_a": "b", "ctx_b": "c", "ctx": "b c", "endings": ["1", "2"], "label": 0}\n')
    with pytest.raises(ReaderError) as err:
        read_hellaswag(path)
    check(err, path, 1, "field 'endings' must have 4 items, got 2")
    path = write(tmp_path, "lambada.jsonl", '{"text": "lonely"}\n')
    with pytest.raises(ReaderError) as err:
        read_lambada(path)
    check(err, path, 1, "needs a context and a last word")
    path = write(tmp_path, "nolabel.jsonl", '{"question": "q", "passage": "p"}\n')
    with pytest.raises(ReaderError) as err:
        read_boolq(path)
    check(err, path, 1, "missing field 'answer'")
    assert read_boolq(path, require_labels=False)[0].answer is None


def test_wikitext_bad_input(tmp_path):
    path = write(tmp_path, "wiki.test.tokens", " \n plain text without a heading . \n")
    with pytest.raises(ReaderError) as err:
        read_wikitext(path)
    check(err, path, 2, "text before the first article heading")
    path = write(tmp_path, "empty.tokens", "")
    with pytest.raises(ReaderError) as err:
        read_wikitext(path)
    check(err, path, 1, "the file is empty")
    path = tmp_path / "latin1.tokens"
    path.write_bytes(b" = T = \n caf\xe9 \n")
    with pytest.raises(ReaderError) as err:
        read_wikitext(str(path))
    check(err, str(path), 2, "not valid UTF-8")


def test_race_bad_input(tmp_path):
    good = open(fixture("race", "test", "middle", "1.txt"), encoding="utf-8").read()
    path = write(tmp_path, "race/high/1.txt", good.replace('"answers": ["C", "A"]', '"answers": ["C"]'))
    with pytest.raises(ReaderError) as err:
        read_race(str(tmp_path / "race"))
    check(err, path, 1, "2 questions, 2 option lists and 1 answers")
    path = write(tmp_path, "race2/high/1.txt", good.replace('"article"', '"passage"'))
    with pytest.raises(ReaderError) as err:
        read_race(path)
    check(err, path, 1, "missing field 'article'")
    path = write(tmp_path, "race3/high/1.txt", good.replace('["C", "A"]', '["C", "E"]'))
    with pytest.raises(ReaderError) as err:
        read_race(path)
    check(err, path, 1, "answers[1] must be a letter A-D")
    path = write(tmp_path, "race4/high/1.txt", "article: no json here\n")
    with pytest.raises(ReaderError) as err:
        read_race(path)
    check(err, path, 1, "not valid JSON")
    path = write(tmp_path, "race5/high/1.txt", "")
    with pytest.raises(ReaderError) as err:
        read_race(path)
    check(err, path, 1, "the file is empty")
    (tmp_path / "race6").mkdir()
    with pytest.raises(FileNotFoundError, match="no RACE .txt files"):
        read_race(str(tmp_path / "race6"))
    with pytest.raises(FileNotFoundError, match="no such RACE file or folder"):
        read_race(str(tmp_path / "missing"))


def test_piqa_bad_labels(tmp_path):
    data = tmp_path / "valid.jsonl"
    shutil.copy(fixture("piqa", "valid.jsonl"), data)
    labels = write(tmp_path, "valid-labels.lst", "0\n")
    with pytest.raises(ReaderError) as err:
        read_piqa(str(data))
    check(err, labels, 1, "1 labels for 2 examples")
    labels = write(tmp_path, "valid-labels.lst", "0\nyes\n")
    with pytest.raises(ReaderError) as err:
        read_piqa(str(data))
    check(err, labels, 2, "a label must be 0 or 1, got 'yes'")
    labels = write(tmp_path, "valid-labels.lst", "")
    with pytest.raises(ReaderError) as err:
        read_piqa(str(data))
    check(err, labels, 1, "the file is empty")
    path = write(tmp_path, "bad.jsonl", '{"goal": "g", "sol1": "a"}\n')
    with pytest.raises(ReaderError) as err:
        read_piqa(path, require_labels=False)
    check(err, path, 1, "missing field 'sol2'")
    assert read_piqa(str(data), labels_path=str(tmp_path / "none.lst"), require_labels=False)[0].label is None


def test_hans_bad_input(tmp_path):
    good = open(fixture("hans", "heuristics_evaluation_set.txt"), encoding="utf-8").read()
    header, first, second = good.splitlines()
    path = write(tmp_path, "no_header.txt", first + "\n")
    with pytest.raises(ReaderError) as err:
        read_hans(path)
    check(err, path, 1, "header lacks column(s) gold_label")
    path = write(tmp_path, "short_row.txt", "\n".join([header, first, "entailment\tonly two"]) + "\n")
    with pytest.raises(ReaderError) as err:
        read_hans(path)
    check(err, path, 3, "2 tab-separated columns, the header has 11")
    path = write(tmp_path, "label.txt", "\n".join([header, second.replace("entailment", "contradiction", 1)]))
    with pytest.raises(ReaderError) as err:
        read_hans(path)
    check(err, path, 2, "gold_label must be entailment or non-entailment")
    path = write(tmp_path, "empty.txt", "")
    with pytest.raises(ReaderError) as err:
        read_hans(path)
    check(err, path, 1, "the file is empty")


def test_wic_bad_input(tmp_path):
    good = open(fixture("wic", "dev", "dev.data.txt"), encoding="utf-8").read().splitlines()
    path = write(tmp_path, "dev.data.txt", good[0] + "\n" + good[1].replace("\t", " ", 1) + "\n")
    with pytest.raises(ReaderError) as err:
        read_wic(path, require_labels=False)
    check(err, path, 2, "4 tab-separated fields; expected 5")
    path = write(tmp_path, "dev2.data.txt", good[0].replace("\t2-1\t", "\ttwo\t") + "\n")
    with pytest.raises(ReaderError) as err:
        read_wic(path, require_labels=False)
    check(err, path, 1, "the third field must be index1-index2")
    data = write(tmp_path, "dev3.data.txt", "\n".join(good) + "\n")
    gold = write(tmp_path, "dev3.gold.txt", "T\nmaybe\n")
    with pytest.raises(ReaderError) as err:
        read_wic(data)
    check(err, gold, 2, "a gold label must be T or F")
    path = write(tmp_path, "dev4.data.txt", "")
    with pytest.raises(ReaderError) as err:
        read_wic(path)
    check(err, path, 1, "the file is empty")
