"""Entity-level NER precision, recall and F1, as seqeval's default (conlleval) mode.

Chunks are read with the CoNLL-2000 ``conlleval`` rules, which seqeval's default mode follows:
a chunk starts at a B (or S) tag, at an I/E tag after O, E or S, or wherever the entity type
changes; it ends before a B/S/O tag, after an E/S tag, or where the type changes. These rules
decode IOB (IOB1: I opens a chunk, B only separates two adjacent chunks of one type), IOB2 and
IOBES alike. A tag is ``<prefix>-<type>``; a bare ``B``/``I`` (as in the BioBERT NER files) has
the type ``_``. An entity is correct only with the exact span and type; the scores are micro
averages over entities (Tjong Kim Sang and Buchholz 2000; seqeval ``classification_report``).
"""
from __future__ import annotations

from typing import Sequence

from megazoo.eval.metrics._util import check_pairs

Entity = tuple[str, int, int]  # (type, first token, last token), inclusive like seqeval


def _split_tag(tag: str) -> tuple[str, str]:
    prefix = tag[:1]
    kind = tag[1:].split("-", maxsplit=1)[-1] or "_"
    return prefix, kind


def _chunk_ends(prev: str, prev_kind: str, cur: str, kind: str) -> bool:
    if prev in ("E", "S"):
        return True
    if prev in ("B", "I") and cur in ("B", "S", "O"):
        return True
    return prev not in ("O", ".") and prev_kind != kind


def _chunk_starts(prev: str, prev_kind: str, cur: str, kind: str) -> bool:
    if cur in ("B", "S"):
        return True
    if prev in ("E", "S", "O") and cur in ("E", "I"):
        return True
    return cur not in ("O", ".") and prev_kind != kind


def get_entities(tags: Sequence[str]) -> list[Entity]:
    """The entities ``(type, start, end)`` (end inclusive) of one tag sequence."""
    entities: list[Entity] = []
    prev, prev_kind, begin = "O", "", 0
    for i, tag in enumerate(list(tags) + ["O"]):  # the sentinel O closes a final chunk
        cur, kind = _split_tag(tag)
        if _chunk_ends(prev, prev_kind, cur, kind):
            entities.append((prev_kind, begin, i - 1))
        if _chunk_starts(prev, prev_kind, cur, kind):
            begin = i
        prev, prev_kind = cur, kind
    return entities


def _prf(correct: int, predicted: int, gold: int) -> tuple[float, float, float]:
    precision = correct / predicted if predicted else 0.0
    recall = correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def ner_scores(
    predictions: Sequence[Sequence[str]], references: Sequence[Sequence[str]]
) -> dict[str, object]:
    """Micro entity-level ``{"precision", "recall", "f1", "per_type"}`` in [0, 1].

    ``predictions`` and ``references`` are lists of tag sentences of equal lengths.
    ``per_type`` maps each entity type to ``{"precision", "recall", "f1", "support"}``
    (support = gold entities of that type). A score with a zero denominator is 0, as seqeval.
    """
    check_pairs(predictions, references)
    gold: set[tuple[int, str, int, int]] = set()
    pred: set[tuple[int, str, int, int]] = set()
    for n, (p, r) in enumerate(zip(predictions, references)):
        if isinstance(p, str) or isinstance(r, str):
            raise TypeError("each prediction and reference must be a list of tags, not a string")
        if len(p) != len(r):
            raise ValueError(f"sentence {n}: {len(p)} predicted tags but {len(r)} gold tags")
        pred.update((n, *e) for e in get_entities(p))
        gold.update((n, *e) for e in get_entities(r))
    correct = gold & pred
    precision, recall, f1 = _prf(len(correct), len(pred), len(gold))
    per_type: dict[str, dict[str, float]] = {}
    for kind in sorted({e[1] for e in gold | pred}):
        c = sum(1 for e in correct if e[1] == kind)
        p_n = sum(1 for e in pred if e[1] == kind)
        g_n = sum(1 for e in gold if e[1] == kind)
        tp, tr, tf = _prf(c, p_n, g_n)
        per_type[kind] = {"precision": tp, "recall": tr, "f1": tf, "support": g_n}
    return {"precision": precision, "recall": recall, "f1": f1, "per_type": per_type}
