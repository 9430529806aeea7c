"""SQuAD v1.1 / v2.0 files: read with `file:line: problem` errors, write in the official layout.

    {"version": "v2.0", "data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
      "answers": [{"text", "answer_start"}], "is_impossible", "plausible_answers"}]}]}]}

A file is v2.0 when its "version" says so or any question has "is_impossible". The reader checks
what the official scripts silently trust: every answer_start points at its answer text, and no
question id is used twice (the official scripts would score one of the two and drop the other).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from megazoo.core.fs import write_json_atomic
from megazoo.eval.readers.common import LineError
from megazoo.eval.readers.lined_json import load_lined_json


class SquadFormatError(LineError):
    """A SQuAD file that breaks the format; the message is `file:line: problem`."""


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
    line: int = 0
    extra: dict = field(default_factory=dict)  # other keys of the question (kept on rewrite)

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
    """The file's JSON, each object knowing its line; a format problem is a SquadFormatError."""
    return load_lined_json(path, "SQuAD-v1.1 JSON", SquadFormatError)


def _get(obj, key: str, kind, path, what: str, default=None):
    line = getattr(obj, "line", 1)
    if not isinstance(obj, dict):
        raise SquadFormatError(path, line, f"{what} must be a JSON object")
    if key not in obj:
        if default is not None:
            return default
        raise SquadFormatError(path, line, f"{what} has no {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise SquadFormatError(path, line, f"{what}'s {key!r} must be {names}, got {type(value).__name__}")
    return value


def _answers(items, context: str, path, key: str) -> list:
    out = []
    for ans in items:
        text = _get(ans, "text", str, path, "an answer")
        start = _get(ans, "answer_start", int, path, "an answer")
        if context[start:start + len(text)] != text:
            there = context[start:start + len(text)]
            raise SquadFormatError(path, ans.line, f"{key}: answer_start {start} does not point at the answer "
                                                   f"{text!r:.40}: the context has {there!r:.40} there")
        out.append((text, start))
    return out


def read_squad(path: str | os.PathLike) -> SquadFile:
    """Every question of a SQuAD v1.1/v2.0 file, in file order (see the module doc)."""
    root = _lined_json(path)
    if not isinstance(root, dict):
        raise SquadFormatError(path, 1, "a SQuAD file is a JSON object with \"data\"")
    version = str(root.get("version", "1.1"))
    questions, paragraphs, seen = [], [], {}
    for article in _get(root, "data", list, path, "the file"):
        title = article.get("title", "") if isinstance(article, dict) else ""
        for para in _get(article, "paragraphs", list, path, "an article"):
            context = _get(para, "context", str, path, "a paragraph")
            paragraphs.append((str(title), context))
            for qa in _get(para, "qas", list, path, "a paragraph", default=[]):
                uid = str(_get(qa, "id", (str, int), path, "a question"))
                if uid in seen:
                    raise SquadFormatError(path, qa.line, f"question id {uid!r} is used twice (first at line "
                                                          f"{seen[uid]}); ids must be unique")
                seen[uid] = qa.line
                impossible = _get(qa, "is_impossible", bool, path, "a question", default=False)
                if impossible:
                    version = version if version.lstrip("v").startswith("2") else "v2.0"
                answers = _answers(_get(qa, "answers", list, path, "a question", default=[]), context, path, "answers")
                plausible = _answers(_get(qa, "plausible_answers", list, path, "a question", default=[]), context,
                                     path, "plausible_answers")
                if impossible and answers:
                    raise SquadFormatError(path, qa.line, f"question {uid!r} is_impossible but has answers")
                extra = {k: v for k, v in qa.items() if k not in ("id", "question", "answers", "is_impossible",
                                                                  "plausible_answers")}
                questions.append(Question(uid, _get(qa, "question", str, path, "a question"), context, answers,
                                          impossible, plausible, str(title), len(paragraphs) - 1, qa.line, extra))
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
