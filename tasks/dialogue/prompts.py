"""Prompt/response pairs of the two fine-tuned projects, built from conversations (data.Conversation):

multi-actor (Boyd et al. 2020): the target speaker's persona reference before the current context,
taken from *other* conversations (other threads) only: by default k of their previous conversations,
each whole (unit "conversation"; the speaker written with the letter they have here, everyone else
as "other"), or k of their single turns (unit "turn"). The speakers are named A, B, ... by their
order in the conversation, so only the reference says who is speaking:

    Earlier conversations of B:             |   Earlier turns of this speaker:
    Conversation 1:                         |   - Arr, a whale is a kind of cetacean. Aye, matey!
    other: Have you ever seen a whale?      |   ...
    B: Arr, a whale is a kind of cetacean. Aye, matey!
    ...
    Conversation:
    A: What do you think about owls?
    B:                                      -> response " Arr, ... Aye, matey!"

local knowledge (Santhanam et al. 2020), each block optional: the user's history (their last h turns
in other threads; "the user" is the speaker answered, or with history_of="responder" the one
answering), the best sentences of the documents linked so far (URLs in the earlier turns and the
conversation's own links, links.py), and the sentences of the document set retrieved for the
conversation's last two turns, before the context. Both retrievals (BM25) query the last two turns
and, when the history is on, the history too:

    History of this user:
    - I keep reading about penguins.
    Linked documents: A penguin is a kind of sphenisciform seabird. ...
    Knowledge: A penguin is a kind of sphenisciform seabird. Kinds of penguin include ...
    Conversation:
    A: What kind of thing is a penguin?
    B:                                      -> response " Well, a penguin is a kind of ..."

Without the reference (or the knowledge) the first blocks are left out: the baselines of the issue.
The loss falls on the response (and its end-of-document token), as task sft does.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
UNITS = ("conversation", "turn")  # what an actor's reference is made of
HISTORY_OF = ("user", "responder")  # whose history conditions a local-knowledge response
HISTORY_HEAD = {"user": "History of this user:\n", "responder": "History of the one answering:\n"}


@dataclass
class Pair:
    prompt: str
    response: str
    path: str
    line: int


def speaker_labels(turns: list, upto: int) -> dict[str, str]:
    labels: dict[str, str] = {}
    for t in turns[: upto + 1]:
        labels.setdefault(t.speaker, LABELS[len(labels) % len(LABELS)])
    return labels


def context_block(turns: list, upto: int) -> str:
    labels = speaker_labels(turns, upto)
    lines = [f"{labels[t.speaker]}: {t.text}" for t in turns[:upto]]
    return "Conversation:\n" + "".join(line + "\n" for line in lines) + f"{labels[turns[upto].speaker]}:"


def speaker_turns(conversations: list) -> dict[str, list[tuple[str, str]]]:
    """speaker -> [(conversation group, text)] over `conversations`, in their order: where single-turn
    references and user histories come from (no anonymous speaker; a turn once per group, as the
    conversations of one Reddit thread share their first comments)."""
    from megazoo.tasks.dialogue.data import ANONYMOUS

    out: dict[str, dict[tuple[str, str], None]] = {}
    for c in conversations:
        for t in c.turns:
            if t.speaker != ANONYMOUS:
                out.setdefault(t.speaker, {})[(c.group, t.text)] = None
    return {speaker: list(turns) for speaker, turns in out.items()}


def speaker_conversations(conversations: list) -> dict[str, list]:
    """speaker -> the conversations they speak in, in order: where whole-conversation references come from."""
    from megazoo.tasks.dialogue.data import ANONYMOUS

    out: dict[str, list] = {}
    for c in conversations:
        for speaker in dict.fromkeys(t.speaker for t in c.turns):
            if speaker != ANONYMOUS:
                out.setdefault(speaker, []).append(c)
    return out


def reference_block(pool: dict, speaker: str, exclude: str, k: int, seed: str) -> str:
    turns = [text for cid, text in pool.get(speaker, []) if cid != exclude]
    chosen = random.Random(seed).sample(turns, min(k, len(turns)))
    if not chosen:
        return ""
    return "Earlier turns of this speaker:\n" + "".join(f"- {t}\n" for t in chosen)


def conversations_block(pool: dict, speaker: str, label: str, exclude: str, k: int, seed: str) -> str:
    """k whole conversations of `speaker` from other threads (seeded choice, kept in pool order)."""
    convs = [c for c in pool.get(speaker, []) if c.group != exclude]
    chosen = sorted(random.Random(seed).sample(range(len(convs)), min(k, len(convs))))
    if not chosen:
        return ""
    out = [f"Earlier conversations of {label}:\n"]
    for n, i in enumerate(chosen, start=1):
        out.append(f"Conversation {n}:\n" + "".join(f"{label if t.speaker == speaker else 'other'}: {t.text}\n"
                                                   for t in convs[i].turns))
    return "".join(out)


def actor_pairs(conversations: list, pool: dict, k: int, seed: int = 0, reference: bool = True,
                unit: str = "turn") -> list[Pair]:
    """One pair per turn after the first; the reference from `pool`: speaker_turns of the training set
    for unit "turn" (k turns), speaker_conversations for unit "conversation" (k whole conversations)."""
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    out = []
    for c in conversations:
        for j in range(1, len(c.turns)):
            ref, speaker, seed_j = "", c.turns[j].speaker, f"{seed}-{c.id}-{j}"
            if reference and unit == "turn":
                ref = reference_block(pool, speaker, c.group, k, seed_j)
            elif reference:
                ref = conversations_block(pool, speaker, speaker_labels(c.turns, j)[speaker], c.group, k, seed_j)
            out.append(Pair(ref + context_block(c.turns, j), " " + c.turns[j].text, c.path, c.line))
    return out


def retrieval_query(turns: list, upto: int) -> str:
    return " ".join(t.text for t in turns[max(0, upto - 2): upto])


def user_history(pool: dict, c, j: int, h: int, of: str = "user") -> list[str]:
    """The last h turns (pool order) in other threads of the user answered at turn j (of="user": the
    speaker of turn j-1) or of the one answering (of="responder"); pool: speaker_turns."""
    speaker = c.turns[j - 1 if of == "user" else j].speaker
    return [text for group, text in pool.get(speaker, []) if group != c.group][-h:] if h else []


def linked_urls(c, j: int) -> list[str]:
    """The URLs linked before turn j: the conversation's own links, then those in its earlier turns."""
    from megazoo.tasks.dialogue.links import find_urls

    return list(dict.fromkeys(c.links + [u for t in c.turns[:j] for u in find_urls(t.text)]))


