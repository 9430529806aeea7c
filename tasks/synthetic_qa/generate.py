"""`generate`: the offline data of the pipeline, from the embedded corpus (megazoo.core.data.corpus,
the standard library's documentation as prose). Generated data, not SQuAD.

    OUT/train.json       SQuAD v1.1: template questions (templates.py) about the train paragraphs;
                         what the answer extractor, the question generator and the filter's QA
                         model are bootstrapped on
    OUT/qg.jsonl         the question generator's pairs {prompt, response} from train.json (task sft)
    OUT/paragraphs.json  SQuAD v1.1 without questions: the text the synthetic data is made from
    OUT/dev.json         the hand-written dev set (package data, data/dev.json)

Paragraphs are those of 200-700 characters without code (the corpus with its class and function
docstrings), deduplicated and shuffled by the seed; the dev set's paragraphs, and every paragraph
sharing a sentence with one of them, are left out of both splits. A paragraph goes to train when templates find questions in it and train is not full, else
to the text.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from megazoo.tasks.synthetic_qa.builder import DEV
from megazoo.tasks.synthetic_qa.prompts import qg_prompt
from megazoo.tasks.synthetic_qa.squad import Question, read_squad, write_squad
from megazoo.tasks.synthetic_qa.templates import paragraph_questions, sentences

CODE = set("=(){}[]<>#@%|\\;")


def _sentence_keys(paragraph: str) -> set:
    """The paragraph's sentences of 30+ characters, lowercased: what two versions of a text share."""
    return {s.lower() for _, s in sentences(paragraph) if len(s) >= 30}


def corpus_paragraphs(exclude: set, seed: int) -> list[str]:
    """The corpus paragraphs, shuffled; `exclude`'s paragraphs are left out, and so is every
    paragraph sharing a sentence with one of them (the corpus holds some texts twice, in
    slightly different versions)."""
    from megazoo.core.data.corpus import documents

    held = set().union(*map(_sentence_keys, exclude)) if exclude else set()
    seen, out = set(exclude), []
    for doc in documents(members=True):
        for p in doc.split("\n"):
            if (200 <= len(p) <= 700 and sum(c in CODE for c in p) < 4 and p not in seen
                    and not _sentence_keys(p) & held):
                seen.add(p)
                out.append(p)
    random.Random(seed).shuffle(out)
    return out


def generate(out, seed: int = 0, train_paragraphs: int = 400, text_paragraphs: int = 150) -> dict:
    """Write the four files (see the module doc); returns their counts."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    dev = read_squad(DEV)
    paras = corpus_paragraphs({c for _, c in dev.paragraphs}, seed)
    train_p, text_p, questions = [], [], []
    for p in paras:
        qs = paragraph_questions(p)
        if qs and len(train_p) < train_paragraphs:
            for question, answer, start in qs:
                questions.append(Question(f"t{len(train_p):04d}-{len(questions):05d}", question, p, [(answer, start)],
                                          paragraph=len(train_p)))
            train_p.append((f"train-{len(train_p) // 20:03d}", p))
        elif len(text_p) < text_paragraphs:
            text_p.append((f"text-{len(text_p) // 20:03d}", p))
    write_squad(out / "train.json", train_p, questions)
    write_squad(out / "paragraphs.json", text_p, [])
    with open(out / "qg.jsonl", "w", encoding="utf-8") as f:
        for q in questions:
            text, start = q.answers[0]
            f.write(json.dumps({"prompt": qg_prompt(q.context, start, text), "response": " " + q.question},
                               ensure_ascii=False) + "\n")
    shutil.copyfile(DEV, out / "dev.json")
    return {"train_paragraphs": len(train_p), "train_questions": len(questions), "text_paragraphs": len(text_p),
            "dev_questions": len(dev.questions)}
