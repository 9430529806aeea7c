"""SQuAD v1.1 / v2.0 files: read with `file:line: problem` errors, write in the official layout.

    {"version": "v2.0", "data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
      "answers": [{"text", "answer_start"}], "is_impossible", "plausible_answers"}]}]}]}

A file is v2.0 when its "version" says so or any question has "is_impossible". The reader checks
what the official scripts silently trust: every answer_start points at its answer text, and no
question id is used twice (the official scripts would score one of the two and drop the other).

The reader streams the file one article at a time (iter_squad, iter_squad_paragraphs; a gzip is read
directly), so a bad article is named by its number: `file: article N: problem`; a syntax error names
its line where it can be told. read_squad returns the whole SquadFile.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from megazoo.core.fs import write_json_atomic
from megazoo.eval.readers.common import LineError
from megazoo.eval.readers.lined_json import ArticleError, load_lined_json, member_items, member_value

SQUAD = 'a SQuAD v1.1/v2.0 JSON file: {"data": [{"title", "paragraphs": [...]}], "version"}'


class SquadFormatError(LineError):
    """A SQuAD file that breaks the format; the message is `file:line: problem`."""


class SquadArticleError(ArticleError, SquadFormatError):
    """A bad article of a streamed SQuAD file, whose line is not known: `file: article N: problem`."""


@dataclass
class Question:
    """One question of a SQuAD file. `answers` are (text, answer_start) pairs; an impossible
    (v2.0) question has none and may carry plausible_answers."""

    id: str
    question: str
    context: str
    answers: list = field(default_factory=list)
    is_impossible: bool = False
    plausible_answers: list = field(default_factory=list)
    title: str = ""
    paragraph: int = 0  # index of the paragraph in the file (questions of one paragraph share it)
    line: int = 0  # 0 when read from a SQuAD file: the streamed reader knows the article, not the line
    extra: dict = field(default_factory=dict)  # other keys of the question (kept on rewrite)
    article: int = 0  # the 1-based number of its article in the file it was read from (0: not read)

    @property
    def answer_texts(self) -> list[str]:
        return [t for t, _ in self.answers]


@dataclass
class SquadFile:
    questions: list
    version: str = "1.1"
    paragraphs: list = field(default_factory=list)  # (title, context) per paragraph, questions or not

    @property
    def v2(self) -> bool:
        return self.version.lstrip("v").startswith("2")


def _lined_json(path):
    """The file's JSON, each object knowing its line; a format problem is a SquadFormatError (for the
    small files read whole: predictions; the data files are streamed, see iter_squad)."""
    return load_lined_json(path, "SQuAD-v1.1 JSON", SquadFormatError)


def _get(obj, key: str, kind, where: tuple, what: str, default=None):
    """obj[key] checked to be of `kind`; `where` is (path, article number) for the error."""
    if not isinstance(obj, dict):
        raise SquadArticleError(*where, f"{what} must be a JSON object")
    if key not in obj:
        if default is not None:
            return default
        raise SquadArticleError(*where, f"{what} has no {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise SquadArticleError(*where, f"{what}'s {key!r} must be {names}, got {type(value).__name__}")
    return value


def _answers(items, context: str, where: tuple, key: str, uid: str) -> list:
    out = []
    for ans in items:
        text = _get(ans, "text", str, where, f"an answer of question {uid!r}")
        start = _get(ans, "answer_start", int, where, f"an answer of question {uid!r}")
        if context[start:start + len(text)] != text:
            there = context[start:start + len(text)]
            raise SquadArticleError(*where, f"question {uid!r}: {key}: answer_start {start} does not point at the "
                                            f"answer {text!r:.40}: the context has {there!r:.40} there")
        out.append((text, start))
    return out


def iter_squad_paragraphs(path: str | os.PathLike) -> Iterator[tuple[str, str, list]]:
    """(title, context, questions) for each paragraph of a SQuAD v1.1/v2.0 file (or its gzip), in file
    order, streamed one article at a time (eval/readers/lined_json.py member_items): time linear in
    the file, memory bounded by one article plus the question ids seen (a dict id -> article number,
    for the duplicate check: about 100 bytes a question, 13 MB for SQuAD v2.0 train). A bad article
    raises SquadArticleError, `file: article N: problem`, when the stream reaches it."""
    seen: dict[str, int] = {}
    paragraph = -1
    for n, article in member_items(path, "data", SQUAD, SquadFormatError, SquadArticleError):
        where = (path, n)
        title = str(article.get("title", "")) if isinstance(article, dict) else ""
        for para in _get(article, "paragraphs", list, where, "an article"):
            context = _get(para, "context", str, where, "a paragraph")
            paragraph += 1
            questions = []
            for qa in _get(para, "qas", list, where, "a paragraph", default=[]):
                uid = str(_get(qa, "id", (str, int), where, "a question"))
                if uid in seen:
                    raise SquadArticleError(*where, f"question id {uid!r} is used twice (first in article "
                                                    f"{seen[uid]}); ids must be unique")
                seen[uid] = n
                what = f"question {uid!r}"
                impossible = _get(qa, "is_impossible", bool, where, what, default=False)
                answers = _answers(_get(qa, "answers", list, where, what, default=[]), context, where, "answers", uid)
                plausible = _answers(_get(qa, "plausible_answers", list, where, what, default=[]), context, where,
                                     "plausible_answers", uid)
                if impossible and answers:
                    raise SquadArticleError(*where, f"question {uid!r} is_impossible but has answers")
                extra = {k: v for k, v in qa.items() if k not in ("id", "question", "answers", "is_impossible",
                                                                  "plausible_answers")}
                questions.append(Question(uid, _get(qa, "question", str, where, what), context, answers, impossible,
                                          plausible, title, paragraph, 0, extra, n))
            yield title, context, questions


def iter_squad(path: str | os.PathLike) -> Iterator[Question]:
    """Every question of a SQuAD v1.1/v2.0 file, in file order, one article at a time (see
    iter_squad_paragraphs)."""
    for _, _, questions in iter_squad_paragraphs(path):
        yield from questions


def read_squad(path: str | os.PathLike) -> SquadFile:
    """Every question and paragraph of a SQuAD v1.1/v2.0 file, in file order (see the module doc); the
    version is the file's "version" (before or after "data"), v2.0 when a question is_impossible."""
    from megazoo.tasks.synthetic_qa import squad_hf  # a Hugging Face dataset (squad_hf.py)
    if squad_hf.is_hf_source(path):
        return squad_hf.read_squad_hf(path)
    questions, paragraphs, v2 = [], [], False
    for title, context, qs in iter_squad_paragraphs(path):
        paragraphs.append((title, context))
        questions.extend(qs)
        v2 = v2 or any(q.is_impossible for q in qs)
    version = str(member_value(path, "version", "1.1"))
    if v2 and not version.lstrip("v").startswith("2"):
        version = "v2.0"
    return SquadFile(questions, version, paragraphs)