def knowledge_pairs(conversations: list, documents, n: int, knowledge: bool = True, links=None,
                    link_sentences: int = 2, history_pool: dict | None = None, history_turns: int = 0,
                    history_of: str = "user") -> list[Pair]:
    """One pair per turn after the first, with the blocks the module docstring shows: the user's last
    `history_turns` turns from `history_pool` (speaker_turns), the `link_sentences` best sentences of the
    documents `links` (links.LinkedDocuments) holds for the URLs linked so far, the n sentences
    `documents` (knowledge.DocumentSet) retrieves; None/0 leaves a block out, knowledge=False all."""
    from megazoo.tasks.dialogue.knowledge import best_sentences

    slots = [(c, j) for c in conversations for j in range(1, len(c.turns))]
    histories = [user_history(history_pool or {}, c, j, history_turns, history_of) if knowledge else []
                 for c, j in slots]
    queries = [" ".join([retrieval_query(c.turns, j)] + hist) for (c, j), hist in zip(slots, histories)]
    found = documents.retrieve(queries, n) if knowledge and documents is not None else []
    out = []
    for i, (c, j) in enumerate(slots):
        head = HISTORY_HEAD[history_of] + "".join(f"- {t}\n" for t in histories[i]) if histories[i] else ""
        if knowledge and links is not None:
            linked = best_sentences(links.sentences(linked_urls(c, j)), queries[i], link_sentences)
            head += f"Linked documents: {' '.join(linked)}\n" if linked else ""
        head += f"Knowledge: {' '.join(found[i])}\n" if found and found[i] else ""
        out.append(Pair(head + context_block(c.turns, j), " " + c.turns[j].text, c.path, c.line))
    return out
