"""Offline knowledge for the generated dialogue sets: sentences about the hand-picked topics of
topics.txt, written from WordNet 3.0 (definition, kind, kinds of it, parts, other names).

    topics = load_topics()            # [Topic(name, synset, article, seen)]
    facts = topic_facts(topic)        # {"what": "A volcano is a mountain formed by ...", "kind": ...}

Each fact kind has the question a user asks to get it (QUESTIONS), so a conversation's last turn
says which sentence of the topic's passage answers it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

KINDS = ("what", "kind", "types", "parts", "name")
QUESTIONS = {
    "what": ["What is {subj} exactly?", "Can you tell me what {subj} is?"],
    "kind": ["What kind of thing is {subj}?", "What sort of thing is {subj}?"],
    "types": ["Are there different kinds of {name}?", "What types of {name} are there?"],
    "parts": ["What parts does {subj} have?", "What is {subj} made of?"],
    "name": ["Does {subj} have another name?", "Is there another word for {name}?"],
}
SEEN = 30  # the first 30 topics of topics.txt are seen in training, the rest are not


@dataclass(frozen=True)
class Topic:
    name: str
    synset: str
    article: str  # "a", "an" or "" (a mass noun)
    seen: bool

    @property
    def subject(self) -> str:
        """The topic as a sentence's subject, lower case: "a volcano", "coffee"."""
        return f"{self.article} {self.name.lower()}".strip()


def load_topics() -> list[Topic]:
    rows = [ln.split("\t") for ln in (Path(__file__).parent / "topics.txt").read_text().splitlines()
            if ln.strip() and not ln.startswith("#")]
    return [Topic(n, s, "" if a.strip() == "-" else a.strip(), i < SEEN) for i, (n, s, a) in enumerate(rows)]


def _words(lemma: str) -> str:
    return lemma.replace("_", " ")


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def topic_facts(topic: Topic, wordnet=None) -> dict[str, str]:
    """{kind: sentence} for the kinds WordNet gives this topic (what and kind always)."""
    from megazoo.eval.metrics.wordnet import load_wordnet

    wn = wordnet or load_wordnet()
    s = wn.synset(topic.synset)
    subj, name = _cap(topic.subject), topic.name.lower()
    # nltk's related-synset lists come out in set order (it changes with PYTHONHASHSEED): sort them
    hyper = sorted(s.hypernyms() or s.instance_hypernyms(), key=lambda h: h.name())[0].lemma_names()[0]
    facts = {"what": f"{subj} is {s.definition().split(';')[0]}.", "kind": f"{subj} is a kind of {_words(hyper)}."}
    types = sorted(_words(h.lemma_names()[0]) for h in s.hyponyms())[:3]
    if types:
        facts["types"] = f"Kinds of {name} include {_listed(types)}."
    parts = sorted({_words(m.lemma_names()[0]) for m in s.part_meronyms()})[:3]
    if parts:
        facts["parts"] = f"Parts of {topic.subject} include {_listed(parts)}."
    others = [_words(n) for n in s.lemma_names() if _words(n).lower() != name][:2]
    if others:
        facts["name"] = f"{subj} is also called {_listed(others)}."
    return facts


def question(topic: Topic, kind: str, variant: int) -> str:
    forms = QUESTIONS[kind]
    return forms[variant % len(forms)].format(subj=topic.subject, name=topic.name.lower())