def squad_dict(paragraphs: list, questions: list, version: str = "1.1") -> dict:
    """The SQuAD JSON of `paragraphs` [(title, context)] and their questions (Question.paragraph
    indexes `paragraphs`); articles group consecutive paragraphs of one title."""
    v2 = version.lstrip("v").startswith("2")
    by_para: dict[int, list] = {}
    for q in questions:
        by_para.setdefault(q.paragraph, []).append(q)
    data = []
    for i, (title, context) in enumerate(paragraphs):
        qas = []
        for q in by_para.get(i, []):
            row = {"id": q.id, "question": q.question,
                   "answers": [{"text": t, "answer_start": s} for t, s in q.answers], **q.extra}
            if v2:
                row["is_impossible"] = bool(q.is_impossible)
                if q.plausible_answers:
                    row["plausible_answers"] = [{"text": t, "answer_start": s} for t, s in q.plausible_answers]
            qas.append(row)
        if not data or data[-1]["title"] != title:
            data.append({"title": title, "paragraphs": []})
        data[-1]["paragraphs"].append({"context": context, "qas": qas})
    return {"version": "v2.0" if v2 else "1.1", "data": data}


def write_squad(path: str | os.PathLike, paragraphs: list, questions: list, version: str = "1.1") -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, squad_dict(paragraphs, questions, version), ensure_ascii=False)
    return path
