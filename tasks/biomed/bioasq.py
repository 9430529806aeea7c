"""BioASQ test batches scored per question, as BioBERT and BioMegatron report them.

BioBERT's release of a BioASQ test batch is SQuAD-v1.1 JSON (read by data.read_squad_json) with one
`qas` entry per (question, snippet) pair, its id `<question id>_<snippet number>` (`5c7e..._001`).
The gold answers come in the batch's golden file, BioASQ's own layout:

    {"questions": [{"id", "body", "type": "factoid"|"list"|"yesno"|"summary", "exact_answer", ...}]}

where a factoid `exact_answer` is a list of synonym lists (`[["HTT", "huntingtin"]]`), or, in some
years, a flat list of synonyms; both are read (a bare string too), as one set of gold synonyms.
Factoid questions are kept; list, yesno and summary questions are skipped and counted.

Per question, as BioBERT's biocodes/transform_nbset2bioasqform.py does it: each snippet's n-best
spans get probabilities (a softmax over the snippet's n-best scores, BERT's write_predictions);
the candidates of all the question's snippets are ordered by probability; empty texts and texts
over 100 characters are dropped; a text seen again, compared case-insensitively, adds its
probability to the first (most probable) spelling, and appears once; the 5 best sums are the
question's answer. megazoo.eval.metrics.bioasq_factoid_scores then gives strict accuracy, lenient
accuracy and MRR over the golden file's factoid questions; one with no snippet predicted counts as
wrong. The question of a snippet is the part of its id before the last `_` (BioBERT's convention;
an id without `_` is its own question).

Bad input is one line: `file:line: problem` (a golden question also says its number and id).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from megazoo.eval.metrics import bioasq_factoid_scores
from megazoo.eval.readers.lined_json import load_lined_json
from megazoo.tasks.biomed.data import BiomedArticleError, BiomedFormatError

TYPES = ("factoid", "list", "yesno", "summary")
TOP_K = 5  # answers a question may submit for factoid (BioASQ since its third year)
MAX_ANSWER_CHARS = 100  # BioBERT drops longer candidate texts
GOLDEN = "BioASQ golden JSON: {\"questions\": [{\"id\", \"type\", \"exact_answer\", ...}]}"


@dataclass(frozen=True)
class GoldQuestion:
    id: str
    body: str
    synonyms: tuple[str, ...]  # every gold synonym of the answer, flattened, in file order
    line: int


@dataclass(frozen=True)
class Golden:
    path: str
    questions: dict[str, GoldQuestion]  # the factoid questions by id, in file order
    others: frozenset[str]  # the ids of its list, yesno and summary questions: not scored

    @property
    def skipped(self) -> int:
        return len(self.others)


@dataclass(frozen=True)
class QuestionScores:
    rows: list[dict]  # per golden factoid question: {"id", "answers", "scores", "gold"}
    metrics: dict[str, float]  # strict_accuracy, lenient_accuracy, mrr
    n_questions: int
    n_skipped: int
    n_without_prediction: int


# the golden file ------------------------------------------------------------------------------------
def _synonyms(value, where) -> tuple[str, ...]:
    """The gold synonyms of a factoid `exact_answer`: nested or flat lists of strings, or a string."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise where(f"'exact_answer' must be a list of synonym lists, got {type(value).__name__}")
    found: list[str] = []
    for item in value:
        group = [item] if isinstance(item, str) else item
        if not isinstance(group, list) or not all(isinstance(s, str) for s in group):
            raise where(f"'exact_answer' must hold strings or lists of strings, got {item!r:.60}")
        found += [s for s in group if s.strip() and s not in found]
    if not found:
        raise where("'exact_answer' holds no answer text")
    return tuple(found)


