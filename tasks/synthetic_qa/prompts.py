"""The question generator's prompt: the sentence that holds the answer, the answer, "Question:".

Puri et al. condition GPT-2 on the whole paragraph; on CPU the sentence around the answer (with
its neighbour when the sentence is short) keeps the fine-tune and the sampling short, and holds
what a question about the span needs.
"""

from __future__ import annotations

from megazoo.tasks.synthetic_qa.templates import sentences

MIN_CONTEXT = 80  # characters: a shorter sentence gets the one before it too


def answer_context(context: str, answer_start: int, answer: str) -> str:
    """The sentence(s) of `context` that hold the answer span."""
    spans = sentences(context) or [(0, context)]
    end = answer_start + len(answer)
    first = last = None
    for i, (off, sent) in enumerate(spans):
        if off <= answer_start < off + len(sent) + 1 and first is None:
            first = i
        if off < end:
            last = i
    first = 0 if first is None else first
    last = max(first, last if last is not None else first)
    if sum(len(s) for _, s in spans[first:last + 1]) < MIN_CONTEXT and first > 0:
        first -= 1
    return context[spans[first][0]:spans[last][0] + len(spans[last][1])]


def qg_prompt(context: str, answer_start: int, answer: str) -> str:
    return f"Context: {answer_context(context, answer_start, answer)}\nAnswer: {answer}\nQuestion:"


def clean_question(text: str) -> str:
    """A sampled continuation cut to its first line and first question mark."""
    text = text.strip().split("\n", 1)[0].strip()
    if "?" in text:
        text = text[:text.index("?") + 1]
    return text
