"""An offline open-domain QA set in DPR's layouts (generated data, not NQ):

    OUT/psgs_w100.tsv            passages of about 100 words (sentence-aligned) from offline text:
                                 the embedded corpus (Python documentation) and, when gensim is
                                 installed, its Lee news corpus; title = the document's first line
    OUT/nq-train.json, nq-dev.json   DPR json: question, answers, positive_ctxs (the passage it was
                                 made from), empty negative_ctxs / hard_negative_ctxs (training mines
                                 BM25 hard negatives)
    OUT/nq-test.csv, nq-test.json    the test questions in both evaluation layouts
    OUT/ict/text.bin/.idx, titles.bin/.idx   the training documents, sentence-split and tokenised
                                 (bert-wordpiece), one title sequence per document: ICT's data
    OUT/heldout.jsonl            the sentences of dev and test passages of 2+ sentences (held-out
                                 sentence-to-passage retrieval: ICT trains on train documents only)

Documents (not passages) are split 80/10/10 into train/dev/test, so no test passage is seen in
training. A question comes from a sentence with a salient span (reader/salient.py): the answer is the span
and the question is "what/when/how many" and the sentence's other content words, lowercased
(keyword-like, as many NQ queries are).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from megazoo.eval.metrics import has_answer
from megazoo.eval.metrics import simple_tokenize as simple_tokens
from megazoo.tasks.retrieval.reader.salient import salient_spans

STOP = set("""a an the of and or in on at to for from by with as is are was were be been being it its this that these
those which who whom whose what when where why how not no can could may might must shall should will would do does
did has have had if then than there their they them he she his her we you your our i into out over under about also
such only other any each all some more most very so but because while after before between through during same own
just both either neither one two""".split())


def _documents(corpus: str) -> list[tuple[str, list[str]]]:
    """(title, sentences) of each document of the offline corpora."""
    from megazoo.core.data.corpus import documents
    from megazoo.core.data.text import split_sentences

    names = ["stdlib"] if corpus == "stdlib" else ["stdlib", "gensim-lee"] if corpus == "all" else [corpus]
    out = []
    for name in names:
        try:
            docs = documents(name)
        except Exception:
            if name == "gensim-lee" and corpus == "all":  # optional: only when gensim is installed
                continue
            raise
        for doc in docs:
            first, _, rest = doc.partition("\n")
            title = " ".join(first.split())[:100]
            if name == "gensim-lee" or len(title.split()) > 12:  # news lines have no title line
                title, rest = " ".join(doc.split()[:6]), doc
            sentences = [s for s in split_sentences(rest) if len(s.split()) >= 4]
            if sentences:
                out.append((title, sentences))
    return out


def passages_of(sentences: list[str], words: int = 100) -> list[list[str]]:
    """Consecutive sentences grouped into passages of about `words` words (a passage ends at the
    first sentence that reaches the count; a sentence longer than 1.5x is cut)."""
    out, cur, n = [], [], 0
    for s in sentences:
        w = s.split()
        if len(w) > words * 3 // 2:
            s, w = " ".join(w[:words * 3 // 2]), w[:words * 3 // 2]
        cur.append(s)
        n += len(w)
        if n >= words:
            out.append(cur)
            cur, n = [], 0
    if cur and (n >= words // 3 or not out):
        out.append(cur)
    elif cur:
        out[-1] = out[-1] + cur
    return out


def make_question(sentence: str, rng: np.random.RandomState, max_words: int = 8, common: frozenset = frozenset()):
    """(question, answer) from a sentence with a salient span, or None. `common`: lowercase words
    that are mostly written lowercase in the corpus ("Even" capitalised after a quote is no name)."""
    # one-digit numbers and one-letter names are in too many passages to be answers
    spans = [sp for sp in salient_spans(sentence) if 1 <= len(simple_tokens(sp.text)) <= 4 and len(sp.text) >= 3
             and sp.text.lower() not in common]
    if not spans:
        return None
    sp = spans[int(rng.randint(len(spans)))]
    answer_words = set(simple_tokens(sp.text))
    rest = sentence[:sp.start] + " " + sentence[sp.end:]
    words = [w for w in simple_tokens(rest) if w.isalnum() and w not in STOP and w not in answer_words
             and len(w) > 2]
    if len(words) < 3:
        return None
    wh = "when" if sp.kind == "date" else "how many" if sp.kind == "number" else "what"
    return f"{wh} {' '.join(words[:max_words])}", sp.text


def common_words(sentences) -> frozenset:
    """Words the corpus writes lowercase more often than capitalised."""
    from collections import Counter

    lower, upper = Counter(), Counter()
    for s in sentences:
        for w in s.split():
            w = w.strip(".,;:!?()[]\"'")
            if w[:1].isupper():
                upper[w.lower()] += 1
            elif w[:1].islower():
                lower[w] += 1
    return frozenset(w for w, n in lower.items() if n >= upper.get(w, 0))


def generate_retrieval(out, seed: int = 0, corpus: str = "all", words: int = 100, questions_per_passage: int = 2,
                       tokenizer: str = "bert-wordpiece", overwrite: bool = False) -> dict:
    """Write the set (see the module docstring) to `out`; returns the counts. The files are written
    into a scratch folder of this call's own that replaces `out` only when complete (an existing
    non-empty `out` only with `overwrite`), so a failure leaves `out` as it was."""
    from megazoo.core.fs import atomic_folder

    with atomic_folder(out, overwrite) as tmp:
        return _write_set(Path(tmp), seed, corpus, words, questions_per_passage, tokenizer)


def _write_set(tmp: Path, seed: int, corpus: str, words: int, questions_per_passage: int, tokenizer: str) -> dict:
    rng = np.random.RandomState(seed)
    docs = _documents(corpus)
    order = rng.permutation(len(docs))
    n_test = n_dev = max(1, len(docs) // 10)
    split_of = {}
    for rank, d in enumerate(order):
        split_of[int(d)] = "test" if rank < n_test else "dev" if rank < n_test + n_dev else "train"
    passages = []  # (id, title, sentences, split)
    for d, (title, sentences) in enumerate(docs):
        for group in passages_of(sentences, words):
            passages.append((len(passages) + 1, title, group, split_of[d]))
    with open(tmp / "psgs_w100.tsv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["id", "text", "title"])
        for pid, title, group, _ in passages:
            w.writerow([pid, " ".join(group), title])
    common = common_words(s for _, sentences in docs for s in sentences)
    sets: dict[str, list[dict]] = {"train": [], "dev": [], "test": []}
    held = []
    for pid, title, group, split in passages:
        text = " ".join(group)
        picks = rng.permutation(len(group))[:questions_per_passage * 2]
        made = 0
        for i in picks:
            qa = make_question(group[int(i)], rng, common=common)
            if qa is None or not has_answer([qa[1]], text):
                continue
            ctx = {"title": title, "text": text, "score": 1000, "title_score": 1, "passage_id": str(pid)}
            sets[split].append({"dataset": "generated", "question": qa[0], "answers": [qa[1]],
                                "positive_ctxs": [ctx], "negative_ctxs": [], "hard_negative_ctxs": []})
            made += 1
            if made == questions_per_passage:
                break
        if split != "train" and len(group) >= 2:
            held.append({"passage_id": pid, "sentences": group})
    for split in ("train", "dev", "test"):
        (tmp / f"nq-{split}.json").write_text(json.dumps(sets[split], indent=1), encoding="utf-8")
    with open(tmp / "nq-test.csv", "w", encoding="utf-8") as f:
        for item in sets["test"]:
            f.write(f"{item['question']}\t{item['answers']!r}\n")
    with open(tmp / "heldout.jsonl", "w", encoding="utf-8") as f:
        for h in held:
            f.write(json.dumps(h) + "\n")
    write_ict_data(tmp / "ict", [(docs[d][0], docs[d][1]) for d in sorted(split_of) if split_of[d] == "train"],
                   tokenizer)
    return {"passages": len(passages), **{split: len(v) for split, v in sets.items()}, "heldout": len(held),
            "documents": len(docs)}


def write_ict_data(folder: Path, docs: list[tuple[str, list[str]]], tokenizer: str = "bert-wordpiece") -> None:
    """ict/text (one sequence per sentence, one document per source document) and ict/titles."""
    from megazoo.core.data import IndexedDatasetWriter, build_tokenizer
    from megazoo.core.data.indexed import best_dtype

    tok = build_tokenizer(tokenizer)
    folder.mkdir(parents=True, exist_ok=True)
    dtype = best_dtype(tok.vocab_size)
    with IndexedDatasetWriter(folder / "text", dtype) as text, IndexedDatasetWriter(folder / "titles", dtype) as titles:
        for title, sentences in docs:
            seqs = [s for s in tok.encode_batch(sentences) if s]
            if not seqs:
                continue
            text.add_document([t for s in seqs for t in s], [len(s) for s in seqs])
            titles.add_document(tok.encode(title) or [tok.unk], [len(tok.encode(title) or [tok.unk])])
