"""Downstream-task decontamination with NVIDIA's rules (Megatron-LM tools/openwebtext/filter_ngrams.py,
the tool MT-NLG used: Smith et al. 2022, section 3.1.3, after GPT-3).

Index. Every evaluation text (words: lowercased `\\w+`, punctuation dropped) gives its `ngram`-word
n-grams (13); a text of `min_ngram` to `ngram - 1` words (8-12) is indexed whole, at its own length;
shorter texts are skipped. `ngram_per_task` ({benchmark name: N}) gives a benchmark its own N, as
GPT-3's contamination study chose N per benchmark: its texts give N-grams, and those of
min(min_ngram, N) to N - 1 words are indexed whole. The scan below then starts each position with the
longest indexed length (`ngram` without per-task sizes, so NVIDIA's order is unchanged).

Frequency. An n-gram found in `max_doc_frequency` (10) or more training documents is a common
phrase, not a leak, and is left alone (0 turns the count off). The count is a first pass over every
shard (the same scan as below, counting documents per n-gram), summed before any document is cut.

Scan and cut, per document, as NVIDIA's tool does it: the text is scanned left to right; at each
word position the `ngram`-word window is tried first, then every shorter indexed length (shortest
first), and the window's tail is searched last. The first match splits the text: the part before
`match start - margin` (moved back to the previous `.`, `!` or `?` with `snap: punctuation`) is
kept as it is, the part after `match end + margin` (moved on past the next `.`, `!` or `?`) is
scanned again. The match ends at its start plus the length of its words joined by single spaces
(NVIDIA's arithmetic). Pieces of `min_piece` (200) characters or fewer are dropped, and a document
left in more than `max_splits` (10) pieces is dropped whole. Pieces keep the fields with the id
`ID#k`. Every removal is logged with the task and the n-gram that caused it.

Presets: `nvidia` is NVIDIA's tool exactly (13-grams, 8-12-word texts at their own length, document
frequency 10, 200 characters snapped to punctuation, pieces over 200 characters, at most 10);
`gpt3` is the plain 13-gram rule (no short texts, no frequency count, no snapping) that lm-eval's
Janitor also implements. Settings given beside a preset override it.
"""

from __future__ import annotations

import re

from megazoo.curate.eval_sets import gram_hash

PRESETS = {
    "nvidia": {"ngram": 13, "min_ngram": 8, "max_doc_frequency": 10, "margin": 200, "snap": "punctuation",
               "min_piece": 200, "max_splits": 10},
    "gpt3": {"ngram": 13, "min_ngram": 13, "max_doc_frequency": 0, "margin": 200, "snap": "none",
             "min_piece": 200, "max_splits": 10},
}
DECON_DEFAULTS = {"tasks": [], "preset": None, "ngram_per_task": {}, **PRESETS["nvidia"]}
SNAPS = ("punctuation", "none")
# (lowest, highest) of each setting: generous for real documents, far below what would exhaust memory
DECON_BOUNDS = {"ngram": (1, 1000), "min_ngram": (1, 1000), "max_doc_frequency": (0, 10**12),
                "margin": (0, 10**7), "min_piece": (0, 10**7), "max_splits": (0, 10**6)}
PUNCTUATION = ".!?"
_TOKEN = re.compile(r"\w+", re.UNICODE)


def words_at(text: str) -> tuple[list[str], list[int]]:
    """The lowercased words of `text` and their start characters (NVIDIA's get_words)."""
    found = [(m.group(), m.start()) for m in _TOKEN.finditer(text.lower())]
    return [w for w, _ in found], [p for _, p in found]


def build_index(texts: dict[str, list[str]], ngram: int, min_ngram: int, per_task: dict | None = None) -> dict:
    """{"grams": hash of an indexed n-gram -> its task (first in name order wins), "lengths": the
    n-gram lengths present, "longest": the scan's first window} from the evaluation texts; `per_task`
    {name: N} replaces `ngram` for those benchmarks (their whole-text floor is min(min_ngram, N))."""
    grams: dict[int, str] = {}
    lengths: set[int] = set()
    for name in sorted(texts):
        n = (per_task or {}).get(name, ngram)
        floor = min(min_ngram, n)
        for text in texts[name]:
            words, _ = words_at(text)
            if len(words) < floor:
                continue
            lengths.add(min(len(words), n))
            if len(words) < n:
                grams.setdefault(gram_hash(words), name)
            for i in range(len(words) - n + 1):
                grams.setdefault(gram_hash(words[i:i + n]), name)
    return {"grams": grams, "lengths": sorted(lengths), "longest": max(lengths, default=ngram)}


