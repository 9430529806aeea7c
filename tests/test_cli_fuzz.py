"""Every command against generated bad arguments and bad files, as a careless or hostile user would
type them: each case must end in exit code 2 (the user's mistake) or 1 (a runtime failure), with
one message line from megazoo (argparse's usage lines may come before it) and no traceback, within
a time bound (pytest-timeout). Cases run in this process through `megazoo.cli.main` (a subprocess
costs seconds of torch import each); none gets as far as training, generating or writing a model.

The cases are built from a few argument templates per command: each path slot gets every kind of
bad file (missing, empty, binary, malformed YAML/JSON, a folder where a file belongs and back, a
model folder that lies), each numeric flag every kind of bad number.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from megazoo.cli import main

# ---- bad things to put in a slot ------------------------------------------------------------------
BAD_FILES = ("{missing}", "{empty_file}", "{binary}", "{bad_yaml}", "{yaml_list}", "{bad_json}", "{empty_dir}")
BAD_MODEL_FOLDERS = ("{missing}", "{empty_file}", "{empty_dir}", "{hf_bad_json}", "{hf_unknown}", "{mz_bad_yaml}",
                     "{mz_no_arch}", "{mz_truncated}", "{ckpt_truncated}", "{ckpt_bad_latest}")
BAD_INTS = ("0", "-1", "abc", "1.5", "")
BAD_FLOATS = ("0", "-1", "abc", "nan", "inf")


def _files(tmp) -> dict[str, str]:
    """The bad files and folders, created once; name -> path."""
    (tmp / "empty_file.txt").write_text("")
    (tmp / "binary.bin").write_bytes(b"\xff\xfe\x00\x80garbage\x00" * 8)
    (tmp / "bad.yaml").write_text("name: x\nmodel: {num_layers: [\n")
    (tmp / "list.yaml").write_text("- a\n- b\n")
    (tmp / "bad.json").write_text('{"text": "unterminated\n')
    (tmp / "empty_dir").mkdir()
    for name, config in (("hf_bad_json", "{not json"), ("hf_unknown", json.dumps({"model_type": "no-such-model"}))):
        (tmp / name).mkdir()
        (tmp / name / "config.json").write_text(config)
    (tmp / "mz_bad_yaml").mkdir()
    (tmp / "mz_bad_yaml" / "model.yaml").write_text("arch: gpt\nconfig: {a: [\n")
    (tmp / "mz_no_arch").mkdir()
    (tmp / "mz_no_arch" / "model.yaml").write_text("format: megazoo-model/1\n")
    (tmp / "mz_truncated").mkdir()
    (tmp / "mz_truncated" / "model.yaml").write_text(
        "format: megazoo-model/1\narch: gpt\nconfig: {num_layers: 1, hidden_size: 32, num_heads: 2, vocab_size: 64, "
        "seq_length: 16}\n")
    (tmp / "mz_truncated" / "model.safetensors").write_bytes(b"\x40\x00\x00\x00\x00\x00\x00\x00{\"a\":")
    it = tmp / "ckpt_truncated" / "iter_0000001"
    it.mkdir(parents=True)
    (it / "meta.json").write_text('{"complete": true, "files": {')
    (tmp / "ckpt_truncated" / "latest").write_text("1")
    (tmp / "ckpt_bad_latest").mkdir()
    (tmp / "ckpt_bad_latest" / "latest").write_text("../../etc")
    (tmp / "suite_no_tasks.yaml").write_text("models:\n  - {name: a, checkpoint: x}\n")
    (tmp / "suite_bad_model.yaml").write_text("models:\n  - {checkpoint: x}\ntasks:\n  - {name: lambada, path: y}\n")
    (tmp / "card_missing.yaml").write_text("name: c\narch: gpt\nmodel: {num_layers: 2}\n")
    (tmp / "card_bad_arch.yaml").write_text("name: c\narch: rnn\nsource: s\nmodel: {}\n")
    (tmp / "recipe_bad_key.yaml").write_text("model: {arch: gpt}\ntrain: {stpes: 3}\n")
    (tmp / "recipe_bad_type.yaml").write_text("train: {steps: many}\n")
    (tmp / "recipe_scalar.yaml").write_text("just a string\n")
    (tmp / "out").mkdir()
    names = {"missing": tmp / "no" / "such", "empty_file": tmp / "empty_file.txt", "binary": tmp / "binary.bin",
             "bad_yaml": tmp / "bad.yaml", "yaml_list": tmp / "list.yaml", "bad_json": tmp / "bad.json",
             "out": tmp / "out"}
    for p in tmp.iterdir():
        names.setdefault(p.name.split(".")[0], p)
    return {k: str(v) for k, v in names.items()}


def _cases() -> list[tuple[str, ...]]:
    cases: list[tuple[str, ...]] = []
    add = cases.append
    # the top level
    for word in ("trian", "evaluate", "--versoin", "gen", "-x", "task-race"):
        add((word,))
    # train and the recipe-driven task stage (same loader): recipe files and --set values
    for cmd in (("train",), ("task", "race", "train")):
        for recipe in BAD_FILES + ("{recipe_bad_key}", "{recipe_bad_type}", "{recipe_scalar}", "no-such-recipe"):
            add((*cmd, recipe))
    for override in ("foo=1", "train.steps=0", "train.steps=-4", "train.steps=abc", "train.lr=fast",
                     "train.micro_batch=0", "train.global_batch=7", "parallel.tp=3", "parallel.pp=0",
                     "precision.dtype=fp8", "recompute=sometimes", "train.decay=wiggly", "train.betas=[2,3]",
                     "checkpoint.keep=0", "train.init_from={missing}", "train.init_from={empty_file}",
                     "model.arch=rnn", "model=3", "task=5", "nokey", "train.min_lr=1", "train.warmup_fraction=2",
                     "checkpoint.best_mode=up", "train.trainable=[", "name=../../outside"):
        add(("train", "gpt-tiny", "--set", override))
    for value in BAD_INTS:
        add(("train", "gpt-tiny", "--nproc", value))
    # eval: task options, files, models; leaderboard suites; lm-eval is lm-eval's own parser
    for name in ("nosuch", "LAMBADA", ""):
        add(("eval", "task", name, "--data", "{empty_file}", "--checkpoint", "{missing}"))
    for flag, values in (("--num-fewshot", ("-1", "abc")), ("--batch-size", BAD_INTS), ("--limit", BAD_INTS),
                         ("--stride", ("0", "-3", "abc")), ("--lambada-mode", ("loose",)), ("--seed", ("x",))):
        for value in values:
            add(("eval", "task", "lambada", "--data", "{empty_file}", "--checkpoint", "{mz_truncated}", flag, value))
    add(("eval", "task", "lambada", "--data", "{empty_file}", "--checkpoint", "{gen}", "--stride", "8"))
    add(("eval", "task", "wikitext103_megatron", "--data", "{empty_file}", "--checkpoint", "{gen}",
         "--num-fewshot", "2"))
    for old in ("race", "wikitext"):  # renamed (issue 41): one line naming the new name
        add(("eval", "task", old, "--data", "{empty_file}", "--checkpoint", "{gen}"))
    for data in BAD_FILES:
        add(("eval", "task", "lambada", "--data", data, "--checkpoint", "{gen}"))
    for task in ("boolq", "piqa", "hellaswag", "winogrande", "race_gpt3", "anli", "hans", "wic",
                 "wikitext103_megatron"):
        add(("eval", "task", task, "--data", "{bad_json}", "--checkpoint", "{gen}"))
        add(("eval", "task", task, "--data", "{binary}", "--checkpoint", "{gen}"))
    for model in BAD_MODEL_FOLDERS:
        add(("eval", "task", "lambada", "--data", "{bad_json}", "--checkpoint", model))
    add(("eval", "task", "lambada", "--data", "{bad_json}"))
    add(("eval", "task", "lambada", "--data", "{bad_json}", "--checkpoint", "{gen}", "--hf", "{gen}"))
    add(("eval",))
    add(("eval", "nosuch"))
    for suite in BAD_FILES + ("{suite_no_tasks}", "{suite_bad_model}"):
        add(("eval", "leaderboard", suite))
    # generate: checkpoints, numbers, prompts
    for model in BAD_MODEL_FOLDERS:
        add(("generate", model, "--prompt", "hello"))
    for flag, values in (("--max-new-tokens", BAD_INTS), ("--temperature", BAD_FLOATS), ("--top-p", BAD_FLOATS + ("5",)),
                         ("--top-k", ("-1", "abc")), ("--repetition-penalty", ("0", "-2", "nan")),
                         ("--tp", BAD_INTS), ("--pp", ("0", "-1", "3")), ("--vpp", ("0", "2")), ("--seed", ("x",)),
                         ("--dtype", ("fp8",))):
        for value in values:
            add(("generate", "{gen}", "--prompt", "hello", "--do-sample", flag, value))
    for prompt in ("", "   ", "hello " * 40):
        add(("generate", "{gen}", "--prompt", prompt))
    add(("generate", "{gen}", "--prompt", "hi", "--max-new-tokens", "1000"))
    add(("generate", "{gen}"))
    # import-hf / export-hf: bad sources, bad destinations
    for src in BAD_MODEL_FOLDERS:
        add(("import-hf", src, "{out}/imported"))
        add(("export-hf", src, "{out}/exported"))
    add(("export-hf", "{gen}", "{out}/exported", "--dtype", "fp7"))
    add(("import-hf", "{hf_unknown}", "{hf_unknown}", "--overwrite"))
    # plan: every numeric flag, cards, plots
    for flag in ("--gpus", "--tp", "--pp", "--vpp", "--micro-batch", "--global-batch", "--seq-length", "--gpus-per-node",
                 "--num-layers", "--hidden-size", "--num-heads", "--top"):
        for value in ("0", "-5", "abc"):
            add(("plan", "gpt-345m", "--gpus", "8", flag, value))
    for flag in ("--nvlink-gb-s", "--network-gb-s"):
        for value in BAD_FLOATS:
            add(("plan", "gpt-345m", "--gpus", "8", flag, value))
    for card in BAD_FILES + ("{card_missing}", "{card_bad_arch}", "no-such-card", "gpt-13b"):
        add(("plan", card, "--gpus", "8"))
        add(("zoo", "show", card))
    for plot in ("{missing}/plan.png", "{empty_dir}", "{empty_file}/x.png"):
        add(("plan", "gpt-345m", "--gpus", "8", "--plot", plot))
    add(("plan", "gpt-345m", "--gpus", "12", "--tp", "8"))
    add(("plan", "gpt-345m", "--gpus", "8", "--gpu", "z100"))
    add(("plan", "gpt-345m"))
    add(("plan", "bert-345m", "--gpus", "8", "--dry-run"))
    add(("zoo", "list", "--bogus"))
    add(("zoo", "describe", "x"))
    # preprocess and tokenizer: inputs and numbers
    for src in ("{missing}", "{binary}", "{empty_dir}"):  # any text file is a valid input
        add(("preprocess", "--input", src, "--output-prefix", "{out}/p", "--no-progress"))
        add(("tokenizer", "train", "--kind", "wordpiece", "--input", src, "--vocab-size", "300", "--out", "{out}/tok"))
    add(("preprocess", "--input", "{bad_json}", "--format", "jsonl", "--output-prefix", "{out}/p", "--no-progress"))
    for flag, value in (("--workers", "0"), ("--workers", "abc"), ("--vocab-extra-ids", "-1"), ("--dtype", "int8")):
        add(("preprocess", "--input", "{bad_json}", "--output-prefix", "{out}/p", flag, value))
    add(("preprocess", "--merge", "{missing}", "--output-prefix", "{out}/m"))
    for flag, value in (("--vocab-size", "0"), ("--vocab-size", "-3"), ("--min-frequency", "-1"), ("--kind", "lstm")):
        args = {"--kind": "bpe", "--vocab-size": "300", flag: value}
        add(("tokenizer", "train", "--input", "{bad_json}", "--out", "{out}/tok2", *sum(map(list, args.items()), [])))
    add(("tokenizer", "train", "--kind", "bpe", "--input", "{bad_json}", "--vocab-size", "300", "--out", "{empty_file}"))
    # embed: models, inputs, numbers
    for model in BAD_MODEL_FOLDERS:
        add(("embed", model, "--input", "{bad_json}", "--out", "{out}/e.npy"))
    for flag, value in (("--batch", "0"), ("--batch", "x"), ("--max-length", "0"), ("--pooling", "max")):
        add(("embed", "{gen}", "--input", "{bad_json}", "--out", "{out}/e.npy", flag, value))
    add(("embed", "{gen}", "--input", "{bad_json}", "--out", "{out}/e.npy"))
    # task: names, stages, the RACE stages' files and numbers
    for rest in (("nosuch",), ("rcae", "evaluate"), ("race", "evalute"), ("race",)):
        add(("task", *rest))
    for model in BAD_MODEL_FOLDERS + ("{gen}",):
        add(("task", "race", "evaluate", "--data", "{empty_dir}", "--checkpoint", model, "--out", "{out}/r.json"))
    for data in BAD_FILES:
        add(("task", "race", "evaluate", "--data", data, "--checkpoint", "{gen}", "--out", "{out}/r.json"))
    add(("task", "race", "evaluate", "--data", "{empty_dir}", "--checkpoint", "{gen}", "--out", "{out}/r.json",
         "--batch", "0"))
    for pred in BAD_FILES:
        add(("task", "race", "ensemble", pred))
    for flag in ("--articles", "--words", "--questions"):
        for value in ("0", "-1", "x"):
            add(("task", "race", "data", "{out}/race", flag, value))
    add(("task", "race", "data", "{empty_file}", "--articles", "2"))
    # quickstart: only arguments that must be refused before anything starts
    for args in (("--steps", "0"), ("--steps", "-1"), ("--steps", "x"), ("--set", "foo=1"),
                 ("--set", "train.micro_batch=0"), ("--bogus",)):
        add(("quickstart", "--out", "{out}/qs", *args))
    return cases


CASES = _cases()


def test_enough_cases():
    assert len(CASES) >= 200, len(CASES)


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    """The bad files, and `gen`: a real tiny GPT folder with GPT-2's tokenizer (seq_length 32)."""
    from megazoo.core.data.tokenizers import _gpt2_dir
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.core.parallel.gather import full_state
    from megazoo.zoo.gpt import GPTModel
    from megazoo.zoo.gpt.config import gpt2_layout
    from megazoo.zoo.io import save_model

    tmp = tmp_path_factory.mktemp("fuzz")
    names = _files(tmp)
    cfg = gpt2_layout(num_layers=1, hidden_size=32, num_heads=2, vocab_size=50257, seq_length=32)
    save_model(tmp / "gen", "gpt", cfg, full_state(GPTModel(cfg).initialize(0), ParallelContext.single()),
               tokenizer=_gpt2_dir())
    names["gen"] = str(tmp / "gen")
    return tmp, names


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """main(argv) in this process: (exit code, stdout, stderr); argparse's SystemExit is the code."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def assert_one_clean_error(code: int, out: str, err: str, argv) -> None:
    """Exit 1 or 2; no traceback; the last line is megazoo's message, and the only one of its kind."""
    assert code in (1, 2), (argv, code, out[-500:], err[-1500:])
    assert "Traceback" not in err and "Traceback" not in out, (argv, err[-3000:])
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("megazoo"), (argv, err[-1500:])
    messages = [line for line in lines if line.startswith("megazoo") and "error" in line]
    assert len(messages) <= 1, (argv, messages)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("template", CASES, ids=lambda t: " ".join(t)[:90] or "(empty)")
def test_bad_input_is_one_line(template, paths, monkeypatch):
    tmp, names = paths
    monkeypatch.chdir(tmp)  # a default run folder (runs/...) would land here, not in the checkout
    monkeypatch.setenv("MEGAZOO_DEBUG", "")
    argv = [part.format(**names) for part in template]
    before = sorted(p.name for p in tmp.iterdir())
    code, out, err = run_cli(argv)
    assert_one_clean_error(code, out, err, argv)
    # nothing the case did not create is gone (the bad inputs are all still there)
    assert set(before) <= {p.name for p in tmp.iterdir()}
