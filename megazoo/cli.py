"""The `megazoo` command line.

Each subcommand lives in its own module, which defines `add_arguments(parser)` and `run(args)`.
Only the chosen command's module is imported, so `megazoo --help` stays fast and a broken optional
dependency of one command never breaks another. `main` is the one error boundary of every command:
a known error (core/train/user_errors.py) becomes one line `megazoo COMMAND: error: ...` with exit
code 2 (the user's mistake) or 1 (a runtime failure); Ctrl-C exits 130 (docs/errors.md); a reader
that closes our output (`megazoo zoo list | head`) ends the command quietly with 141, as git does.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "quickstart": ("megazoo.quickstart", "the main job: pretrain a small GPT at TP=2 x PP=2, evaluate, export to HF"),
    "train": ("megazoo.core.train.cli", "train from a recipe: megazoo train RECIPE [--set k=v ...] [--nproc N]"),
    "eval": ("megazoo.eval.cli", "zero-shot suites, task evaluators, the leaderboard runner"),
    "export-hf": ("megazoo.zoo.cli_export", "export a megazoo checkpoint to a Hugging Face folder"),
    "import-hf": ("megazoo.zoo.cli_import", "import a Hugging Face folder into a megazoo checkpoint"),
    "generate": ("megazoo.zoo.cli_generate", "continue prompts with a checkpoint at any TP/PP layout"),
    "zoo": ("megazoo.zoo.cli_zoo", "list and show the named model cards"),
    "plan": ("megazoo.zoo.cli_plan", "memory and throughput planner for cluster-scale layouts"),
    "preprocess": ("megazoo.core.data.cli", "text/JSONL -> Megatron .bin/.idx"),
    "tokenizer": ("megazoo.core.data.cli_tokenizer", "train a wordpiece, bpe or sentencepiece tokenizer on text files"),
    "embed": ("megazoo.zoo.cli_embed", "sentence embeddings of a .txt/.jsonl file with an encoder checkpoint -> .npy"),
    "curate": ("megazoo.curate.cli", "clean a raw text corpus: filters, quality, dedup, decontamination, blend"),
    "task": ("megazoo.tasks.cli", "run a research task's stage, e.g. `megazoo task race train RECIPE`"),
    "config": ("megazoo.cli_config", "the resolved config of a recipe: megazoo config show RECIPE [--set k=v ...]"),
    "completion": ("megazoo.completion", "print a shell completion script: eval \"$(megazoo completion bash|zsh)\""),
}


def _top_help() -> str:
    width = max(len(n) for n in COMMANDS)
    lines = ["usage: megazoo COMMAND [ARGS ...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "`megazoo COMMAND --help` shows a command's options. Every command also takes -q/--quiet (no",
              "progress bars or information lines) and -v/--verbose (a line per logged training step)."]
    return "\n".join(lines)


# the exit status of a process that a closed pipe stopped (128 + SIGPIPE): what `git log | head` and
# coreutils give the shell, so `set -o pipefail` scripts and `$PIPESTATUS` read it the same way
CLOSED_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    """Run one command; a reader that closed our stdout (`megazoo zoo list | head`) ends it quietly."""
    try:
        try:
            return _main(argv)
        finally:  # also after --help's SystemExit
            sys.stdout.flush()  # what is still buffered meets a closed pipe here, not at interpreter exit
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        return _closed_pipe()


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (a broken pipe elsewhere is a real error)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no file descriptor (captured output) or no poll()
        return False


def _closed_pipe() -> int:
    """Stop writing quietly: stdout goes to the null device, so the interpreter's last flush of
    what is still buffered cannot print `Exception ignored ... BrokenPipeError` either."""
    import os

    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (AttributeError, OSError, ValueError):
        pass
    return CLOSED_PIPE


def _main(argv: list[str] | None = None) -> int:
    from megazoo.core.verbosity import split_flags, verbosity

    argv = list(sys.argv[1:] if argv is None else argv)
    # -q/--quiet and -v/--verbose: every command takes them, before or after its own arguments
    # (core/verbosity.py); an `eval lm-eval` command line after its action is lm-eval's own
    try:
        argv, chosen = split_flags(argv, keep_after=_passthrough_start(argv))
    except ValueError as err:
        print(f"megazoo: error: {err}", file=sys.stderr)
        return 2
    with verbosity(chosen):
        return _command(argv)


def _passthrough_start(argv: list[str]) -> int | None:
    """Where a command line that another program parses begins (`megazoo eval lm-eval ARGS`): from
    there on, -q/-v are that program's. The module is imported only when its action is one of them."""
    from megazoo.core.verbosity import FLAGS

    words = [w for w in argv if w not in FLAGS]
    if len(words) < 2 or words[0] not in COMMANDS:
        return None
    module = importlib.import_module(COMMANDS[words[0]][0])
    if words[1] not in getattr(module, "PASSTHROUGH", ()):
        return None
    return argv.index(words[1]) + 1


def _command(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(_top_help())
        return 0
    if argv[0] in ("-V", "--version"):
        from megazoo import __version__

        print(f"megazoo {__version__}")
        return 0
    name = argv[0]
    if name not in COMMANDS:
        import difflib

        close = difflib.get_close_matches(name, COMMANDS, n=1)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        print(f"megazoo: error: unknown command `{name}`{hint} (commands: {', '.join(COMMANDS)}; "
              "`megazoo --help` says what each does)", file=sys.stderr)
        return 2
    module_name, help_ = COMMANDS[name]
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(prog=f"megazoo {name}", description=help_)
    module.add_arguments(parser)
    if argv[1:2] and argv[1] in getattr(module, "PASSTHROUGH", ()):
        # a subcommand that hands its arguments to another program's parser (eval lm-eval): argparse's
        # REMAINDER would refuse its options (`--model ...`) as unrecognized
        args = argparse.Namespace(action=argv[1], rest=argv[2:])
    else:
        args = parser.parse_args(argv[1:])
    try:
        from megazoo.core.fs import enforce

        enforce(parser, args)  # the output policy (core/fs/policy.py), before the command does anything
        result = module.run(args)
    except KeyboardInterrupt:
        print(f"\n{_prog(argv)}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - the one boundary: known errors become one line
        from megazoo.core.train.user_errors import classify, debug

        if isinstance(err, BrokenPipeError) and _stdout_closed():
            raise  # main() ends quietly: the reader of our output has gone, nothing failed
        known = None if debug() else classify(err)
        if known is None:
            if debug():
                from megazoo.core.train.user_errors import reveal_causes

                reveal_causes(err)  # MEGAZOO_DEBUG=1: with the errors it was raised from
            raise  # a bug: its traceback is what a report needs
        code, message = known
        print(f"{_prog(argv)}: error: {message}", file=sys.stderr)
        return code
    return int(result or 0)


def _prog(argv: list[str]) -> str:
    """The command as the user typed it, for messages: `megazoo eval task`, `megazoo task race evaluate`."""
    words = {"eval": 1, "zoo": 1, "tokenizer": 1, "task": 2}.get(argv[0], 0)
    sub = [w for w in argv[1:1 + words] if w.replace("-", "").replace("_", "").isalnum()]
    return " ".join(["megazoo", argv[0], *sub[:words]])


if __name__ == "__main__":
    raise SystemExit(main())