def read_golden(path: str | os.PathLike) -> Golden:
    """The factoid questions of a BioASQ golden file, and how many others it holds."""
    root = load_lined_json(path, GOLDEN, BiomedFormatError)
    if not isinstance(root, dict) or not isinstance(root.get("questions"), list):
        raise BiomedFormatError(path, getattr(root, "line", 1), f"no 'questions' list; expected {GOLDEN}")
    questions: dict[str, GoldQuestion] = {}
    others: set[str] = set()
    for number, q in enumerate(root["questions"], start=1):
        line = getattr(q, "line", 1)
        if not isinstance(q, dict):
            raise BiomedFormatError(path, line, f"question {number} is not a JSON object")
        uid = q.get("id")
        label = f"question {number}" + (f" (id {uid})" if isinstance(uid, str) else "")

        def where(problem: str) -> BiomedFormatError:
            return BiomedFormatError(path, line, f"{label}: {problem}")

        if not isinstance(uid, str) or not uid:
            raise where("has no 'id' string")
        if uid in questions or uid in others:
            raise where("the id appears twice in the file")
        kind = q.get("type")
        if kind not in TYPES:
            raise where(f"'type' {kind!r} is not one of {', '.join(TYPES)}")
        if kind != "factoid":
            others.add(uid)
            continue
        if "exact_answer" not in q:
            raise where("a factoid question without 'exact_answer' (give the golden file, not the test set)")
        body = q.get("body", "")
        if not isinstance(body, str):
            raise where(f"'body' must be a string, got {type(body).__name__}")
        questions[uid] = GoldQuestion(uid, body, _synonyms(q["exact_answer"], where), line)
    if not questions:
        raise BiomedFormatError(path, 1, f"holds no factoid question ({len(others)} of other types); "
                                         f"give the golden file of a BioASQ test batch")
    return Golden(os.fspath(path), questions, frozenset(others))


# per-question answers -------------------------------------------------------------------------------
def question_of(snippet_id: str) -> str:
    """`<question id>_<snippet number>` -> the question id; an id without `_` is its own question."""
    return snippet_id.rsplit("_", 1)[0] if "_" in snippet_id else snippet_id


def snippet_probabilities(candidates: list[dict]) -> list[tuple[str, float]]:
    """(text, probability) of one snippet's n-best [{"text", "score"}]: a softmax over its scores."""
    if not candidates:
        return []
    top = max(c["score"] for c in candidates)
    weights = [math.exp(c["score"] - top) for c in candidates]
    total = sum(weights)
    return [(c["text"], w / total) for c, w in zip(candidates, weights)]


def merge_snippets(snippets: list[list[dict]], top_k: int = TOP_K) -> list[tuple[str, float]]:
    """The `top_k` (text, probability) of a question from its snippets' n-best lists (module doc)."""
    pooled = [pair for cands in snippets for pair in snippet_probabilities(cands)]
    pooled.sort(key=lambda pair: -pair[1])  # stable: ties keep snippet order
    spelling: dict[str, str] = {}
    sums: dict[str, float] = {}
    for text, prob in pooled:
        if not text or len(text) > MAX_ANSWER_CHARS:
            continue
        key = text.lower()
        if key not in spelling:
            spelling[key] = text
            sums[text] = 0.0
        sums[spelling[key]] += prob
    return sorted(sums.items(), key=lambda kv: -kv[1])[:top_k]


def group_snippets(golden: Golden, examples: list, batch: str | os.PathLike) -> dict[str, list[int]]:
    """Indexes of the batch's snippets by question id; a snippet whose question the golden file
    lacks is an error naming both files. Snippets of skipped (non-factoid) questions are left out."""
    groups: dict[str, list[int]] = {}
    for i, x in enumerate(examples):
        qid = question_of(x.id)
        if qid in golden.questions:
            groups.setdefault(qid, []).append(i)
        elif qid not in golden.others:
            where = (BiomedFormatError, x.line) if x.line else (BiomedArticleError, x.article)  # HF rows: neither
            raise where[0](batch, where[1] or None, f"snippet {x.id!r}: its question {qid!r} is not in the golden "
                                                   f"file {golden.path}; give this batch's golden file")
    return groups


def score_questions(golden: Golden, examples: list, predictions: list[list[dict]],
                    batch: str | os.PathLike, top_k: int = TOP_K) -> QuestionScores:
    """Per-question answers and metrics of a test batch: `examples` its snippets (QAQuestion, in
    file order), `predictions` their n-best [{"text", "score"}] (the QA builder's predict)."""
    if len(examples) != len(predictions):
        raise ValueError(f"{len(examples)} snippets but {len(predictions)} predictions; they must pair up")
    groups = group_snippets(golden, examples, batch)
    rows = []
    for qid, q in golden.questions.items():
        merged = merge_snippets([predictions[i] for i in groups.get(qid, [])], top_k)
        rows.append({"id": qid, "answers": [t for t, _ in merged], "scores": [p for _, p in merged],
                     "gold": list(q.synonyms)})
    metrics = bioasq_factoid_scores([r["answers"] for r in rows], [r["gold"] for r in rows], top_k=top_k)
    return QuestionScores(rows, metrics, len(rows), golden.skipped,
                          sum(qid not in groups for qid in golden.questions))
