"""The `data` stage: the offline data of the pipeline, from the embedded corpus
(megazoo.core.data.corpus, the standard library's documentation as prose). Generated data, not SQuAD.

    OUT/train.json       SQuAD v1.1: what the answer extractor, the question generator and the
                         filter's QA model are trained on (Puri et al. train them on SQuAD, human
                         questions): by default the package's hand-written training set
                         (data/train.json: 294 questions on 98 corpus paragraphs); `--bootstrap
                         templates` uses template questions (templates.py) instead, `both` both
    OUT/qg.jsonl         the question generator's pairs {prompt, response, qg_input} from train.json
                         (task sft; prompts in the `qg_input` layout, prompts.py: the paragraph with the
                         answer marked by default, `--qg-input sentence` the answer's sentence)
    OUT/paragraphs.json  SQuAD v1.1 without questions: the text the synthetic data is made from
    OUT/dev.json         the hand-written dev set (package data, data/dev.json)

Paragraphs are those of 200-700 characters without code (the corpus with its class and function
docstrings), deduplicated and shuffled by the seed. The dev set's paragraphs, and every paragraph
sharing a sentence with one of them, are left out of everything; the hand-written training
paragraphs are left out of the text. With templates, a paragraph goes to train when templates find
questions in it and train is not full, else to the text.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from megazoo.tasks.synthetic_qa.builder import DEV
from megazoo.tasks.synthetic_qa.prompts import QG_INPUTS, qg_input_prompt
from megazoo.tasks.synthetic_qa.squad import Question, read_squad, write_squad
from megazoo.tasks.synthetic_qa.templates import paragraph_questions, sentences

CODE = set("=(){}[]<>#@%|\\;")
HANDWRITTEN = Path(__file__).parent / "data" / "train.json"
BOOTSTRAPS = ("handwritten", "templates", "both")


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


def generate(out, seed: int = 0, train_paragraphs: int = 400, text_paragraphs: int = 600,
             bootstrap: str = "handwritten", qg_input: str = QG_INPUTS[0]) -> dict:
    """Write the four files (see the module doc); returns their counts. train_paragraphs caps the
    template paragraphs (templates, both)."""
    if bootstrap not in BOOTSTRAPS:
        raise ValueError(f"--bootstrap must be one of {', '.join(BOOTSTRAPS)}, got {bootstrap!r}")
    if qg_input not in QG_INPUTS:
        raise ValueError(f"--qg-input must be one of {', '.join(QG_INPUTS)}, got {qg_input!r}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    dev = read_squad(DEV)
    train_p, questions = [], []
    held = {c for _, c in dev.paragraphs}
    if bootstrap in ("handwritten", "both"):
        hand = read_squad(HANDWRITTEN)
        train_p = list(hand.paragraphs)
        questions = list(hand.questions)
        held |= {c for _, c in hand.paragraphs}
    text_p = []
    templates = 0
    for p in corpus_paragraphs(held, seed):
        qs = paragraph_questions(p) if bootstrap != "handwritten" and templates < train_paragraphs else []
        if qs:
            for question, answer, start in qs:
                questions.append(Question(f"t{templates:04d}-{len(questions):05d}", question, p, [(answer, start)],
                                          paragraph=len(train_p)))
            train_p.append((f"train-{templates // 20:03d}", p))
            templates += 1
        elif len(text_p) < text_paragraphs:
            text_p.append((f"text-{len(text_p) // 20:03d}", p))
    write_squad(out / "train.json", train_p, questions)
    write_squad(out / "paragraphs.json", text_p, [])
    with open(out / "qg.jsonl", "w", encoding="utf-8") as f:
        for q in questions:
            text, start = q.answers[0]
            f.write(json.dumps({"prompt": qg_input_prompt(qg_input, q.context, start, text),
                                "response": " " + q.question, "qg_input": qg_input}, ensure_ascii=False) + "\n")
    shutil.copyfile(DEV, out / "dev.json")
    return {"bootstrap": bootstrap, "qg_input": qg_input, "train_paragraphs": len(train_p),
            "train_questions": len(questions), "text_paragraphs": len(text_p), "dev_questions": len(dev.questions)}
