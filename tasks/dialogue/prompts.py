"""Prompt/response pairs of the two fine-tuned projects, built from conversations (data.Conversation):

multi-actor (Boyd et al. 2020): the target speaker's persona reference, k of their turns from *other*
conversations, before the current context; the speakers are named A, B, ... by their order in the
conversation, so only the reference says who is speaking:

    Earlier turns of this speaker:
    - Arr, a whale is a kind of cetacean. Aye, matey!
    ...
    Conversation:
    A: What do you think about owls?
    B:                                      -> response " Arr, ... Aye, matey!"

local knowledge (Santhanam et al. 2020): the sentences of the document set retrieved for the
conversation's last two turns, before the context:

    Knowledge: A penguin is a kind of sphenisciform seabird. Kinds of penguin include ...
    Conversation:
    A: What kind of thing is a penguin?
    B:                                      -> response " Well, a penguin is a kind of ..."

Without the reference (or the knowledge) the first block is left out: the baselines of the issue.
The loss falls on the response (and its end-of-document token), as task sft does.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass
class Pair:
    prompt: str
    response: str
    path: str
    line: int


def context_block(turns: list, upto: int) -> str:
    labels: dict[str, str] = {}
    for t in turns[: upto + 1]:
        labels.setdefault(t.speaker, LABELS[len(labels) % len(LABELS)])
    lines = [f"{labels[t.speaker]}: {t.text}" for t in turns[:upto]]
    return "Conversation:\n" + "".join(line + "\n" for line in lines) + f"{labels[turns[upto].speaker]}:"


def speaker_turns(conversations: list) -> dict[str, list[tuple[str, str]]]:
    """speaker -> [(conversation id, text)] over `conversations`: where references come from."""
    out: dict[str, list[tuple[str, str]]] = {}
    for c in conversations:
        for t in c.turns:
            out.setdefault(t.speaker, []).append((c.id, t.text))
    return out


def reference_block(pool: dict, speaker: str, exclude: str, k: int, seed: str) -> str:
    turns = [text for cid, text in pool.get(speaker, []) if cid != exclude]
    chosen = random.Random(seed).sample(turns, min(k, len(turns)))
    if not chosen:
        return ""
    return "Earlier turns of this speaker:\n" + "".join(f"- {t}\n" for t in chosen)


def actor_pairs(conversations: list, pool: dict, k: int, seed: int = 0, reference: bool = True) -> list[Pair]:
    """One pair per turn after the first; the reference from `pool` (speaker_turns of the training set)."""
    out = []
    for c in conversations:
        for j in range(1, len(c.turns)):
            ref = reference_block(pool, c.turns[j].speaker, c.id, k, f"{seed}-{c.id}-{j}") if reference else ""
            out.append(Pair(ref + context_block(c.turns, j), " " + c.turns[j].text, c.path, c.line))
    return out


def retrieval_query(turns: list, upto: int) -> str:
    return " ".join(t.text for t in turns[max(0, upto - 2): upto])


def knowledge_pairs(conversations: list, documents, n: int, knowledge: bool = True) -> list[Pair]:
    """One pair per turn after the first, with the n sentences `documents` retrieves for it."""
    slots = [(c, j) for c in conversations for j in range(1, len(c.turns))]
    found = documents.retrieve([retrieval_query(c.turns, j) for c, j in slots], n) if knowledge else []
    out = []
    for i, (c, j) in enumerate(slots):
        head = f"Knowledge: {' '.join(found[i])}\n" if knowledge and found[i] else ""
        out.append(Pair(head + context_block(c.turns, j), " " + c.turns[j].text, c.path, c.line))
    return out
