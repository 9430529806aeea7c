"""Downstream-task decontamination, MT-NLG's rule (Smith et al. 2022, section 3.1.3, after GPT-3):
a document that shares a 13-gram (lowercased words, punctuation dropped) with an evaluation set
has each matched span removed together with 200 characters on each side; the document is split
there, pieces shorter than 200 characters are dropped, and a document split more than 10 times is
dropped whole. Pieces keep the document's fields with the id `ID#k` (k = piece number).

The n-gram index (hash -> benchmark) is built once and broadcast to every worker.
"""

from __future__ import annotations

import re

from megazoo.curate.eval_sets import gram_hash

DECON_DEFAULTS = {"tasks": [], "ngram": 13, "margin": 200, "min_piece": 200, "max_splits": 10}
# (lowest, highest) of each setting: generous for real documents, far below what would exhaust memory
DECON_BOUNDS = {"ngram": (1, 1000), "margin": (0, 10**7), "min_piece": (0, 10**7), "max_splits": (0, 10**6)}
_TOKEN = re.compile(r"\w+", re.UNICODE)


def matched_spans(text: str, index: dict[int, str], n: int) -> list[tuple[int, int, str]]:
    """(start char, end char, benchmark) of every n-gram of `text` found in the index."""
    found = [(m.start(), m.end(), m.group().lower()) for m in _TOKEN.finditer(text)]
    words = [w for _, _, w in found]
    spans = []
    for i in range(len(words) - n + 1):
        bench = index.get(gram_hash(words[i:i + n]))
        if bench is not None:
            spans.append((found[i][0], found[i + n - 1][1], bench))
    return spans


def cut(text: str, spans: list[tuple[int, int, str]], margin: int) -> tuple[list[str], int]:
    """(pieces left after removing each span +- margin characters, number of removed regions)."""
    regions = []
    for start, end, _ in sorted(spans):
        lo, hi = max(0, start - margin), min(len(text), end + margin)
        if regions and lo <= regions[-1][1]:
            regions[-1][1] = max(regions[-1][1], hi)
        else:
            regions.append([lo, hi])
    pieces, pos = [], 0
    for lo, hi in regions:
        pieces.append(text[pos:lo])
        pos = hi
    pieces.append(text[pos:])
    return pieces, len(regions)


def check_config(cfg: dict, where: str = "decontaminate") -> dict:
    """The settings with defaults; `tasks` a list of strings."""
    from megazoo.curate.errors import CurateError
    from megazoo.curate.settings import check_keys, number

    check_keys(where, cfg, DECON_DEFAULTS)
    cfg = {**DECON_DEFAULTS, **cfg}
    for name, (lo, hi) in DECON_BOUNDS.items():
        cfg[name] = number(f"{where}.{name}", cfg[name], lo, hi, whole=True)
    tasks = cfg["tasks"]
    if isinstance(tasks, str):
        tasks = [tasks]
    if not isinstance(tasks, list) or not all(isinstance(t, str) and t for t in tasks):
        raise CurateError(f"{where}.tasks: {cfg['tasks']!r}; give a list of evaluation files, RACE folders, suite "
                          "YAMLs, NAME=PATH or `generated`")
    if not tasks:
        raise CurateError(f"{where}.tasks: no evaluation files given (--tasks FILE ..., a suite YAML, "
                          "NAME=PATH or `generated`)")
    cfg["tasks"] = list(tasks)
    return cfg


def decontaminate_shard(docs: list[dict], params: dict) -> tuple[list[dict], list[dict], dict]:
    """The decontaminate stage on one shard; extra stats: hits per benchmark (matched 13-grams) and
    contaminated documents per benchmark."""
    key, cfg, index = params["text_key"], params["config"], params["index"]
    kept, removed = [], []
    hits: dict[str, int] = {}
    docs_hit: dict[str, int] = {}
    for doc in docs:
        spans = matched_spans(doc[key], index, cfg["ngram"])
        if not spans:
            kept.append(doc)
            continue
        benches = sorted({b for _, _, b in spans})
        for b in benches:
            docs_hit[b] = docs_hit.get(b, 0) + 1
        for _, _, b in spans:
            hits[b] = hits.get(b, 0) + 1
        pieces, regions = cut(doc[key], spans, cfg["margin"])
        splits = regions
        named = ", ".join(benches)
        if splits > cfg["max_splits"]:
            removed.append({"id": doc["id"], "stage": "decontaminate",
                            "reason": f"decontaminate: {len(spans)} 13-gram hits ({named}); split {splits} times "
                                      f"> {cfg['max_splits']}, dropped"})
            continue
        survivors = [p.strip() for p in pieces if len(p.strip()) >= cfg["min_piece"]]
        for k, piece in enumerate(survivors):
            kept.append({**doc, "id": f"{doc['id']}#{k}", key: piece})
        removed.append({"id": doc["id"], "stage": "decontaminate",
                        "reason": f"decontaminate: {len(spans)} 13-gram hits ({named}); "
                                  f"kept {len(survivors)} of {len(pieces)} pieces"})
    return kept, removed, {"ngram_hits": hits, "documents_hit": docs_hit}
