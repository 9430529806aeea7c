"""Prompt construction: an instruction, a definition of the category, k labelled exemplars, the query.

The templates live in `prompts.yaml` beside this file (editable; `--prompts FILE.yaml` swaps in
another copy). With the default templates a 2-shot prompt reads

    Read each post and answer the question about it with Yes or No.
    A post is offensive when it insults, demeans or attacks someone, ...

    Post: What a lovely walk in the park today.
    Question: Is this post offensive?
    Answer: No

    Post: ...
    Answer: Yes

    Post: <the query>
    Question: Is this post offensive?
    Answer:

and the model's next word is read as " Yes" or " No" (the `answers` of the file).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import yaml

from megazoo.eval.readers.common import MissingFile
from megazoo.tasks.bias.data import check_category

DEFAULT = Path(__file__).with_name("prompts.yaml")
KEYS = ("header", "exemplar", "query", "separator", "answers", "categories")


@dataclass(frozen=True)
class Template:
    header: str
    exemplar: str
    query: str
    separator: str
    question: str
    yes: str
    no: str

    def shot(self, post: str, label: int) -> str:
        return self.exemplar.format(post=post, question=self.question, answer=(self.yes if label else self.no).strip())

    def prompt(self, post: str, exemplars: Sequence[tuple[str, int]] = ()) -> str:
        """The whole prompt for `post` after the (text, label) exemplars, in their order."""
        parts = [self.header] + [self.shot(t, y) for t, y in exemplars]
        parts.append(self.query.format(post=post, question=self.question))
        return self.separator.join(p for p in parts if p)


def _read_yaml(path: Path) -> dict:
    """The prompts file as a mapping; a file that is not UTF-8, not YAML or not a mapping is a
    ValueError naming the file (and line)."""
    from megazoo.core.train.user_errors import yaml_message
    from megazoo.core.fs import read_utf8

    text = read_utf8(path)
    try:
        spec = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ValueError(yaml_message(path, err) + "; fix the prompts file or leave out --prompts") from None
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise ValueError(f"{path}: the prompts file must be a YAML mapping with {', '.join(KEYS)}, "
                         f"got {type(spec).__name__}")
    return spec


def load_template(category: str = "offensive", path=None) -> Template:
    """The category's template from `path` (default: the packaged prompts.yaml)."""
    category = check_category(category)
    path = Path(path) if path else DEFAULT
    if not path.is_file():
        raise MissingFile(f"{path}: no such prompts file")
    spec = _read_yaml(path)
    missing = [k for k in KEYS if k not in spec]
    if missing:
        raise ValueError(f"{path}: the prompts file lacks {', '.join(missing)}")
    try:
        return _template(spec, category, path)
    except (KeyError, IndexError, AttributeError, TypeError, ValueError) as err:  # a wrong shape or placeholder
        if isinstance(err, ValueError) and str(err).startswith(str(path)):
            raise  # already says what is wrong
        raise ValueError(f"{path}: the prompt for {category!r} cannot be built ({type(err).__name__}: {err}); "
                         f"compare it with the package's prompts.yaml") from None


def _template(spec: dict, category: str, path) -> Template:
    cats = spec["categories"]
    target = None
    if category.startswith("group:"):
        target = category[len("group:"):]
        key = "group:target"
    else:
        key = category
    if key not in cats:
        raise ValueError(f"{path}: no prompt for category {key!r} under `categories`")
    entry = cats[key]
    words = (spec.get("targets") or {}).get(target, target) if target else None
    fill = {"target": words} if words else {}
    instruction = entry.get("instruction", "").format(**fill)
    definition = entry.get("definition", "").format(**fill)
    answers = spec["answers"]
    return Template(header=spec["header"].format(instruction=instruction, definition=definition).strip(),
                    exemplar=spec["exemplar"], query=spec["query"], separator=spec["separator"],
                    question=entry["question"].format(**fill), yes=answers["yes"], no=answers["no"])
