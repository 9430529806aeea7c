"""The synthetic corpus (Puri et al. sample the paragraphs they make questions from with a GPT): a
decoder continues titles or opening sentences read from a prompt file; corpus_filter.py cuts and
filters the samples; cli_corpus.py writes the kept ones in SQuAD layout for the answers stage.

The prompt file, one prompt a line (blank lines skipped; UTF-8, or its gzip), in one of two layouts,
told apart by the first line that is not blank:

    text        a title or an opening sentence per line. A line that ends a sentence (`.`, `!` or
                `?`, a closing quote or bracket after it allowed) is an opening; any other is a title.
    JSON lines  one object per line (the first line starts with `{`): "title" (a string, required),
                and optionally "opening" (a sentence to continue) or "text" (a text whose first
                sentence is the opening; "opening" wins when both are given).

Anything else is refused at its line with both layouts named: a JSON document (a SQuAD file), a
JSON-lines object without "title", a CSV or TSV (the .csv/.tsv name, a tab, or a first line that is
a comma-separated header such as `title,text`).

What the decoder is given: a title alone is `TITLE\\n\\n`; an opening is `TITLE\\n\\nOPENING` (or the
opening alone when untitled). The paragraph is the continuation only (the opening is the user's
text, not the decoder's): its first line that is not empty (a continuation that begins with a line
end is continued after it, up to ROUNDS tries in all), cut and filtered by corpus_filter.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from megazoo.eval.readers.common import LineError
from megazoo.tasks.synthetic_qa.templates import sentences

LAYOUTS = ('a text file with one title or opening sentence per line (a line ending in . ! or ? is an opening), '
           'or JSON lines {"title": str, "opening": str (optional), "text": str (optional; its first sentence '
           'is the opening)}')
_ENDS_SENTENCE = re.compile(r"[.!?][\"')\]”’]*$")
ROUNDS = 3  # tries at a paragraph whose continuation begins with line ends (sample_paragraphs)
_CSV_HEADER = re.compile(r'^"?[A-Za-z_]\w*"?(,"?[A-Za-z_]\w*"?)+$')  # title,text: names, commas, no spaces


class PromptFileError(LineError):
    """A prompt file in neither accepted layout: `file:line: problem; accepted: LAYOUTS`."""

    def __init__(self, path, line: int, problem: str):
        super().__init__(path, line, f"{problem}; a prompt file is {LAYOUTS}")


@dataclass
class Prompt:
    title: str  # "" when the line had none (an opening alone)
    opening: str  # "" for a title alone
    line: int  # its line in the prompt file

    def text(self) -> str:
        """What the decoder continues (see the module doc)."""
        if not self.opening:
            return f"{self.title}\n\n"
        return f"{self.title}\n\n{self.opening}" if self.title else self.opening


def _first_sentence(text: str) -> str:
    found = sentences(text.strip())
    return found[0][1].strip() if found else text.strip()


def _json_prompt(path, number: int, line: str) -> Prompt:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        hint = " (a JSON document over several lines, such as a SQuAD file, is not JSON lines)" if number == 1 else ""
        raise PromptFileError(path, number, f"not a JSON object on one line ({e.msg}){hint}") from None
    if not isinstance(obj, dict):
        raise PromptFileError(path, number, f"a JSON {type(obj).__name__}, not an object")
    if "title" not in obj:
        what = 'a SQuAD file (it has "data")' if "data" in obj else f"an object with keys {sorted(obj)[:6]}"
        raise PromptFileError(path, number, f'{what} without "title"')
    for key in ("title", "opening", "text"):
        if key in obj and not isinstance(obj[key], str):
            raise PromptFileError(path, number, f'"{key}" must be a string, got {type(obj[key]).__name__}')
    title = obj["title"].strip()
    opening = (obj.get("opening") or "").strip() or _first_sentence(obj.get("text") or "")
    if not title and not opening:
        raise PromptFileError(path, number, 'an empty "title" and no "opening" or "text": nothing to prompt with')
    return Prompt(title, opening, number)


def read_prompts(path) -> list[Prompt]:
    """Every prompt of the file (see the module doc); the first problem raises PromptFileError."""
    from megazoo.eval.readers.common import text_lines

    path = Path(path)
    if path.suffix.lower() in (".csv", ".tsv"):
        raise PromptFileError(path, 1, f"a {path.suffix[1:].upper()} file (by its name)")
    out, layout = [], None
    for number, raw in text_lines(path, LAYOUTS, PromptFileError):
        line = raw.strip()
        if not line:
            continue
        if layout is None:
            layout = "json" if line.startswith(("{", "[")) else "text"
            if layout == "text" and _CSV_HEADER.match(line):
                raise PromptFileError(path, number, f"{line[:60]!r} looks like a CSV header")
        if layout == "json":
            out.append(_json_prompt(path, number, line))
            continue
        if "\t" in raw:
            raise PromptFileError(path, number, "a tab: a TSV row, not a title or an opening")
        if line.startswith(("{", "[")):
            raise PromptFileError(path, number, "a JSON line in a text prompt file (the first line was text)")
        if _ENDS_SENTENCE.search(line):
            out.append(Prompt("", line, number))
        else:
            out.append(Prompt(line, "", number))
    if not out:
        raise PromptFileError(path, 1, "the file holds no prompts")
    return out


def sample_paragraphs(model, tokenizer, prompts: list[str], per_prompt: int, top_p: float = 0.9,
                      temperature: float = 1.0, max_new_tokens: int = 256, batch: int = 16, seed: int = 0,
                      progress: bool = False) -> list[list[str]]:
    """`per_prompt` sampled continuations per prompt text, each up to its first line end; the same
    seed gives the same texts. A continuation that is only a line end (the decoder starts a new
    paragraph) is continued after it, up to ROUNDS times in all, so its paragraph is the next line;
    one still empty then stays "". Prompts are batched by token length, as
    questions.sample_questions does."""
    from tqdm import tqdm

    from megazoo.core.verbosity import shows_progress
    from megazoo.tasks.synthetic_qa.questions import prompt_room
    from megazoo.zoo.generate import generate

    flat = [p for p in prompts for _ in range(per_prompt)]
    room = prompt_room(model, max_new_tokens)  # a longer prompt keeps its end
    ids = [tokenizer(p)["input_ids"] for p in flat]
    eos = tokenizer.eos_token_id
    out = [""] * len(ids)
    pending = list(range(len(ids)))
    bar = tqdm(total=len(ids), desc="paragraphs", unit="p", disable=not shows_progress(progress))
    for round_ in range(ROUNDS):
        order = sorted(pending, key=lambda k: len(ids[k]))  # batches of like lengths: little left padding
        pending = []
        for i in range(0, len(order), batch):
            rows = order[i:i + batch]
            new = generate(model, [ids[k][-room:] if room else ids[k] for k in rows], max_new_tokens,
                           do_sample=True, top_p=top_p, temperature=temperature, eos_token_id=eos, pad_token_id=tokenizer.pad_token_id or eos,
                           stop_strings=["\n"], tokenizer=tokenizer, seed=seed + round_ * 1_000_003 + i)
            for k, toks in zip(rows, new):
                text = tokenizer.decode(toks, skip_special_tokens=True)
                if not text.strip() and "\n" in text and toks[-1] != eos and round_ < ROUNDS - 1:
                    ids[k] = ids[k] + list(toks)  # a line end first: the paragraph is the next line
                    pending.append(k)
                    continue
                out[k] = text.split("\n", 1)[0] if text.strip() else ""
                bar.update(1)
        if not pending:
            break
    bar.close()
    return [out[k * per_prompt:(k + 1) * per_prompt] for k in range(len(prompts))]