def scan_length(index: dict, cfg: dict) -> int:
    """The scan's first window at each position: `ngram`, or a longer per-task size when one is indexed."""
    return max(cfg["ngram"], index.get("longest", cfg["ngram"]))


def first_match(text: str, grams, lengths: list[int], ngram: int):
    """(start character, n-gram words, hash) of the first indexed n-gram in NVIDIA's scan order, or None."""
    words, positions = words_at(text)
    order = [ngram] + list(lengths)
    for i in range(len(words) - ngram + 1):
        for n in order:
            h = gram_hash(words[i:i + n])
            if h in grams:
                return positions[i], words[i:i + n], h
    tail = len(words) - ngram
    if tail > 0:  # the last window's later positions, every length below the largest
        for n in lengths:
            if n == ngram:
                continue
            for i in range(tail, len(words) - n + 1):
                h = gram_hash(words[i:i + n])
                if h in grams:
                    return positions[i], words[i:i + n], h
    return None


def split(text: str, start: int, length: int, margin: int, snap: str) -> tuple[str, str]:
    """(text kept before the match, text after it) once the match and `margin` characters each side
    are removed; with snap `punctuation` each cut moves outward to a sentence end (NVIDIA's split_text)."""
    pos = start - margin
    if snap == "none":
        first = text[:pos] if pos > 0 else ""
        return first, text[start + length + margin:]
    while pos > 0 and text[pos] not in PUNCTUATION:
        pos -= 1
    first = text[:pos + 1] if pos > 0 else ""
    pos = start + length + margin
    while pos < len(text) and text[pos] not in PUNCTUATION:
        pos += 1
    return first, text[pos + 1:] if pos + 1 < len(text) else ""


def clean(text: str, index: dict, cfg: dict, removable=None) -> tuple[list[str], list[tuple[int, str]]]:
    """(pieces kept, [(hash, matched n-gram)] in order) for one document; `removable(hash)` says
    whether a match is cut (the frequency rule), default every indexed n-gram."""
    grams, lengths, n = index["grams"], index["lengths"], scan_length(index, cfg)
    todo, kept, hits = [text], [], []
    while todo:
        part = todo.pop(0)
        match = first_match(part, grams if removable is None else _Only(grams, removable), lengths, n)
        if match is None:
            kept.append(part)
            continue
        start, words, h = match
        hits.append((h, " ".join(words)))
        first, rest = split(part, start, len(" ".join(words)), cfg["margin"], cfg["snap"])
        if len(first) > cfg["min_piece"]:
            kept.append(first)
        if len(rest) > cfg["min_piece"]:
            todo.append(rest)
    return kept, hits


class _Only:
    """The index restricted to the n-grams `keep(hash)` accepts (a view: nothing is copied)."""

    def __init__(self, grams: dict, keep):
        self.grams, self.keep = grams, keep

    def __contains__(self, h) -> bool:
        return h in self.grams and self.keep(h)


def document_hits(text: str, index: dict, cfg: dict) -> set[int]:
    """The indexed n-grams NVIDIA's frequency pass counts in one document: the scan, continued after
    each match (one character past its end), without cutting."""
    found, todo = set(), [text]
    while todo:
        part = todo.pop(0)
        match = first_match(part, index["grams"], index["lengths"], scan_length(index, cfg))
        if match is None:
            continue
        start, words, h = match
        found.add(h)
        end = start + len(" ".join(words)) + 1
        if end < len(part):
            todo.append(part[end:])
    return found


def count_shard(in_dir: str, rel: str, key: str, params: dict) -> dict[int, int]:
    """hash -> documents of one shard that contain it (the frequency pass)."""
    from megazoo.curate.shards import read_shard

    counts: dict[int, int] = {}
    for doc in read_shard(in_dir, rel, key):
        for h in document_hits(doc[key], params["index"], params["config"]):
            counts[h] = counts.get(h, 0) + 1
    return counts


