"""synthetic_qa's hand-written training set (data/train.json): SQuAD v1.1 that the reader accepts
(every answer_start points at its text, ids unique), big enough (>= 270 questions over >= 90
paragraphs), drawn only from the corpus paragraphs the pipeline may train on (no dev paragraph, no
paragraph sharing a sentence with one), with short answers and questions that paraphrase rather
than copy their paragraph."""

import re
from pathlib import Path

import pytest

from megazoo.tasks.synthetic_qa.builder import DEV
from megazoo.tasks.synthetic_qa.squad import read_squad
from megazoo.tasks.synthetic_qa.templates import sentences

TRAIN = Path(DEV).parent / "train.json"
COPY_WORDS = 8  # a question sharing this many consecutive words with its paragraph copies it


@pytest.fixture(scope="module")
def train():
    return read_squad(TRAIN)


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def copied_run(question: str, context: str, n: int = COPY_WORDS) -> str:
    """The first run of `n` consecutive words the question shares with its context, or ""."""
    cw, qw = words(context), words(question)
    runs = {tuple(cw[i:i + n]) for i in range(len(cw) - n + 1)}
    return next((" ".join(qw[i:i + n]) for i in range(len(qw) - n + 1) if tuple(qw[i:i + n]) in runs), "")


def test_size_ids_and_three_questions_per_paragraph(train):
    assert not train.v2
    assert len(train.paragraphs) >= 90 and len(train.questions) >= 270
    assert len({q.id for q in train.questions}) == len(train.questions)
    assert len({c for _, c in train.paragraphs}) == len(train.paragraphs)
    per_paragraph = [sum(q.paragraph == i for q in train.questions) for i in range(len(train.paragraphs))]
    assert min(per_paragraph) >= 3


def sentence_keys(paragraph: str) -> set:
    return {s.lower() for _, s in sentences(paragraph) if len(s) >= 30}


def test_no_paragraph_is_or_overlaps_a_dev_paragraph(train):
    dev = [c for _, c in read_squad(DEV).paragraphs]
    held = set().union(*map(sentence_keys, dev))
    assert [c[:60] for _, c in train.paragraphs if c in dev or sentence_keys(c) & held] == []


def test_paragraphs_come_from_the_corpus_the_pipeline_trains_on(train):
    """The slow one when run alone (reading the corpus takes seconds); in the suite the corpus is
    built once per process and shared with test_synthetic_qa_data."""
    from megazoo.tasks.synthetic_qa.generate import corpus_paragraphs

    allowed = set(corpus_paragraphs({c for _, c in read_squad(DEV).paragraphs}, 0))
    assert [c[:60] for _, c in train.paragraphs if c not in allowed] == []


def test_answers_are_short_spans_and_questions_paraphrase(train):
    for q in train.questions:
        (text, start), = q.answers
        assert q.context[start:start + len(text)] == text and text.strip() == text
        assert 1 <= len(text.split()) <= 12, (q.id, text)
        assert q.question.endswith("?"), q.id
        assert copied_run(q.question, q.context) == "", q.id


def test_the_copy_check_catches_a_copied_question():
    context = "The header block is terminated either by the end of the string or by a blank line."
    assert copied_run("What is the header block terminated either by the end of?", context) == ""
    assert copied_run("Is the header block terminated either by the end of the string?", context) != ""
