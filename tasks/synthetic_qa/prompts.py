"""The question generator's prompt, in one of two layouts (`--qg-input` of the data and sample stages):

    paragraph (default; Puri et al. condition the generator on the whole paragraph and the answer): the
    paragraph with the answer marked in place,
        Context: ... released in <answer>1991</answer> by ...
        Answer: 1991
        Question:
    sentence: the sentence that holds the answer (with its neighbour when the sentence is short), unmarked,
        Context: Python was released in 1991 by Guido van Rossum.
        Answer: 1991
        Question:

The markers are ANSWER_OPEN `<answer>` and ANSWER_CLOSE `</answer>`, put around the answer's own
characters (no spaces added); the "Answer:" line repeats the span in both layouts. The sentence
layout keeps the fine-tune and the sampling short on a CPU (prompts about a quarter as long).
"""

from __future__ import annotations

from megazoo.tasks.synthetic_qa.templates import sentences

MIN_CONTEXT = 80  # characters: a shorter sentence gets the one before it too
QG_INPUTS = ("paragraph", "sentence")  # the question generator's input (module doc); the first is the default
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"


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


def marked_paragraph(context: str, answer_start: int, answer: str) -> str:
    """The whole paragraph with the answer span between ANSWER_OPEN and ANSWER_CLOSE."""
    end = answer_start + len(answer)
    return f"{context[:answer_start]}{ANSWER_OPEN}{context[answer_start:end]}{ANSWER_CLOSE}{context[end:]}"


def qg_paragraph_prompt(context: str, answer_start: int, answer: str) -> str:
    return f"Context: {marked_paragraph(context, answer_start, answer)}\nAnswer: {answer}\nQuestion:"


def qg_input_prompt(qg_input: str, context: str, answer_start: int, answer: str) -> str:
    """The prompt of one answer in the layout `qg_input` (paragraph or sentence)."""
    if qg_input == "paragraph":
        return qg_paragraph_prompt(context, answer_start, answer)
    if qg_input == "sentence":
        return qg_prompt(context, answer_start, answer)
    raise ValueError(f"--qg-input must be one of {', '.join(QG_INPUTS)}, got {qg_input!r}")


def clean_question(text: str) -> str:
    """A sampled continuation cut to its first line and first question mark."""
    text = text.strip().split("\n", 1)[0].strip()
    if "?" in text:
        text = text[:text.index("?") + 1]
    return text
