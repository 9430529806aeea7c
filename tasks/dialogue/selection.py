"""MSDP's stage-1 example selection as Megatron-LM makes it (tasks/msdp/preprocessing.py at 164204cd:
get_database, select_prompts_based_on_similarity, prompt_selection_for_knowledge_generation).

The pool (Megatron's get_database), from the training samples in order:
- a sample whose knowledge is `no_passages_used` is dropped;
- unless the data type is wow_seen: a knowledge with a bracket "(" or ")" is dropped, and one that does
  not contain the topic (case-sensitive substring) is dropped;
- a sample whose topic is not a topic of the test data is also dropped when its knowledge has more
  than 20 words or starts with "It", "it", "This" or "this" (samples of test topics keep them);
- each kept sample gives the example `( last turn ) topic => knowledge` and the text the encoder embeds:
  its last three context turns joined by spaces, after `( topic ) ` unless the data type is wow_seen.

The query of a test sample is `( topic ) ` and its last three turns joined by spaces, for every data
type: Megatron tests `data_type != "seen"`, which the types it is given (wow_seen, wow_unseen, woi)
always pass, so the wow_seen query carries the topic while its pool texts do not. Kept as written.

Selection, by the inner product of the encoder's vectors (Megatron: the pooler output of a
fine-tuned DPR question encoder, unnormalised; here a retriever's query tower, eval/question_tower.py,
or a sentence encoder such as all-MiniLM-L6-v2):
- a topic with pool samples (a seen topic): its own samples only, the top min(n, 10) by similarity,
  with no top-up from other topics (a seen topic with 3 samples gets a 3-example prompt);
- any other topic: the pool walked in Megatron's `torch.sort(similarity)` order, which is ascending,
  so the LEAST similar sample of each distinct topic is taken until 10 topics are in. The paper says
  nearest; `unseen_order: nearest` walks the pool from the most similar instead;
- the chosen examples are reversed, so the most similar of a seen topic sits last, next to the query.
Test samples with the same `topic last-turn` key share the first one's examples, as Megatron's prompt
file (a dict by that key, first entry kept) makes them share.

The prompt is each example stripped and followed by " \\n" (read_prompts), then
`( last turn ) topic =>`. Stage 1's texts are not word-tokenised (Megatron tokenises stage 2 only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from megazoo.eval.metrics.dialogue import NO_PASSAGE

DATA_TYPES = ("wow_seen", "wow_unseen", "woi")
UNSEEN_ORDERS = ("megatron", "nearest")
KNOWLEDGE_SHOTS = 10
CONTEXT_TURNS = 3
MAX_KNOWLEDGE_WORDS = 20
PRONOUN_STARTS = ("It", "it", "This", "this")


@dataclass
class SelectionConfig:
    """Megatron's selection settings. data_type: wow_seen (WoW test_random_split), wow_unseen
    (test_topic_split) or woi (Wizard of Internet), Megatron's --data_type; unseen_order: megatron
    (ascending, as the code) or nearest (as the paper says); response examples: response_shots
    drawn with numpy's legacy shuffle under `seed` (Megatron's --seed 1234); word_tokenize: stage 2's
    texts as nltk word tokens joined by spaces (False: as written)."""

    data_type: str = "wow_seen"
    knowledge_shots: int = KNOWLEDGE_SHOTS
    response_shots: int = 20
    seed: int = 1234
    unseen_order: str = "megatron"
    word_tokenize: bool = True

    def __post_init__(self):
        if self.data_type not in DATA_TYPES:
            raise ValueError(f"data type {self.data_type!r}; choose one of {', '.join(DATA_TYPES)}")
        if self.unseen_order not in UNSEEN_ORDERS:
            raise ValueError(f"unseen order {self.unseen_order!r}; choose one of {', '.join(UNSEEN_ORDERS)}")


@dataclass
class Entry:
    """One stage-1 pool example: the index of its sample in the examples file, its topic, the text
    the encoder embeds and the example line."""

    index: int
    topic: str
    dialogue: str
    instance: str


def context_text(sample) -> str:
    return " ".join(sample.turns[-CONTEXT_TURNS:])


def query_text(sample) -> str:
    """The encoder's query for a test sample: `( topic ) ` and its last three turns (see the docstring)."""
    return f"( {sample.topic} ) {context_text(sample)}"


