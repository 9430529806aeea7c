"""A generated test corpus with known answers ("planted"), for the tests, the benchmark and the
demo recipe. Not a real crawl: the clean text is the standard library's documentation (the
embedded corpus, core/data/corpus.py) cut into passages; everything else is generated from it.

OUT/raw/web/shard-K.jsonl   the crawl: clean passages, plus
    near-duplicates   edited copies (words replaced) at measured Jaccard similarities from 0.5 to 0.97
    exact copies      the same text with case and spacing changed
    low quality       symbol soup, navigation boilerplate, short fragments, word salad and keyword spam
    contaminated      clean passages with 20-40 words of an evaluation passage pasted in
OUT/raw/books/shard-0.jsonl   a second, clean source (for blending)
OUT/reference/reference.jsonl clean passages not in the crawl (the quality classifier's reference)
OUT/eval/lambada.jsonl        LAMBADA format (eval/corpus_tasks.make_lambada) from held-out passages
OUT/eval/RACE/test/high/1.txt RACE format: one article with a question
OUT/truth.json                ids of every planted document and the pairs' measured similarities
Copies are placed in other shards than their originals, so dedup must work across partitions.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from megazoo.curate.fuzzy_dedup import jaccard, shingles
from megazoo.curate.shards import write_jsonl

LEVELS = (0.97, 0.93, 0.9, 0.86, 0.83, 0.75, 0.65, 0.5)
SPAM = ("best cheap buy online discount free shipping top deal sale offer price click now "
        "lowest guaranteed amazing order today limited").split()
NAV = ["Home | About us | Contact | Blog | Shop", "Sign in to continue", "Accept all cookies",
       "Subscribe to our newsletter", "Share on Facebook | Twitter | Email", "Copyright all rights reserved"]


def passages(min_words: int = 90, max_words: int = 160, limit: int | None = None) -> list[str]:
    """Clean passages of the embedded corpus that pass the default filters and are not similar to
    each other (no two share a Jaccard similarity of 0.3 over 5-word shingles)."""
    from megazoo.core.data.corpus import stdlib_documents
    from megazoo.curate.filters import FilterConfig, filter_reason

    config = FilterConfig()
    out, seen_shingles = [], {}

    def documents():  # module docstrings first (fast); members' docstrings only when more are needed
        yield from stdlib_documents(members=False)
        yield from stdlib_documents(members=True)

    for doc in documents():
        words = doc.split()
        for start in range(0, len(words) - min_words, max_words):
            text = " ".join(words[start:start + max_words])
            if filter_reason(text, config) is not None:
                continue
            sh = shingles(text, 5)
            overlap: dict[int, int] = {}
            for s in sh:
                for j in seen_shingles.get(s, ()):
                    overlap[j] = overlap.get(j, 0) + 1
            if any(n / len(sh) >= 0.3 for n in overlap.values()):
                continue
            for s in sh:
                seen_shingles.setdefault(s, []).append(len(out))
            out.append(text)
            if limit and len(out) >= limit:
                return out
    return out


def edit_to(text: str, target: float, vocab: list[str], rng: random.Random) -> tuple[str, float]:
    """Replace random words until the 5-shingle Jaccard with `text` falls to `target` or just below."""
    words = text.split()
    base = shingles(text, 5)
    order = list(range(len(words)))
    rng.shuffle(order)
    current, value = list(words), 1.0
    for i in order:
        trial = list(current)
        trial[i] = rng.choice(vocab)
        j = jaccard(base, shingles(" ".join(trial), 5))
        if j < target - 0.03:
            continue  # this edit overshoots; try another position
        current, value = trial, j
        if j <= target:
            break
    return " ".join(current), value


def low_quality(kind: str, vocab: list[str], rng: random.Random) -> str:
    if kind == "symbols":
        return " ".join("".join(rng.choice("#$%&*@!~^|<>{}") for _ in range(rng.randint(2, 7))) for _ in range(120))
    if kind == "boilerplate":
        return "\n".join(rng.choice(NAV) for _ in range(40))
    if kind == "short":
        return " ".join(rng.choice(vocab) for _ in range(rng.randint(5, 30)))
    glue = ["the", "of", "and", "to", "with", "that", "a", "is", "for", "in"]
    if kind == "salad":  # dictionary words in random order, glued with stop words: passes the rules
        return " ".join(rng.choice(glue) if rng.random() < 0.3 else rng.choice(vocab)
                        for _ in range(rng.randint(90, 150)))
    return " ".join(rng.choice(glue) if rng.random() < 0.3 else rng.choice(SPAM)  # keyword spam
                    for _ in range(rng.randint(90, 150)))


def generate(out, n_clean: int = 120, n_shards: int = 4, seed: int = 0, n_reference: int = 60,
             low_per_kind: int = 6, n_contaminated: int = 8) -> dict:
    """Write the planted corpus under `out`; return truth.json's content."""
    from megazoo.eval.corpus_tasks import make_lambada, write_jsonl as write_eval

    rng = random.Random(seed)
    out = Path(out)
    n_pairs = len(LEVELS) * max(1, n_clean // 40)
    need = n_clean + n_reference + 40 + 8 + n_contaminated
    pool = passages(limit=need)
    if len(pool) < need:
        raise ValueError(f"the embedded corpus gives {len(pool)} clean passages, {need} needed; ask for fewer")
    rng.shuffle(pool)
    sizes = {"clean": n_clean, "reference": n_reference, "held": 40, "books": 8, "contam": n_contaminated}
    parts, start = {}, 0
    for name, size in sizes.items():
        parts[name], start = pool[start:start + size], start + size
    clean, reference, held, books = parts["clean"], parts["reference"], parts["held"], parts["books"]
    vocab = sorted({w.strip(".,;:()'\"").lower() for p in clean for w in p.split()} - {""})
    lambada = make_lambada(held[:-1], 30, seed)
    write_eval(lambada, out / "eval" / "lambada.jsonl")
    race_article = held[-1]
    race = {"article": race_article, "questions": ["What is the passage about?"],
            "options": [["Python", "Cooking", "Music", "Sports"]], "answers": ["A"], "id": "high1.txt"}
    (out / "eval" / "RACE" / "test" / "high").mkdir(parents=True, exist_ok=True)
    (out / "eval" / "RACE" / "test" / "high" / "1.txt").write_text(json.dumps(race) + "\n")

    docs = [{"id": f"clean-{i:05d}", "text": t} for i, t in enumerate(clean)]
    truth = {"near_pairs": [], "exact_pairs": [], "low_quality": [], "contaminated": [], "clean": [d["id"] for d in docs]}
    originals = rng.sample(range(n_clean), n_pairs + low_per_kind)
    for k in range(n_pairs):
        i = originals[k]
        copy, value = edit_to(clean[i], LEVELS[k % len(LEVELS)], vocab, rng)
        docs.append({"id": f"near-{k:05d}", "text": copy})
        truth["near_pairs"].append([f"clean-{i:05d}", f"near-{k:05d}", round(value, 4)])
    for k in range(low_per_kind):
        i = originals[n_pairs + k]
        text = "  ".join(clean[i].upper().split(" ")) if k % 2 else clean[i].lower()
        docs.append({"id": f"exact-{k:05d}", "text": text})
        truth["exact_pairs"].append([f"clean-{i:05d}", f"exact-{k:05d}"])
    for kind in ("symbols", "boilerplate", "short", "salad", "spam"):
        for k in range(low_per_kind):
            docs.append({"id": f"low-{kind}-{k:05d}", "text": low_quality(kind, vocab, rng)})
            truth["low_quality"].append(f"low-{kind}-{k:05d}")
    for k in range(n_contaminated):
        if k % 4 == 3:
            source, bench = race_article.split(), "RACE"
        else:
            source, bench = lambada[k % len(lambada)]["text"].split(), "lambada"
        span = rng.randint(20, 40)
        start = rng.randrange(0, max(1, len(source) - span))
        words = parts["contam"][k].split()
        cut = len(words) // 2
        text = " ".join(words[:cut] + source[start:start + span] + words[cut:])
        docs.append({"id": f"contam-{k:05d}", "text": text})
        truth["contaminated"].append([f"contam-{k:05d}", bench])
    # place each document in a random shard, copies away from their originals' shards
    shard_of = {}
    order = list(range(len(docs)))
    rng.shuffle(order)
    for pos, i in enumerate(order):
        shard_of[docs[i]["id"]] = pos % n_shards
    for a, c, *_ in truth["near_pairs"] + truth["exact_pairs"]:
        if shard_of[c] == shard_of[a]:
            shard_of[c] = (shard_of[a] + 1) % n_shards
    for s in range(n_shards):
        rows = [docs[i] for i in order if shard_of[docs[i]["id"]] == s]
        write_jsonl(out / "raw" / "web" / f"shard-{s}.jsonl", rows)
    write_jsonl(out / "raw" / "books" / "shard-0.jsonl", [{"id": f"book-{i}", "text": t} for i, t in enumerate(books)])
    write_jsonl(out / "reference" / "reference.jsonl", [{"id": f"ref-{i}", "text": t} for i, t in enumerate(reference)])
    truth["shards"] = n_shards
    (out / "truth.json").write_text(json.dumps(truth, indent=1))
    return truth


def pairs_found(removed: list[dict]) -> set[frozenset]:
    """The (survivor, removed) pairs a fuzzy-dedup stage reports in its removed records."""
    found = set()
    for r in removed:
        if r["stage"] == "fuzzy-dedup":
            other = r["reason"].split("near-duplicate of ", 1)[1].split(" ", 1)[0]
            found.add(frozenset((r["id"], other)))
    return found


def precision_recall(truth: dict, removed: list[dict], threshold: float) -> dict:
    """Fuzzy dedup's precision and recall on the planted pairs at or above the threshold (the
    near-duplicates measured there, and the exact copies when exact-dedup has not run first)."""
    positive = {frozenset(p[:2]) for p in truth["near_pairs"] if p[2] >= threshold}
    positive |= {frozenset(p[:2]) for p in truth["exact_pairs"]}  # exact copies: Jaccard 1
    found = pairs_found(removed)
    hit = len(found & positive)
    return {"planted_above": len(positive), "found": len(found), "true_found": hit,
            "precision": hit / len(found) if found else 1.0, "recall": hit / len(positive) if positive else 1.0}
