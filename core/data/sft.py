"""Supervised fine-tuning data: JSONL of prompt/response pairs or chats -> token samples whose loss
falls on the response only.

One JSON object per line (blank lines are skipped, extra keys ignored):
    {"prompt": "...", "response": "..."}
    {"messages": [{"role": "system" | "user" | "assistant", "content": "..."}, ...]}

Rendering. A pair is, with the default template "plain", the prompt's text then the response's text
exactly as written (put any separator in the prompt). A chat (and a pair under template "chat") is
rendered one turn at a time as

    <|system|>\n{content}\n<|user|>\n{content}\n<|assistant|>\n{content}<EOD><|user|>\n...

Everything except assistant contents is context; every assistant content is followed by the
tokenizer's EOD token, which is trained too, so the model learns where its turn ends. Turns after
the last assistant turn are dropped (they would carry no loss). A sample that would start with a
response (an empty prompt) gets an EOD in front, the document start the model saw in pretraining.

Sample: tokens = context and response tokens in order; input_ids = tokens[:-1], labels = tokens[1:]
with IGNORE wherever the target is a context token. Longer than seq_length + 1 tokens, a sample is
cut: truncate "left" (default) drops tokens from the start, keeping the end of the prompt, and
drops the sample when its last response (+ EOD) does not fit whole; "right" drops tokens from the
end and drops the sample when no response token is left. Samples are not padded here: `pad_batch`
pads a micro-batch to its longest sample (rounded up to a multiple, capped at seq_length).

Every problem with a file is an SFTDataError (a ValueError) reading `file:line: problem`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch

from megazoo.core.data.errors import DataError

IGNORE = -100
ROLES = ("system", "user", "assistant")
TEMPLATES = ("plain", "chat")
TRUNCATE = ("left", "right")
EXPECTED = ('one JSON object per line: {"prompt": str, "response": str} or '
            '{"messages": [{"role": "system"|"user"|"assistant", "content": str}, ...]}')

Segment = tuple[str, bool]  # (text, is_response)


class SFTDataError(DataError):
    """A fine-tuning data file in a wrong shape; the message reads `file:line: problem`."""

    def __init__(self, path: str | os.PathLike, line: int, problem: str):
        self.path, self.line, self.problem = os.fspath(path), line, problem
        super().__init__(f"{self.path}:{line}: {problem}")


@dataclass
class Example:
    """One line of a file, rendered: its segments and where it came from (for messages)."""

    segments: list[Segment]
    path: str
    line: int


# reading -----------------------------------------------------------------------------------------
def read_examples(path: str | os.PathLike, template: str = "plain") -> list[Example]:
    """Every example of one JSONL file, rendered with `template`; the first problem raises."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file (expected a JSONL file of fine-tuning examples, {EXPECTED})")
    from megazoo.core.fs import read_utf8

    text = read_utf8(path, SFTDataError)
    out = []
    # split on "\n" only: str.splitlines would also break at U+2028 inside JSON strings
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise SFTDataError(path, number, f"not valid JSON ({e.msg}); expected {EXPECTED}") from None
        out.append(Example(render(obj, path, number, template), str(path), number))
    if not out:
        raise SFTDataError(path, 1, f"the file is empty; expected {EXPECTED}")
    return out


def _string(obj: dict, key: str, path, line: int, where: str = "") -> str:
    value = obj[key]
    if not isinstance(value, str):
        raise SFTDataError(path, line, f"{where}\"{key}\" must be a string, got {type(value).__name__}")
    return value


def render(obj, path, line: int, template: str = "plain") -> list[Segment]:
    """The segments of one parsed line (see the module docstring for the templates)."""
    if not isinstance(obj, dict):
        raise SFTDataError(path, line, f"expected a JSON object, got {type(obj).__name__}; {EXPECTED}")
    if "messages" in obj:
        if "prompt" in obj or "response" in obj:
            raise SFTDataError(path, line, 'give either "prompt" and "response" or "messages", not both')
        return _chat(_messages(obj["messages"], path, line), path, line)
    for key in ("prompt", "response"):
        if key not in obj:
            other = "response" if key == "prompt" else "prompt"
            has = f"has \"{other}\" but " if other in obj else ""
            raise SFTDataError(path, line, f"{has}missing key \"{key}\"; expected {EXPECTED}")
    prompt, response = _string(obj, "prompt", path, line), _string(obj, "response", path, line)
    if not response.strip():
        raise SFTDataError(path, line, 'empty "response": nothing to train on; give the response text or '
                                       'remove the line')
    if template == "chat":
        return _chat([("user", prompt), ("assistant", response)], path, line)
    return [(prompt, False), (response, True)]


def _messages(messages, path, line: int) -> list[tuple[str, str]]:
    if not isinstance(messages, list) or not messages:
        raise SFTDataError(path, line, f'"messages" must be a non-empty list of {{"role", "content"}} objects, '
                                       f"got {messages!r:.60}")
    out = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]: "
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise SFTDataError(path, line, f'{where}expected {{"role": "system"|"user"|"assistant", "content": str}}, '
                                           f"got {m!r:.60}")
        role, content = _string(m, "role", path, line, where), _string(m, "content", path, line, where)
        if role not in ROLES:
            raise SFTDataError(path, line, f"{where}unknown role {role!r}; expected one of {', '.join(ROLES)}")
        if role == "assistant" and not content.strip():
            raise SFTDataError(path, line, f"{where}empty assistant content: nothing to train on")
        out.append((role, content))
    if not any(role == "assistant" for role, _ in out):
        raise SFTDataError(path, line, 'the "messages" list has no assistant turn: nothing to train on (the '
                                       "loss falls on assistant turns; everything else is context)")
    return out