def instance(sample) -> str:
    return f"( {sample.last_turn} ) {sample.topic} => {sample.knowledge}"


def knowledge_pool(samples: list, test_topics: set, data_type: str) -> tuple[list[Entry], dict[str, list[int]]]:
    """(entries, topic -> entry indices of the test topics): Megatron's get_database."""
    filtered = data_type != "wow_seen"
    entries: list[Entry] = []
    by_topic: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        k = s.knowledge
        if k == NO_PASSAGE:
            continue
        if filtered and ("(" in k or ")" in k or s.topic not in k):
            continue
        if s.topic in test_topics:
            by_topic.setdefault(s.topic, []).append(len(entries))
        elif len(k.split()) > MAX_KNOWLEDGE_WORDS or k.startswith(PRONOUN_STARTS):
            continue
        dialogue = (f"( {s.topic} ) " if filtered else "") + context_text(s)
        entries.append(Entry(i, s.topic, dialogue, instance(s)))
    return entries, by_topic


def select(queries: list, entries: list[Entry], by_topic: dict, query_vecs: np.ndarray, entry_vecs: np.ndarray,
           config: SelectionConfig) -> list[list[int]]:
    """Per query, the entry indices of its examples in prompt order (see the docstring)."""
    shots = config.knowledge_shots
    memo: dict[str, list[int]] = {}
    out = []
    for q, vec in zip(queries, query_vecs):
        key = f"{q.topic} {q.last_turn}"
        if key not in memo:
            if q.topic in by_topic:
                own = by_topic[q.topic]
                top = np.argsort(-(entry_vecs[own] @ vec), kind="stable")[:min(len(own), shots)]
                chosen = [own[j] for j in top]
            else:
                sims = entry_vecs @ vec
                order = np.argsort(sims if config.unseen_order == "megatron" else -sims, kind="stable")
                chosen, topics = [], set()
                for j in order.tolist():
                    if entries[j].topic not in topics:
                        topics.add(entries[j].topic)
                        chosen.append(j)
                        if len(chosen) == shots:
                            break
            memo[key] = chosen[::-1]
        out.append(memo[key])
    return out


def knowledge_prompt(sample, examples: list[str]) -> str:
    return "".join(x.strip() + " \n" for x in examples) + f"( {sample.last_turn} ) {sample.topic} =>"


def knowledge_prompts(queries: list, pool: list, embed, config: SelectionConfig,
                      test_topics: set | None = None) -> tuple[list[str], list[list[int]]]:
    """(stage-1 prompts, per query the examples' indices into `pool`). `embed(texts)` gives vectors
    whose inner product is the similarity; `test_topics`: the topics of the whole test file (default
    the queries'), which decide what the pool keeps, as Megatron reads them from its test file."""
    topics = test_topics if test_topics is not None else {q.topic for q in queries}
    entries, by_topic = knowledge_pool(pool, topics, config.data_type)
    if not entries:
        raise ValueError(f"no example is left in the pool after Megatron's filters (data type {config.data_type}: "
                         f"knowledge given, short, not starting with It/This"
                         f"{'' if config.data_type == 'wow_seen' else ', no brackets, containing the topic'})")
    entry_vecs = np.asarray(embed([e.dialogue for e in entries]), dtype=np.float32)
    query_vecs = np.asarray(embed([query_text(q) for q in queries]), dtype=np.float32)
    chosen = select(queries, entries, by_topic, query_vecs, entry_vecs, config)
    prompts = [knowledge_prompt(q, [entries[j].instance for j in idx]) for q, idx in zip(queries, chosen)]
    return prompts, [[entries[j].index for j in idx] for idx in chosen]


def guess_data_type(queries: list, pool: list) -> str:
    """wow_seen when every test topic has a grounded pool sample, else wow_unseen (which Megatron's
    code treats as it treats woi)."""
    grounded = {s.topic for s in pool if s.knowledge != NO_PASSAGE}
    return "wow_seen" if all(q.topic in grounded for q in queries) else "wow_unseen"
