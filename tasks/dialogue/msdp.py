"""MSDP (Liu et al. 2022): a frozen LM prompted twice; this module is the simple selection
(`msdp --selection simple`). Megatron-LM's own selection (tasks/msdp/{preprocessing,prompt}.py: pool
filters, a DPR-style query encoder, stage-2 examples by knowledge copy ratio, word-tokenised stage-2
texts) is selection.py and response_selection.py, the `msdp` command's default.

Stage 1, knowledge: 10 examples `( last turn ) topic => knowledge`, one per line, then the query
`( last turn ) topic =>`. The examples are chosen per sample from the training samples that have
knowledge, by embedding similarity of `( last turn ) topic` (MSDP used a fine-tuned DPR question
encoder; here any sentence encoder, MiniLM by default): for a topic seen in training its own samples
ranked by similarity (topped up with the nearest samples of other topics when it has fewer than 10),
for an unseen topic the nearest samples of distinct topics. The most similar example sits last,
next to the query.

Stage 2, response: 20 fixed training examples
`Topic: T. User says: U We know that: K System replies: R`, one per line, then the sample's
`Topic: T. User says: U We know that: K' System replies:` with K' the stage-1 knowledge. Without
knowledge (the baseline) the examples and the query leave out `We know that: ...`.

Decoding is greedy and stops at the first newline (decode.greedy_lines); the LM is never trained.
"""

from __future__ import annotations

import random

import numpy as np

from megazoo.eval.metrics.dialogue import NO_PASSAGE

KNOWLEDGE_SHOTS = 10
RESPONSE_SHOTS = 20


def grounded(samples: list) -> list:
    return [s for s in samples if s.knowledge.strip() not in ("", NO_PASSAGE)]


def query_text(sample) -> str:
    return f"( {sample.last_turn} ) {sample.topic}"


def knowledge_example(sample) -> str:
    return f"{query_text(sample)} => {sample.knowledge}"


def select_examples(queries: list, pool: list, query_vecs: np.ndarray, pool_vecs: np.ndarray,
                    k: int = KNOWLEDGE_SHOTS) -> list[list[int]]:
    """Per query, the indices into `pool` of its k examples, least similar first (see the docstring)."""
    topics = {s.topic for s in pool}
    out = []
    for q, vec in zip(queries, query_vecs):
        ranked = np.argsort(-(pool_vecs @ vec), kind="stable").tolist()
        chosen = [i for i in ranked if pool[i].topic == q.topic][:k] if q.topic in topics else []
        used = {pool[i].topic for i in chosen} | {q.topic}
        for i in ranked:  # nearest examples of distinct (other) topics
            if len(chosen) >= k:
                break
            if pool[i].topic not in used:
                chosen.append(i)
                used.add(pool[i].topic)
        out.append(chosen[::-1])
    return out


def knowledge_prompts(queries: list, pool: list, embed, k: int = KNOWLEDGE_SHOTS) -> list[str]:
    """Stage-1 prompts; `embed(texts)` gives L2-normalised vectors."""
    return knowledge_choices(queries, pool, embed, k)[0]


def knowledge_choices(queries: list, pool: list, embed, k: int = KNOWLEDGE_SHOTS) -> tuple[list[str], list[list[int]]]:
    """(stage-1 prompts, per query its examples' indices into `pool`, in prompt order)."""
    kept = [i for i, s in enumerate(pool) if s.knowledge.strip() not in ("", NO_PASSAGE)]
    grounded_pool = [pool[i] for i in kept]
    if not grounded_pool:
        raise ValueError("the example pool has no sample with knowledge (every knowledge is no_passages_used)")
    chosen = select_examples(queries, grounded_pool, embed([query_text(q) for q in queries]),
                             embed([query_text(p) for p in grounded_pool]), k)
    prompts = ["".join(knowledge_example(grounded_pool[i]) + "\n" for i in idx) + f"{query_text(q)} =>"
               for q, idx in zip(queries, chosen)]
    return prompts, [[kept[i] for i in idx] for idx in chosen]


def response_line(sample, knowledge: str | None, response: str | None) -> str:
    said = f"Topic: {sample.topic}. User says: {sample.last_turn} "
    if knowledge is not None:
        said += f"We know that: {knowledge} "
    return said + "System replies:" + (f" {response}" if response is not None else "")


def response_examples(pool: list, n: int = RESPONSE_SHOTS, seed: int = 0) -> list:
    """The fixed examples of stage 2: n grounded training samples in a seeded order."""
    return [pool[i] for i in response_example_indices(pool, n, seed)]


def response_example_indices(pool: list, n: int = RESPONSE_SHOTS, seed: int = 0) -> list[int]:
    """Indices into `pool` of response_examples' samples, in prompt order."""
    kept = [i for i, s in enumerate(pool) if s.knowledge.strip() not in ("", NO_PASSAGE)]
    if len(kept) < n:
        raise ValueError(f"stage 2 takes {n} fixed examples; the example pool has {len(kept)} samples with knowledge")
    order = list(range(len(kept)))
    random.Random(seed).shuffle(order)
    return [kept[i] for i in order[:n]]


def response_prompts(queries: list, knowledge: list[str] | None, examples: list) -> list[str]:
    """Stage-2 prompts; knowledge None: the baseline without knowledge in examples and query."""
    with_k = knowledge is not None
    head = "".join(response_line(e, e.knowledge if with_k else None, e.response) + "\n" for e in examples)
    return [head + response_line(q, knowledge[i] if with_k else None, None) for i, q in enumerate(queries)]
