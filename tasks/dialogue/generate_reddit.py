"""A generated Reddit-style dump for local knowledge (generated data, not Reddit):

    generate_reddit(OUT, seed)   writes
      OUT/train.jsonl, OUT/valid.jsonl   Reddit comment lines {"id", "parent_id", "link_id", "author", "body",
                                          "created_utc", "subreddit"} (reddit.py reads them into threads)
      OUT/links/urls.jsonl, OUT/links/TOPIC.txt
                                          the linked documents: one page per topic of topics.txt (its WordNet
                                          sentences, facts.py) under an opaque URL
      OUT/valid_gold.jsonl                valid.jsonl's conversations as reddit.py builds them, with the gold
                                          knowledge (conversation JSONL: what `evaluate --data` scores KF1 on)

Each asker (user00, user01, ...) has a favourite topic that only their history says: two threads of
theirs, the last in the dump ("My favourite topic is owl. ...", with replies, a branch, a deleted account's reply and a
removed comment). In a question thread the asker links two pages, their favourite's and another
topic's, in random order, and asks about "my favourite" ("What kind of thing is my favourite?"); a helper
answers with the favourite's sentence. So the linked documents hold the answer, but only the asker's
history says which of the two pages it is in: the case user conditioning is for. One question thread
per asker is held out (valid.jsonl); the history threads and the other questions are train.jsonl.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from megazoo.tasks.dialogue.facts import load_topics, topic_facts
from megazoo.tasks.dialogue.generate import answer

ASK = {"what": "What is my favourite, in one sentence?", "kind": "What kind of thing is my favourite?",
       "types": "Are there different kinds of my favourite?", "parts": "What parts does my favourite have?",
       "name": "What else is my favourite called?"}
OPENERS = ["Two pages I found: {a} and {b}.", "Reading {a} and {b} today.", "Links: {a} {b}"]
HELPERS = ("helper_ann", "helper_bo", "helper_cy")
CHATTERS = ("chatter_dee", "chatter_eli", "chatter_fay")
URL = "https://docs.example.org/page/{:04d}"


def _slug(name: str) -> str:
    return name.lower().replace(" ", "_")


class Dump:
    """Comments of a dump, with ids and times in order."""

    def __init__(self):
        self.rows: list[dict] = []
        self.time = 1_600_000_000

    def comment(self, link: str, parent: str | None, author: str, body: str, subreddit: str) -> str:
        cid = f"c{len(self.rows):05d}"
        self.time += 60
        self.rows.append({"id": cid, "parent_id": f"t1_{parent}" if parent else f"t3_{link}", "link_id": f"t3_{link}",
                          "author": author, "body": body, "created_utc": self.time, "subreddit": subreddit})
        return cid


def _history(dump: Dump, rng: random.Random, user: str, name: str, n: int) -> None:
    """Two earlier threads of `user` that say their favourite topic."""
    link = f"h{user[4:]}a"
    root = dump.comment(link, None, user, f"My favourite topic is {name}. Ask me anything about it.", "chat")
    reply = dump.comment(link, root, rng.choice(CHATTERS), f"Nice, why {name}?", "chat")
    dump.comment(link, reply, user, f"Because {name} never gets old.", "chat")
    dump.comment(link, root, rng.choice(CHATTERS), "Same here, great topic.", "chat")  # a branch: a second path
    if n % 5 == 0:  # a removed comment (dropped with its replies) and a deleted account's reply (kept)
        gone = dump.comment(link, root, "[deleted]", "[removed]", "chat")
        dump.comment(link, gone, user, "Why was that removed?", "chat")
        dump.comment(link, reply, "[deleted]", "Agreed, it never does.", "chat")
    link = f"h{user[4:]}b"
    root = dump.comment(link, None, user, f"Just read another page about {name}.", "chat")
    dump.comment(link, root, rng.choice(CHATTERS), "Cool! Share it next time.", "chat")


def _question(dump: Dump, rng: random.Random, user: str, kind: str, fav: str, other: str, fact: str) -> str:
    link = f"q{user[4:]}{kind}"
    a, b = (fav, other) if rng.random() < 0.5 else (other, fav)
    root = dump.comment(link, None, user, f"{rng.choice(OPENERS).format(a=a, b=b)} {ASK[kind]}", "askanything")
    dump.comment(link, root, rng.choice(HELPERS), answer(fact, rng.randrange(8)), "askanything")
    return f"t3_{link}"


def generate_reddit(out, seed: int = 0, askers: int = 40) -> dict[str, int]:
    """The files of the module docstring under `out`; returns comments per dump and valid conversations."""
    from megazoo.eval.metrics.wordnet import load_wordnet
    from megazoo.tasks.dialogue.reddit import read_reddit

    wn, rng = load_wordnet(), random.Random(seed)
    topics = load_topics()
    facts = {t.name: topic_facts(t, wn) for t in topics}
    ids = rng.sample(range(1000, 10000), len(topics))
    urls = {t.name: URL.format(i) for t, i in zip(topics, ids)}
    out = Path(out)
    links = out / "links"
    links.mkdir(parents=True, exist_ok=True)
    index = []
    for t in topics:
        (links / f"{_slug(t.name)}.txt").write_text("\n".join(facts[t.name].values()) + "\n")
        index.append({"url": urls[t.name], "file": f"{_slug(t.name)}.txt"})
    (links / "urls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in index))

    favourites = rng.sample(topics, min(askers, len(topics)))
    train, valid, gold = Dump(), Dump(), {}
    for n, topic in enumerate(favourites):
        user, kinds = f"user{n:02d}", list(facts[topic.name])
        held = rng.choice(kinds)
        for kind in kinds:
            other = rng.choice([t for t in topics if t is not topic])
            dump = valid if kind == held else train
            link = _question(dump, rng, user, kind, urls[topic.name], urls[other.name], facts[topic.name][kind])
            if kind == held:
                gold[link] = facts[topic.name][kind]
    for n, topic in enumerate(favourites):  # after the questions: a user's last turns elsewhere are these
        _history(train, rng, f"user{n:02d}", topic.name.lower(), n)
    for name, dump in (("train", train), ("valid", valid)):
        (out / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in dump.rows))
    convs = read_reddit(out / "valid.jsonl").conversations
    (out / "valid_gold.jsonl").write_text("".join(json.dumps(
        {"id": c.id, "thread": c.thread, "topic": c.topic, "turns": [{"speaker": t.speaker, "text": t.text}
                                                                    for t in c.turns],
         "knowledge": [gold[c.thread]]}) + "\n" for c in convs))
    return {"train": len(train.rows), "valid": len(valid.rows), "valid conversations": len(convs)}
