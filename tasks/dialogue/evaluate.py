"""The dialogue metrics on generated responses, as MSDP (tasks/msdp/metrics.py, from ParlAI) and
nlg-eval compute them, from maintained implementations:

    f1       ParlAI unigram F1 against the gold response (eval.metrics.dialogue; pairs whose gold is
             empty or no_passages_used are skipped, the mean over the rest), in [0, 1]
    kf1      the same F1 against the gold knowledge (pairs with no_passages_used skipped)
    bleu     sacrebleu corpus BLEU against the gold response, in [0, 1] (sacrebleu's score / 100)
    rouge_l  rouge-score ROUGE-L F-measure, mean over pairs, in [0, 1]
    meteor   nltk METEOR with WordNet 3.0, mean over pairs, in [0, 1]

BLEU, ROUGE-L and METEOR use every pair whose gold response is not empty. (MSDP ran nlg-eval's Java
METEOR; nltk's is the maintained Python one, so METEOR values differ from MSDP's.)
"""

from __future__ import annotations

import json
from pathlib import Path

from megazoo.eval.metrics import bleu, knowledge_f1_scores, meteor, rouge_l, unigram_f1_scores, unigram_prf
from megazoo.eval.readers.common import LineError, MissingFile


def read_generations(path, n: int, data_name: str) -> list[str]:
    """One response per line, in data order: exactly `n` lines (a blank line is an empty response);
    a .jsonl file holds one {"text": ...} per line (what the msdp and sample stages write)."""
    path = Path(path)
    if not path.is_file():
        raise MissingFile(f"{path}: no such file (expected one generated response per line)")
    from megazoo.tasks.dialogue.data import decode

    text = decode(path.read_bytes(), path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line
    lines = [ln.rstrip("\r") for ln in lines]
    if len(lines) != n:
        at = n + 1 if len(lines) > n else len(lines) + 1
        raise LineError(path, at, f"{len(lines)} generations but {data_name} has {n} samples; give one response "
                                  f"per line, in data order")
    if path.suffix == ".jsonl":
        return [_text(line, path, i) for i, line in enumerate(lines, start=1)]
    return lines


def _text(line: str, path, number: int) -> str:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise LineError(path, number, f"not valid JSON ({e.msg}); expected {{\"text\": response}}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
        raise LineError(path, number, 'expected {"text": response}')
    return obj["text"]


def dialogue_metrics(responses: list[str], samples: list) -> dict:
    """{"f1", "kf1", "bleu", "rouge_l", "meteor"} and the pair counts behind them."""
    if len(responses) != len(samples):
        raise ValueError(f"{len(responses)} responses but {len(samples)} samples")
    golds = [s.response for s in samples]
    f1 = unigram_f1_scores(responses, golds)
    try:
        kf1 = knowledge_f1_scores(responses, [s.knowledge for s in samples])
    except ValueError:  # no sample has gold knowledge
        kf1 = {"f1": None, "count": 0}
    scored = [(r, g) for r, g in zip(responses, golds) if g.strip()]
    preds, refs = [r for r, _ in scored], [g for _, g in scored]
    metrics = {"f1": f1["f1"], "kf1": kf1["f1"], "bleu": bleu(preds, refs),
               "rouge_l": rouge_l(preds, refs)["fmeasure"], "meteor": meteor(preds, refs)}
    return {"metrics": metrics, "counts": {"f1": f1["count"], "kf1": kf1["count"], "generation": len(scored)}}


def per_example(responses: list[str], samples: list) -> list[dict]:
    out = []
    for r, s in zip(responses, samples):
        f1, kf1 = unigram_prf(r, s.response), unigram_prf(r, s.knowledge)
        out.append({**s.where, "response": r, "gold": s.response, "f1": f1 and f1[2], "kf1": kf1 and kf1[2]})
    return out
