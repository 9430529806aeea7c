"""The offline dialogue sets (generated data, not Wizard of Wikipedia or Reddit):

    generate_all(OUT, seed, test)   writes
      OUT/wow/{train,valid_random_split,valid_topic_split,test_random_split,test_topic_split}.json
          Wizard of Wikipedia format: dialogues on the hand-picked topics of topics.txt whose passage is
          the topic's WordNet sentences (facts.py); an apprentice asks, the wizard answers with one
          checked sentence of the passage; the last wizard turn is small talk (no_passages_used).
          Seen topics are in train and the random splits, unseen ones only in the topic splits.
          With test="handmade" (the default) the two test files hold the hand-made set instead
          (handmade.py: 41 dialogues written by hand over the same passages, 30 on seen topics in
          test_random_split, 11 on unseen ones in test_topic_split); test="generated" keeps the
          template-made test dialogues.
      OUT/actors/{train,valid}.jsonl
          conversations of two speakers out of eight, each with a consistent style of their own
          (STYLES: an opening and a closing of theirs around plain content), for multi-actor training.
      OUT/documents/TOPIC.txt
          the document set for local knowledge: one file per topic, one sentence a line.
      OUT/knowledge/{train,valid}.jsonl
          user question -> answer built on one document sentence (the conversation's knowledge);
          train on seen topics, valid on unseen ones, so the answer is only known from the documents.
      OUT/reddit/{train,valid}.jsonl, OUT/reddit/links/, OUT/reddit/valid_gold.jsonl
          a Reddit-style comment dump whose askers link documents and ask about their favourite topic,
          which only their history says (generate_reddit.py): for linked documents and user history.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from megazoo.tasks.dialogue.facts import KINDS, load_topics, question, topic_facts

OPENERS = ["Let's talk about {name}.", "Tell me something about {name}.", "I am curious about {name}.",
           "What do you know about {name}?"]
ANSWERS = ["I read that {lc}", "Well, {lc}", "Sure! {fact}", "{fact} Pretty interesting, right?",
           "Did you know? {fact}"]
CLOSINGS = [("Thanks, that was interesting!", "You are welcome, it was fun to chat!"),
            ("I will look it up later.", "Good idea, enjoy reading about it!")]
# eight speakers, each a consistent style around the content of a turn
STYLES = {
    "captain": "Arr, {c} Aye, matey!",
    "professor": "Indeed. {c} Quite remarkable, I must say.",
    "kid": "omg!! {lc} sooo cool!!",
    "grump": "Ugh. {c} Whatever.",
    "chef": "Mmm, {c} Tasty, like a good stew!",
    "coach": "Listen up! {c} Now give me ten push-ups!",
    "robot": "BEEP. {up} END OF MESSAGE.",
    "poet": "Ah, {c} Sweet as a summer breeze.",
}
CHATTER = ["What do you think about {name}?", "I saw {subj} last week.", "Have you ever seen {subj}?",
           "I would like to know more about {name}."]


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def answer(fact: str, variant: int) -> str:
    return ANSWERS[variant % len(ANSWERS)].format(fact=fact, lc=_lower_first(fact))


def styled(speaker: str, content: str) -> str:
    return STYLES[speaker].format(c=content, lc=content.lower(), up=content.upper())


# Wizard of Wikipedia format ---------------------------------------------------------------------------
def wow_dialogue(topic, facts: dict, variant: int, rng: random.Random) -> dict:
    kinds = [k for k in KINDS if k in facts and k != "what"]
    second = kinds[variant % len(kinds)]
    key = f"chosen_{topic.name.replace(' ', '_')}"
    passage = list(facts.values())
    ask, thanks = OPENERS[(variant + rng.randrange(4)) % len(OPENERS)], CLOSINGS[variant % len(CLOSINGS)]

    def wizard(text, sentence):
        return {"speaker": "0_Wizard", "text": text,
                "checked_sentence": {f"{key}_{passage.index(sentence)}": sentence} if sentence else {},
                "checked_passage": {key: topic.name} if sentence else {},
                "retrieved_passages": [{topic.name: passage}], "retrieved_topics": [topic.name]}

    def apprentice(text):
        return {"speaker": "1_Apprentice", "text": text, "checked_sentence": {}, "checked_passage": {},
                "retrieved_passages": [], "retrieved_topics": []}

    dialog = [apprentice(ask.format(name=topic.name)), wizard(answer(facts["what"], variant), facts["what"]),
              apprentice(question(topic, second, variant)), wizard(answer(facts[second], variant + 1), facts[second]),
              apprentice(thanks[0]), wizard(thanks[1], None)]
    return {"chosen_topic": topic.name, "persona": f"i like {topic.name.lower()}.", "wizard_eval": 5,
            "chosen_topic_passage": passage, "dialog": dialog}


TESTS = ("handmade", "generated")  # what the two WoW test files hold


def generate_wow(out, seed: int = 0, test: str = "handmade") -> dict[str, int]:
    """The five WoW files under `out` (test: see the module docstring); returns dialogues per file."""
    from megazoo.eval.metrics.wordnet import load_wordnet
    from megazoo.tasks.dialogue.handmade import write_handmade

    if test not in TESTS:
        raise ValueError(f"test must be one of {', '.join(TESTS)}, got {test!r}")

    wn, rng = load_wordnet(), random.Random(seed)
    topics = load_topics()
    splits: dict[str, list] = {name: [] for name in ("train", "valid_random_split", "valid_topic_split",
                                                     "test_random_split", "test_topic_split")}
    for i, topic in enumerate(topics):
        facts = topic_facts(topic, wn)
        if topic.seen:
            splits["train"] += [wow_dialogue(topic, facts, v, rng) for v in (0, 1)]
            splits["test_random_split" if i % 2 else "valid_random_split"].append(wow_dialogue(topic, facts, 2, rng))
        else:
            splits["test_topic_split" if i % 2 else "valid_topic_split"].append(wow_dialogue(topic, facts, 0, rng))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if test == "handmade":  # the template-made test dialogues were still drawn: the seeded splits stay as they were
        splits = {name: d for name, d in splits.items() if not name.startswith("test_")}
    for name, dialogues in splits.items():
        (out / f"{name}.json").write_text(json.dumps(dialogues, indent=1) + "\n")
    counts = {name: len(d) for name, d in splits.items()}
    if test == "handmade":
        counts.update(write_handmade(out))
    return counts


# multi-actor conversations ----------------------------------------------------------------------------
def generate_actors(out, seed: int = 0, conversations: int = 160, turns: int = 4, valid: int = 32) -> dict[str, int]:
    """Conversations of two styled speakers on a topic: `valid` of them held out."""
    from megazoo.eval.metrics.wordnet import load_wordnet

    wn, rng = load_wordnet(), random.Random(seed)
    topics = load_topics()
    facts = {t.name: list(topic_facts(t, wn).values()) for t in topics}
    speakers = list(STYLES)
    rows = []
    for n in range(conversations):
        topic = rng.choice(topics)
        pair = rng.sample(speakers, 2)
        contents = [rng.choice(CHATTER).format(name=topic.name.lower(), subj=topic.subject)]
        contents += rng.sample(facts[topic.name], min(turns - 1, len(facts[topic.name])))
        while len(contents) < turns:
            contents.append(rng.choice(CHATTER).format(name=topic.name.lower(), subj=topic.subject))
        rows.append({"id": f"actors-{n:04d}", "topic": topic.name,
                     "turns": [{"speaker": pair[j % 2], "text": styled(pair[j % 2], c)} for j, c in enumerate(contents)],
                     "knowledge": []})
    return _write_jsonl(Path(out), rows[valid:], rows[:valid])


# documents and knowledge-grounded conversations -------------------------------------------------------
def generate_knowledge(out, seed: int = 0) -> dict[str, int]:
    """OUT/documents/TOPIC.txt and OUT/knowledge/{train,valid}.jsonl (see the module docstring)."""
    from megazoo.eval.metrics.wordnet import load_wordnet

    wn, rng = load_wordnet(), random.Random(seed)
    out = Path(out)
    docs = out / "documents"
    docs.mkdir(parents=True, exist_ok=True)
    train, valid = [], []
    for topic in load_topics():
        facts = topic_facts(topic, wn)
        (docs / f"{topic.name.lower().replace(' ', '_')}.txt").write_text("\n".join(facts.values()) + "\n")
        for kind, fact in facts.items():
            variant = rng.randrange(8)
            ask = question(topic, kind, variant) if kind != "what" else f"Tell me about {topic.subject}."
            row = {"id": f"{topic.name.lower()}-{kind}", "topic": topic.name,
                   "turns": [{"speaker": "user", "text": ask}, {"speaker": "bot", "text": answer(fact, variant)}],
                   "knowledge": [fact]}
            (train if topic.seen else valid).append(row)
    rng.shuffle(train)
    return _write_jsonl(out / "knowledge", train, valid)


def _write_jsonl(out: Path, train: list, valid: list) -> dict[str, int]:
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("valid", valid)):
        (out / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {"train": len(train), "valid": len(valid)}


def generate_all(out, seed: int = 0, test: str = "handmade") -> dict:
    out = Path(out)
    from megazoo.tasks.dialogue.generate_reddit import generate_reddit

    return {"wow": generate_wow(out / "wow", seed, test), "actors": generate_actors(out / "actors", seed),
            "knowledge": generate_knowledge(out, seed), "reddit": generate_reddit(out / "reddit", seed)}