def check_config(cfg: dict, where: str = "decontaminate") -> dict:
    """The settings with defaults (a preset's values under the given ones); `tasks` a list of strings."""
    from megazoo.curate.errors import CurateError
    from megazoo.curate.settings import check_keys, number

    check_keys(where, cfg, DECON_DEFAULTS)
    preset = cfg.get("preset")
    if preset is not None and preset not in PRESETS:
        raise CurateError(f"{where}.preset: {preset!r}; choose one of {', '.join(PRESETS)} (or leave it out)")
    cfg = {**DECON_DEFAULTS, **(PRESETS[preset] if preset else {}), **cfg}
    for name, (lo, hi) in DECON_BOUNDS.items():
        cfg[name] = number(f"{where}.{name}", cfg[name], lo, hi, whole=True)
    if cfg["min_ngram"] > cfg["ngram"]:
        raise CurateError(f"{where}.min_ngram: {cfg['min_ngram']} is above ngram {cfg['ngram']}; texts of "
                          f"min_ngram to ngram - 1 words are indexed whole, so give min_ngram <= ngram")
    cfg["ngram_per_task"] = per_task_sizes(cfg["ngram_per_task"], f"{where}.ngram_per_task")
    if cfg["snap"] not in SNAPS:
        raise CurateError(f"{where}.snap: {cfg['snap']!r}; choose one of {', '.join(SNAPS)}")
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


def per_task_sizes(value, where: str) -> dict[str, int]:
    """`ngram_per_task` as {name: N}: a mapping, or the command line's `NAME:N,NAME:N` string."""
    from megazoo.curate.errors import CurateError

    example = "give NAME:N pairs, e.g. --ngram-per-task lambada:8,race:13 (ngram_per_task: {lambada: 8})"
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        pairs = {}
        for item in value.split(","):
            name, sep, n = item.strip().partition(":")
            if not sep or not name.strip() or not (n.strip().isascii() and n.strip().isdigit()):
                raise CurateError(f"{where}: {item.strip()!r} is not NAME:N; {example}")
            if name.strip() in pairs:
                raise CurateError(f"{where}: {name.strip()} is given twice; give each benchmark once")
            pairs[name.strip()] = int(n)
        value = pairs
    if not isinstance(value, dict) or not all(isinstance(k, str) and k for k in value):
        raise CurateError(f"{where}: {value!r}; {example}")
    lo, hi = DECON_BOUNDS["ngram"]
    for name, n in value.items():
        if isinstance(n, bool) or not isinstance(n, int) or not lo <= n <= hi:
            raise CurateError(f"{where}: {name}: {n!r}; N must be a whole number of words from {lo} to {hi}")
    return dict(value)


def check_task_names(cfg: dict, where: str = "decontaminate") -> None:
    """Every benchmark `ngram_per_task` names must be one of the tasks (before any work starts)."""
    from megazoo.curate.errors import CurateError
    from megazoo.curate.eval_sets import resolve

    if not cfg.get("ngram_per_task"):
        return
    known = sorted({name for name, _ in resolve(list(cfg["tasks"]))})
    unknown = [n for n in cfg["ngram_per_task"] if n not in known]
    if unknown:
        raise CurateError(f"{where}.ngram_per_task: {unknown[0]} is not one of the tasks' benchmarks "
                          f"({', '.join(known)}); name a benchmark as --tasks names it (file stem, NAME=PATH, "
                          "or the suite's name)")


def decontaminate_shard(docs: list[dict], params: dict) -> tuple[list[dict], list[dict], dict]:
    """The decontaminate stage on one shard. params: text_key, config, index (build_index), and
    `frequent`: the n-grams found in max_doc_frequency or more documents (left alone). Extra stats:
    matched n-grams and contaminated documents per task; each removal's reason names every match
    (task and n-gram)."""
    key, cfg, index = params["text_key"], params["config"], params["index"]
    frequent = params.get("frequent") or set()
    grams = index["grams"]
    kept, removed = [], []
    hits: dict[str, int] = {}
    docs_hit: dict[str, int] = {}
    for doc in docs:
        pieces, found = clean(doc[key], index, cfg, (lambda h: h not in frequent) if frequent else None)
        if not found:
            kept.append(doc)
            continue
        tasks = sorted({grams[h] for h, _ in found})
        for t in tasks:
            docs_hit[t] = docs_hit.get(t, 0) + 1
        for h, gram in found:
            hits[grams[h]] = hits.get(grams[h], 0) + 1
        shown = "; ".join(f"{grams[h]}: \"{gram}\"" for h, gram in found)  # every match: task and n-gram
        if len(pieces) > cfg["max_splits"]:
            removed.append({"id": doc["id"], "stage": "decontaminate",
                            "reason": f"decontaminate: {len(found)} matches ({shown}); {len(pieces)} pieces "
                                      f"> {cfg['max_splits']}, dropped"})
            continue
        for k, piece in enumerate(pieces):
            kept.append({**doc, "id": f"{doc['id']}#{k}", key: piece})
        removed.append({"id": doc["id"], "stage": "decontaminate",
                        "reason": f"decontaminate: {len(found)} matches ({shown}); kept {len(pieces)} pieces"})
    return kept, removed, {"ngram_hits": hits, "documents_hit": docs_hit}
