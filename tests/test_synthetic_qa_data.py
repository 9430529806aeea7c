"""synthetic_qa data: the SQuAD reader's one-line errors (`file: article N: problem`, or `file:line:
problem` for a syntax error) on the bad inputs of
the issue, the shipped hand-written dev set, the template questions and the data stage, and
the stages' one-line CLI errors."""

import json

import pytest

from megazoo.cli import main as megazoo
from megazoo.tasks.synthetic_qa.builder import DEV
from megazoo.tasks.synthetic_qa.prompts import answer_context, clean_question, qg_prompt
from megazoo.tasks.synthetic_qa.squad import SquadFormatError, read_squad
from megazoo.tasks.synthetic_qa.templates import paragraph_questions, sentences

GOOD = """{"version": "1.1", "data": [{"title": "t", "paragraphs": [
 {"context": "Pdb sets a handler for the SIGINT signal.",
  "qas": [
   {"id": "a", "question": "Which signal?",
    "answers": [{"text": "SIGINT", "answer_start": 27}]},
   {"id": "b", "question": "Who sets it?",
    "answers": [{"text": "Pdb", "answer_start": 0}]}]}]}]}
"""


def write(tmp_path, text, name="f.json"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_a_good_file(tmp_path):
    f = read_squad(write(tmp_path, GOOD))
    assert [(q.id, q.answers, q.article) for q in f.questions] == [("a", [("SIGINT", 27)], 1), ("b", [("Pdb", 0)], 1)]
    assert not f.v2 and f.paragraphs == [("t", "Pdb sets a handler for the SIGINT signal.")]


@pytest.mark.parametrize("edit, where, problem", [
    (('"answer_start": 27', '"answer_start": 26'), " article 1", "question 'a': answers: answer_start 26 does not "
                                                                 "point at the answer 'SIGINT'"),
    (('"id": "b"', '"id": "a"'), " article 1", "question id 'a' is used twice (first in article 1)"),
    (('"qas": [', '"qas": [,'), "3", "not valid JSON in article 1"),
    (('"text": "Pdb", ', ''), " article 1", "an answer of question 'b' has no 'text'"),
])
def test_bad_files_fail_with_file_and_article_or_line(tmp_path, edit, where, problem):
    path = write(tmp_path, GOOD.replace(*edit))
    with pytest.raises(SquadFormatError) as e:
        read_squad(path)
    assert str(e.value).startswith(f"{path}:{where}: ") and problem in str(e.value)
    assert "\n" not in str(e.value)


def test_not_json_at_all(tmp_path):
    path = write(tmp_path, "id,question\n1,what\n")
    with pytest.raises(SquadFormatError, match=rf"^{path}:1: not valid JSON"):
        read_squad(path)


def test_the_hand_written_dev_set():
    f = read_squad(DEV)
    assert len(f.questions) >= 60 and len({q.id for q in f.questions}) == len(f.questions)
    for q in f.questions:  # written as people ask: a question, and an answer that is a span of the paragraph
        assert q.question.endswith("?") or q.question[:1].islower(), q.question
        text, start = q.answers[0]
        assert q.context[start:start + len(text)] == text
    assert len({q.context for q in f.questions}) >= 30


def test_template_questions_are_spans():
    context = ('The "nonlocal" statement causes names to refer to bound variables. This module provides socket '
               'operations and some related functions. If step is zero, "ValueError" is raised.')
    qs = paragraph_questions(context)
    assert ("Which statement causes names to refer to bound variables?", '"nonlocal"') in [q[:2] for q in qs]
    assert ("What does this module provide?", "socket operations and some related functions") in [q[:2] for q in qs]
    for question, answer, start in qs:
        assert context[start:start + len(answer)] == answer and question.endswith("?")


@pytest.mark.parametrize("sentence, question, answer", [
    ("The Python interpreter raises an exception when it detects a run-time error (such as division by zero).",
     "When does the Python interpreter raise an exception?", "when it detects a run-time error"),
    ('A Python program can also raise an exception with the "raise" statement.',
     "How can a Python program raise an exception?", 'with the "raise" statement'),
    ('The "__dir__" function should accept no arguments, and return a sequence of strings.',
     'What should the "__dir__" function accept?', "no arguments"),
    ("The hook is called by the debugger.", "What is the hook called by?", "the debugger"),
    ('Return "True" if string starts with the prefix, otherwise return "False".',
     "What is returned if string starts with the prefix?", '"True"'),
    ("On Unix, it supports IP (Internet Protocol) and Unix domain sockets.", "What does IP stand for?",
     "Internet Protocol"),
    ("Changed in version 3.8: Now annotated assignments allow it.", "In which version was this changed?", "3.8"),
    ("The optional banner argument specifies the banner to print.", "What does the optional banner argument specify?",
     "the banner to print"),
])
def test_template_rules(sentence, question, answer):
    qs = paragraph_questions(sentence)
    assert (question, answer) in [q[:2] for q in qs]
    for _, text, start in qs:
        assert sentence[start:start + len(text)] == text


def test_paragraphs_sharing_a_sentence_with_the_dev_set_are_held_out():
    from megazoo.tasks.synthetic_qa.generate import corpus_paragraphs

    paragraphs = corpus_paragraphs(set(), 0)
    first = next(s for _, s in sentences(paragraphs[0]) if len(s) >= 30)
    variant = first + " A sentence the corpus does not hold, as a second version of a text would."
    kept = corpus_paragraphs({variant}, 0)
    assert paragraphs[0] not in kept and not any(first.lower() in p.lower() for p in kept)
    assert len(kept) >= len(paragraphs) - 3


def test_prompt_holds_the_answer_sentence():
    context = "First sentence here is long enough to stand alone in the prompt. Pdb sets SIGINT. Last one."
    start = context.index("SIGINT")
    assert "SIGINT" in answer_context(context, start, "SIGINT")
    prompt = qg_prompt(context, start, "SIGINT")
    assert prompt.endswith("Answer: SIGINT\nQuestion:") and "Last one" not in prompt
    assert clean_question(" Which signal? And more\nnext") == "Which signal?"


def test_data_stage(tmp_path):
    assert megazoo(["task", "synthetic_qa", "data", str(tmp_path / "d"), "--bootstrap", "templates",
                    "--train-paragraphs", "20", "--text-paragraphs", "5"]) == 0
    train = read_squad(tmp_path / "d" / "train.json")
    text = read_squad(tmp_path / "d" / "paragraphs.json")
    dev = read_squad(tmp_path / "d" / "dev.json")
    assert len(train.paragraphs) == 20 and train.questions and len(text.paragraphs) == 5 and not text.questions
    contexts = {c for _, c in dev.paragraphs}
    assert not contexts & {c for _, c in train.paragraphs + text.paragraphs}  # the dev text is held out
    pairs = [json.loads(line) for line in (tmp_path / "d" / "qg.jsonl").read_text().splitlines()]
    assert len(pairs) == len(train.questions) and pairs[0]["response"] == " " + train.questions[0].question


def test_data_stage_trains_on_the_handwritten_set_and_keeps_its_text_out(tmp_path):
    from megazoo.tasks.synthetic_qa.generate import HANDWRITTEN

    assert megazoo(["task", "synthetic_qa", "data", str(tmp_path / "d"), "--text-paragraphs", "30"]) == 0
    train = read_squad(tmp_path / "d" / "train.json")
    hand = read_squad(HANDWRITTEN)
    assert [(q.id, q.question, q.answers) for q in train.questions] == [(q.id, q.question, q.answers)
                                                                         for q in hand.questions]
    text = read_squad(tmp_path / "d" / "paragraphs.json")
    assert len(text.paragraphs) == 30
    held = {c for _, c in hand.paragraphs} | {c for _, c in read_squad(DEV).paragraphs}
    assert not held & {c for _, c in text.paragraphs}  # neither training nor dev text is made into questions
    pairs = [json.loads(line) for line in (tmp_path / "d" / "qg.jsonl").read_text().splitlines()]
    assert [p["response"] for p in pairs] == [" " + q.question for q in hand.questions]


@pytest.mark.parametrize("argv, message", [
    (["answers", "--data", "{missing}", "--checkpoint", "x", "--out", "o.json"], "--data {missing}: no such file"),
    (["evaluate", "--data", "{dev}", "--checkpoint", "{tmp}/none", "--out", "o.json"], "does not exist"),
    (["filter", "--data", "{bad}", "--checkpoint", "x", "--out", "o.json"], "{bad}:1: not valid JSON"),
    (["sample", "--data", "{dev}", "--checkpoint", "{tmp}", "--out", "o.json"], "is not a megazoo model checkpoint"),
    (["train", "synthetic_qa-answers", "--set", "task.name=race"], "task.name is 'race'"),
])
def test_stage_errors_are_one_line(tmp_path, capsys, argv, message):
    bad = write(tmp_path, "nope", "bad.json")
    fill = {"missing": str(tmp_path / "missing.json"), "dev": str(DEV), "tmp": str(tmp_path), "bad": str(bad)}
    argv = [a.format(**fill) for a in argv]
    assert megazoo(["task", "synthetic_qa", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message.format(**fill) in err and err.count("\n") == 0 and "Traceback" not in err


def test_sampled_questions_stay_with_their_prompt(monkeypatch):
    """sample_questions batches prompts by length; every question must still come back to its own prompt."""
    import megazoo.zoo.generate as zoo_generate
    from megazoo.tasks.synthetic_qa.questions import sample_questions

    from tests.char_tokenizer import CharTokenizer as Tok

    seen_batches = []

    def fake_generate(model, prompts, max_new_tokens, **kw):
        seen_batches.append([len(p) for p in prompts])
        return [p[:3] + [ord("?")] for p in prompts]  # the question repeats the prompt's first letters

    monkeypatch.setattr(zoo_generate, "generate", fake_generate)
    prompts = ["long prompt here", "ab", "medium one", "xyz"]
    out = sample_questions(None, Tok(), prompts, samples=2, batch=3)
    assert out == [[p[:3] + "?"] * 2 for p in prompts]
    assert [n for b in seen_batches for n in b] == sorted(len(p) for p in prompts for _ in range(2))
