"""A RACE-format data set generated from the embedded corpus (the stdlib's documentation prose).

Articles are runs of consecutive sentences from one corpus document. Each question takes one
sentence of its article and asks which word fills a gap in it; the three distractors are other
content words of the same article, so every option is plausible vocabulary for the passage and only
reading the article settles the answer. Middle-school articles are shorter and ask cloze questions
("... the _ method ..."); high-school ones are longer and also ask (three times in ten) questions without a gap ("Which
word follows "a b c" in the passage?"), so both of Megatron's question forms occur. Documents, not
questions, are split between train/dev/test, so held-out articles are unseen. The same seed gives
the same files, byte for byte.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from megazoo.tasks.race.data import LETTERS, write_race_dir

_WORD = re.compile(r"\b[A-Za-z]{4,}\b")
STOPWORDS = frozenset("""
about above after again against also although among another any anything because been before being
below between both cannot could does doing down during each either else even every from further
have having here however into itself just last least less like made make many more most much must
need never next none only other others otherwise over same several shall should since some such
than that their them then there these they this those though through thus under unless until upon
very what when where whether which while will with within without would your also used uses using
""".split())


def content_words(text: str) -> list[str]:
    """Distinct lowercase words of 4+ letters that are not stopwords, in order of first use."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(text):
        if w.lower() not in STOPWORDS:
            seen.setdefault(w.lower(), None)
    return list(seen)


def _articles(doc: str, words: int, rng: random.Random) -> list[list[str]]:
    """Cut a document into articles of about `words` words (whole sentences, in order)."""
    from megazoo.core.data.text import split_sentences

    sentences = [s for s in split_sentences(doc) if 4 <= len(s.split()) <= 60 and "_" not in s]
    out, current, n = [], [], 0
    target = int(words * rng.uniform(0.8, 1.2))
    for s in sentences:
        current.append(s)
        n += len(s.split())
        if n >= target:
            out.append(current)
            current, n = [], 0
            target = int(words * rng.uniform(0.8, 1.2))
    if n >= words // 2:
        out.append(current)
    return out


def _question(sentence: str, pool: list[str], rng: random.Random, cloze: bool) -> tuple[str, list[str], str] | None:
    """(question, 4 options, answer letter) about one sentence, or None when it has no usable word."""
    candidates = [w for w in content_words(sentence) if len(pool) - 1 >= 3 and w in pool]
    rng.shuffle(candidates)
    for word in candidates:
        matches = list(re.finditer(rf"\b{word}\b", sentence, flags=re.IGNORECASE))
        if len(matches) != 1:
            continue
        m = matches[0]
        if cloze:
            question = sentence[: m.start()] + "_" + sentence[m.end():]
        else:
            before = sentence[: m.start()].split()
            if len(before) < 3:
                continue
            question = f'Which word follows "{" ".join(before[-3:])}" in the passage?'
        answer = m.group(0)
        distractors = rng.sample([w for w in pool if w != word.lower()], 3)
        if answer[0].isupper():  # the same casing for every option, so case gives nothing away
            distractors = [w.capitalize() for w in distractors]
        options = [answer] + distractors
        rng.shuffle(options)
        return question, options, LETTERS[options.index(answer)]
    return None


def make_record(sentences: list[str], rng: random.Random, questions: int, cloze_only: bool) -> dict | None:
    article = " ".join(sentences)
    pool = content_words(article)
    if len(pool) < 8:
        return None
    order = list(range(len(sentences)))
    rng.shuffle(order)
    qs, opts, answers = [], [], []
    for i in order:
        if len(qs) == questions:
            break
        made = _question(sentences[i], pool, rng, cloze=cloze_only or rng.random() < 0.7)
        if made:
            qs.append(made[0])
            opts.append(made[1])
            answers.append(made[2])
    if not qs:
        return None
    return {"article": article, "questions": qs, "options": opts, "answers": answers}


def generate_race(out_dir: str | Path, seed: int = 0, articles: dict[str, int] | None = None,
                  questions_per_article: int = 3, article_words: int = 80, corpus: str = "stdlib") -> dict:
    """Write `out_dir/{train,dev,test}/{middle,high}/<n>.txt`; return the counts per split and level.

    `articles`: how many articles per split (default train 400, dev 60, test 60), half middle
    (about `article_words` * 0.7 words) and half high (about `article_words` words)."""
    from megazoo.core.data.corpus import documents

    articles = articles or {"train": 400, "dev": 60, "test": 60}
    rng = random.Random(seed)
    docs = documents(corpus)
    order = list(range(len(docs)))
    rng.shuffle(order)
    # held-out splits take whole documents from the end of the shuffled order
    plans = {"middle": int(article_words * 0.7), "high": article_words}
    pools: dict[str, list] = {level: [] for level in plans}
    for level, words in plans.items():
        level_rng = random.Random(f"{seed}-{level}")
        for d in order:
            pools[level].append([(d, a) for a in _articles(docs[d], words, level_rng)])
    counts: dict[str, dict[str, int]] = {}
    taken: set[int] = set()
    for split in ("test", "dev", "train"):  # smallest first, so held-out sets are always full
        counts[split] = {}
        want = articles.get(split, 0)
        for level in plans:
            need = want // 2 + (want % 2 if level == "middle" else 0)
            split_rng = random.Random(f"{seed}-{split}-{level}")
            records, used = [], set()
            for per_doc in reversed(pools[level]) if split != "train" else pools[level]:
                if len(records) >= need:
                    break
                if not per_doc or per_doc[0][0] in taken:
                    continue
                used.add(per_doc[0][0])
                for _, sentences in per_doc:
                    if len(records) >= need:
                        break
                    record = make_record(sentences, split_rng, questions_per_article, cloze_only=level == "middle")
                    if record:
                        records.append(record)
            if len(records) < need:
                raise ValueError(f"the {corpus} corpus yields only {len(records)} {level} articles for {split}; "
                                 f"ask for fewer articles or shorter ones (article_words)")
            taken |= used
            write_race_dir(out_dir, split, level, records)
            counts[split][level] = sum(len(r["questions"]) for r in records)
        # a document used by one level of a split is off limits to every other split
    return counts
