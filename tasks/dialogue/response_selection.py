"""MSDP's stage-2 examples and prompts as Megatron-LM makes them (tasks/msdp/preprocessing.py at
164204cd: prompt_selection_for_response_generation, prepare_input_for_response_generation; prompt.py:
read_prompts and the response branch of generate_samples_by_prompting_input_from_file).

Which training samples may be examples: those whose response copies its knowledge. Both are split
into nltk word tokens; a run of at least 10 consecutive response tokens that all occur in the
knowledge counts its length as copied (shorter runs count nothing). A sample is kept when the copied
count is between 60% and 90% of the response's tokens and at least 80% of the knowledge's tokens;
`no_passages_used` samples are dropped. The kept samples are shuffled with numpy's legacy generator
seeded with `seed` (Megatron's np.random.seed(1234); np.random.shuffle) and the first n are the
fixed examples of every prompt: n = 20 as in the paper's scripts (fewer kept samples: an error that
says how many passed).

The lines: `Topic: T. User says: U We know that: K System replies: R`, with the last turn U, the
knowledge K and the response R word-tokenised (tokens joined by spaces; the topic as written), each
line stripped and followed by " \\n"; the test sample's line ends `System replies:` and its K is the
stage-1 knowledge (with `<|endoftext|>` removed), tokenised the same way. word_tokenize False keeps
the texts as written (the copy filter still counts word tokens: it is how examples are chosen).
Without knowledge (megazoo's baseline; Megatron has none) every line leaves out `We know that: K `.
"""

from __future__ import annotations

import numpy as np

from megazoo.eval.metrics.dialogue import NO_PASSAGE, word_tokenized, word_tokens

MIN_RUN = 10
RESPONSE_COPIED = (0.6, 0.9)  # the copied share of the response's tokens: at least, at most
KNOWLEDGE_COPIED = 0.8  # the copied share of the knowledge's tokens: at least
END_OF_TEXT = "<|endoftext|>"


def copied_tokens(knowledge: list[str], response: list[str]) -> int:
    """Response tokens in runs of >= MIN_RUN consecutive tokens that occur in the knowledge."""
    known = set(knowledge)
    copied = run = 0
    for token in response:
        if token in known:
            run += 1
            continue
        if run >= MIN_RUN:
            copied += run
        run = 0
    return copied + (run if run >= MIN_RUN else 0)


def copies_knowledge(knowledge: str, response: str) -> bool:
    """Megatron's filter: the response copies 60-90% of itself and >= 80% of the knowledge."""
    k, r = word_tokens(knowledge), word_tokens(response)
    copied = copied_tokens(k, r)
    low, high = RESPONSE_COPIED
    return low * len(r) <= copied <= high * len(r) and copied >= KNOWLEDGE_COPIED * len(k)


def _text(text: str, tokenize: bool) -> str:
    return word_tokenized(text).strip() if tokenize else text.strip()


def response_line(topic: str, last_turn: str, knowledge: str | None, response: str | None, tokenize: bool) -> str:
    line = f"Topic: {topic}. User says: {_text(last_turn, tokenize)} "
    if knowledge is not None:
        line += f"We know that: {_text(knowledge, tokenize)} "
    return line + ("System replies:" if response is None else f"System replies: {_text(response, tokenize)}")


def response_examples(pool: list, n: int = 20, seed: int = 1234) -> list[int]:
    """Indices into `pool` of the n fixed examples, in prompt order."""
    kept = [i for i, s in enumerate(pool) if s.knowledge != NO_PASSAGE and copies_knowledge(s.knowledge, s.response)]
    if len(kept) < n:
        raise ValueError(f"only {len(kept)} of the {len(pool)} example samples pass Megatron's copy filter (the "
                         f"response copies 60-90% of itself and >= 80% of the knowledge in runs of >= {MIN_RUN} "
                         f"words); stage 2 takes {n}: give --shots {len(kept)} or fewer, or more training samples")
    order = list(range(len(kept)))  # numpy's shuffle permutes by the length alone, as Megatron's list of lines
    np.random.RandomState(seed).shuffle(order)
    return [kept[j] for j in order[:n]]


def response_prompts(queries: list, knowledge: list[str] | None, examples: list, tokenize: bool = True) -> list[str]:
    """Stage-2 prompts; `examples`: the pool samples response_examples chose; knowledge None: the
    baseline without knowledge."""
    with_k = knowledge is not None
    head = "".join(response_line(e.topic, e.last_turn, e.knowledge if with_k else None, e.response, tokenize).strip()
                   + " \n" for e in examples)
    out = []
    for i, q in enumerate(queries):
        k = knowledge[i].replace(END_OF_TEXT, "").strip() if with_k else None
        out.append(head + response_line(q.topic, q.last_turn, k, None, tokenize))
    return out