def _chat(messages: list[tuple[str, str]], path, line: int) -> list[Segment]:
    """Context/response segments of a chat; consecutive context is merged (tokenised as one text)."""
    last = max(i for i, (role, _) in enumerate(messages) if role == "assistant")
    segments: list[Segment] = []
    context = ""
    for role, content in messages[: last + 1]:
        if role == "assistant":
            segments += [(context + "<|assistant|>\n", False), (content, True)]
            context = ""
        else:
            context += f"<|{role}|>\n{content}\n"
    return segments


# tokenising and cutting --------------------------------------------------------------------------
@dataclass
class Samples:
    """The samples of one split and what was dropped on the way."""

    items: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)
    dropped: list[Example] = field(default_factory=list)


def tokenize(examples: list[Example], tokenizer, seq_length: int, truncate: str = "left") -> Samples:
    """(input_ids, labels) per example, cut to seq_length; examples that cannot fit are dropped."""
    if tokenizer.eod is None:
        raise DataError(f"tokenizer {tokenizer.name!r} has no end-of-document token; SFT ends every response with it")
    texts = [text for ex in examples for text, _ in ex.segments]
    ids = iter(tokenizer.encode_batch(texts))
    out = Samples()
    for ex in examples:
        tokens: list[int] = []
        target: list[bool] = []
        for text, is_response in ex.segments:
            piece = list(next(ids)) + ([tokenizer.eod] if is_response else [])
            if is_response and not tokens:  # nothing before the response: start the document with EOD
                tokens, target = [tokenizer.eod], [False]
            tokens += piece
            target += [is_response] * len(piece)
        sample = cut(tokens, target, seq_length, truncate)
        if sample is None:
            out.dropped.append(ex)
        else:
            out.items.append(sample)
    return out


def cut(tokens: list[int], target: list[bool], seq_length: int, truncate: str = "left"):
    """(input_ids, labels) of one token sequence within seq_length + 1 tokens, or None when its
    response does not fit (see the module docstring)."""
    n = seq_length + 1
    if len(tokens) > n:
        if truncate == "left":
            last_start = len(target) - target[::-1].index(False)  # the last response runs to the end
            start = len(tokens) - n
            if last_start - start < 1:  # the last response needs a context token before it
                return None
            tokens, target = tokens[start:], target[start:]
        else:
            tokens, target = tokens[:n], target[:n]
    if not any(target[1:]):
        return None
    ids = torch.tensor(tokens, dtype=torch.long)
    labels = ids[1:].clone()
    labels[~torch.tensor(target[1:], dtype=torch.bool)] = IGNORE
    return ids[:-1], labels


def pad_batch(samples: list, seq_length: int, pad_id: int, multiple: int = 8) -> dict:
    """Right-pad a micro-batch to its longest sample, rounded up to `multiple`, at most seq_length
    (a causal model never attends to the padding after a token; padded labels are IGNORE)."""
    longest = max(len(ids) for ids, _ in samples)
    length = min(seq_length, -(-longest // multiple) * multiple)
    input_ids = torch.full((len(samples), length), pad_id, dtype=torch.long)
    labels = torch.full((len(samples), length), IGNORE, dtype=torch.long)
    for row, (ids, lab) in enumerate(samples):
        input_ids[row, : len(ids)] = ids
        labels[row, : len(lab)] = lab
    return {"input_ids": input_ids, "labels": labels}


# files and splits --------------------------------------------------------------------------------
def split_files(path: str | os.PathLike, template: str, valid_fraction: float,
                seed: int) -> tuple[list[Example], list[Example]]:
    """(train, valid) examples of `data.path`: a folder with train.jsonl and valid.jsonl, or one
    file whose seeded `valid_fraction` (at least one example) is held out."""
    path = Path(path)
    if path.is_dir():
        files = [path / "train.jsonl", path / "valid.jsonl"]
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            raise DataError(f"{path}: a fine-tuning data folder needs train.jsonl and valid.jsonl; missing "
                            f"{', '.join(missing)} (or give data.path one JSONL file to split)")
        return read_examples(files[0], template), read_examples(files[1], template)
    if not path.exists():
        raise DataError(f"data.path={str(path)!r}: no such file or folder (expected a JSONL file of "
                        f"{{prompt, response}} pairs or a folder with train.jsonl and valid.jsonl)")
    examples = read_examples(path, template)
    if len(examples) < 2:
        raise DataError(f"{path}: {len(examples)} example; holding out a validation example needs at least 2 "
                        f"(or give a folder with train.jsonl and valid.jsonl)")
    n_valid = min(len(examples) - 1, max(1, round(valid_fraction * len(examples))))
    order = torch.randperm(len(examples), generator=torch.Generator().manual_seed(seed)).tolist()
    held = set(order[:n_valid])
    return ([ex for i, ex in enumerate(examples) if i not in held],
            [ex for i, ex in enumerate(examples) if i in held])
