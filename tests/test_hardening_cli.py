"""Issue 17, points 7-12 through the command line (in this process, `megazoo.cli.main`): a given
data.path wins over a recipe's synthetic tokens and the summary says what was trained on; `eval
task` works on GPT-2-tokenizer checkpoints and refuses an unknown task before loading; every
numeric flag is checked; `task race evaluate` says what a model without the RACE head is; one
error boundary turns known errors into one line (exit 2 or 1, 130 on Ctrl-C, a bug keeps its
traceback); generate, eval data and suites, plan --plot and model cards fail in one line.
Each refusal is checked for its exit code, its one line, and that the inputs are unchanged."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import shutil
from pathlib import Path

import pytest

from megazoo.cli import main

TEXT = "\n".join(f"The module number {i} reads a file, checks each line and writes {i % 7} results back."
                 for i in range(240))


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def one_error(err: str) -> str:
    """The one message line (argparse's usage lines may come before it); no traceback."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("megazoo"), err
    assert sum(line.startswith("megazoo") and "error" in line for line in lines[:-1]) == 0, err
    return lines[-1]


def digest(folder: Path) -> dict[str, str]:
    """Every file under `folder` -> its sha256: the proof that nothing was changed or lost."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A tiny GPT folder whose GPT-2 tokenizer folder has no special-token settings (vocab.json,
    merges.txt, tokenizer.json only: eos_token is unset), and a preprocessed text corpus."""
    from megazoo.core.data.tokenizers import _gpt2_dir
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.core.parallel.gather import full_state
    from megazoo.zoo.gpt import GPTModel
    from megazoo.zoo.gpt.config import gpt2_layout
    from megazoo.zoo.io import save_model

    root = tmp_path_factory.mktemp("hardening")
    bare_tok = root / "gpt2-bare"
    bare_tok.mkdir()
    for name in ("vocab.json", "merges.txt", "tokenizer.json"):
        shutil.copy(_gpt2_dir() / name, bare_tok / name)
    cfg = gpt2_layout(num_layers=1, hidden_size=32, num_heads=2, vocab_size=50257, seq_length=32)
    save_model(root / "gpt", "gpt", cfg, full_state(GPTModel(cfg).initialize(0), ParallelContext.single()),
               tokenizer=bare_tok)
    (root / "corpus.txt").write_text(TEXT + "\n")
    code, _, err = run_cli("preprocess", "--input", str(root / "corpus.txt"), "--output-prefix", str(root / "corpus"),
                           "--append-eod", "--no-progress")
    assert code == 0, err
    (root / "lambada.jsonl").write_text("".join(json.dumps({"text": line}) + "\n" for line in TEXT.splitlines()[:3]))
    return root


@pytest.fixture(scope="module")
def text_run(work):
    """Point 7: gpt-tiny (data.synthetic: true) with data.path given trains on that data."""
    run = work / "run"
    code, out, err = run_cli("train", "gpt-tiny", "--set", f"data.path={work / 'corpus'}", "data.split=50,50,0",
                             "model.vocab_size=50304", "train.steps=1", "train.micro_batch=2", "train.global_batch=2",
                             "train.eval_iters=1", f"log.dir={run}", "log.plot=false", "log.progress=false")
    assert code == 0, err
    return run, out


# ---- 7. a given data.path wins; the summary says what data was used -------------------------------

def test_data_path_wins_over_synthetic_and_the_summary_says_so(work, text_run):
    from megazoo.core.train.config import RunConfig

    assert RunConfig.load("gpt-tiny").data.synthetic is True
    assert "synthetic random tokens" in RunConfig.load("gpt-tiny").describe_data()
    run, out = text_run
    assert f"data         {work / 'corpus'} (tokenizer gpt2)" in out
    assert f"{work / 'corpus'} (tokenizer gpt2)" in (run / "summary.txt").read_text()
    import yaml

    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["data"]["synthetic"] is False and saved["data"]["path"] == str(work / "corpus")


# ---- 8. eval task on GPT-2-tokenizer checkpoints; unknown task before loading ----------------------

def test_eval_task_reads_gpt2_tokenizer_checkpoints(work, text_run):
    for checkpoint in (work / "gpt", text_run[0] / "checkpoints"):  # a model folder, a training checkpoint
        code, out, err = run_cli("eval", "task", "lambada", "--data", str(work / "lambada.jsonl"),
                                 "--checkpoint", str(checkpoint))
        assert code == 0, err
        assert json.loads(out)["n"] == 3


def test_unknown_task_is_refused_before_the_model_is_loaded(work, monkeypatch):
    import megazoo.eval.leaderboard as board

    monkeypatch.setattr(board, "_load_model", lambda entry: pytest.fail("the model was loaded"))
    code, _, err = run_cli("eval", "task", "lambda", "--data", str(work / "lambada.jsonl"),
                           "--checkpoint", str(work / "gpt"))
    assert code == 2 and "unknown task 'lambda'" in one_error(err)
    code, _, err = run_cli("eval", "task", "lambada", "--data", str(work / "nowhere.jsonl"),
                           "--checkpoint", str(work / "gpt"))
    assert code == 2 and "--data" in one_error(err) and "nowhere.jsonl: no such file" in err


# ---- 9. every numeric flag is checked ------------------------------------------------------------

@pytest.mark.parametrize("argv,flag", [
    (("train", "gpt-tiny", "--nproc", "0"), "--nproc"),
    (("quickstart", "--steps", "0"), "--steps"),  # 0 was the recipe's 300 steps on 4 ranks
    (("generate", "{gpt}", "--prompt", "a", "--top-p", "5"), "--top-p"),
    (("generate", "{gpt}", "--prompt", "a", "--top-p", "0"), "--top-p"),
    (("generate", "{gpt}", "--prompt", "a", "--temperature", "0"), "--temperature"),
    (("generate", "{gpt}", "--prompt", "a", "--temperature", "-1"), "--temperature"),
    (("generate", "{gpt}", "--prompt", "a", "--top-k", "-1"), "--top-k"),
    (("generate", "{gpt}", "--prompt", "a", "--repetition-penalty", "0"), "--repetition-penalty"),
    (("plan", "gpt-345m", "--gpus", "8", "--seq-length", "-5"), "--seq-length"),
    (("plan", "gpt-345m", "--gpus", "8", "--seq-length", "0"), "--seq-length"),
    (("plan", "gpt-345m", "--gpus", "8", "--nvlink-gb-s", "-1"), "--nvlink-gb-s"),
    (("plan", "gpt-345m", "--gpus", "8", "--network-gb-s", "0"), "--network-gb-s"),
    (("plan", "gpt-345m", "--gpus", "8", "--global-batch", "0"), "--global-batch"),
    (("plan", "gpt-345m", "--gpus", "0"), "--gpus"),
    (("eval", "task", "lambada", "--data", "{lambada}", "--checkpoint", "{gpt}", "--batch-size", "0"), "--batch-size"),
    (("eval", "task", "lambada", "--data", "{lambada}", "--checkpoint", "{gpt}", "--limit", "0"), "--limit"),
    (("preprocess", "--input", "{lambada}", "--output-prefix", "{out}", "--vocab-extra-ids", "-1"), "--vocab-extra-ids"),
    (("task", "race", "data", "{out}", "--articles", "0"), "--articles"),
    (("task", "race", "evaluate", "--data", "{out}", "--checkpoint", "{gpt}", "--out", "{out}", "--batch", "0"),
     "--batch"),
])
def test_numeric_flags_are_checked(work, argv, flag, monkeypatch):
    monkeypatch.chdir(work)
    names = {"gpt": str(work / "gpt"), "lambada": str(work / "lambada.jsonl"), "out": str(work / "flag-out")}
    before = digest(work)
    code, out, err = run_cli(*(part.format(**names) for part in argv))
    assert code == 2 and out == ""
    assert flag in one_error(err)
    assert digest(work) == before and not (work / "flag-out").exists() and not (work / "runs").exists()


# ---- 10. task race evaluate on a model without the RACE head --------------------------------------

def test_race_evaluate_says_what_the_checkpoint_is(work, text_run, tmp_path):
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.core.parallel.gather import full_state
    from megazoo.zoo.bert import TINY, BertModel
    from megazoo.zoo.io import save_model

    cfg = TINY["bert-tiny"]()
    imported = save_model(tmp_path / "bert", "bert", cfg, full_state(BertModel(cfg).initialize(0),
                                                                     ParallelContext.single()))
    before = digest(imported)
    for checkpoint, what in ((imported, "an imported (import-hf) model folder, not a race training checkpoint "
                                        "(it has no race head)"),
                             (text_run[0], "not a race checkpoint (its task is None: a gpt pretraining checkpoint)")):
        code, _, err = run_cli("task", "race", "evaluate", "--data", str(work), "--checkpoint", str(checkpoint),
                               "--out", str(tmp_path / "r.json"))
        line = one_error(err)
        assert code == 2 and what in line and "megazoo task race train RECIPE --set train.init_from=" in line
    assert digest(imported) == before and not (tmp_path / "r.json").exists()


# ---- 11. one error boundary ----------------------------------------------------------------------

@pytest.mark.parametrize("error,code,message", [
    (lambda: __import__("megazoo.core.checkpoint", fromlist=["CheckpointError"]).CheckpointError(
        "runs/x/checkpoints/iter_0000004: shard __0_0.distcp is 12 bytes, meta.json says 40"), 2, "shard __0_0.distcp"),
    (lambda: OSError(errno.ENOSPC, "No space left on device", "runs/x/checkpoints"), 1,
     "runs/x/checkpoints: no space left on device"),
    (lambda: PermissionError(errno.EACCES, "Permission denied", "runs/x/metrics.jsonl"), 1,
     "runs/x/metrics.jsonl: permission denied"),
])
def test_a_rank_error_is_one_line(tmp_path, monkeypatch, error, code, message):
    import megazoo.core.train.trainer as trainer

    def fail(cfg):
        raise error()

    monkeypatch.setattr(trainer, "train", fail)
    got, _, err = run_cli("train", "gpt-tiny", "--set", f"log.dir={tmp_path / 'run'}")
    line = one_error(err)
    assert got == code and line.startswith("megazoo train: error: ") and message in line


def test_ctrl_c_exits_130_naming_the_run_dir(tmp_path, monkeypatch):
    import megazoo.core.train.trainer as trainer

    def interrupted(cfg):
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer, "train", interrupted)
    code, _, err = run_cli("train", "gpt-tiny", "--set", f"log.dir={tmp_path / 'run'}")
    assert code == 130 and "Traceback" not in err
    assert f"megazoo train: interrupted. The partial run is in {tmp_path / 'run'}" in err


def test_ctrl_c_in_a_task_stage_names_the_run_dir_too(tmp_path, capsys):
    """A task's finetune stage calls run_in_rank without the run directory: the recipe command
    that validated the config tells it."""
    import argparse

    from megazoo.core.train.commands import run_in_rank, run_recipe_command
    from megazoo.core.train.config import RunConfig

    def stop(rank):
        raise KeyboardInterrupt

    args = argparse.Namespace(recipe="gpt-tiny", overrides=[[f"log.dir={tmp_path / 'stage'}"]], nproc=None)
    code = run_recipe_command(args, "megazoo task x finetune", RunConfig.load,
                              lambda cfg: run_in_rank("megazoo task x finetune", stop))
    assert code == 130
    assert f"megazoo task x finetune: interrupted. The partial run is in {tmp_path / 'stage'}" in capsys.readouterr().err


def test_the_boundary_of_every_command(monkeypatch):
    """Known errors from any command: one line, 2 (a mistake) or 1 (the machine); a bug keeps its
    traceback; MEGAZOO_DEBUG=1 shows every traceback."""
    import megazoo.zoo.cli_zoo as zoo

    def raising(err):
        def run(args):
            raise err
        return run

    cases = [(json.JSONDecodeError("Expecting value", "{", 1), 2, "Expecting value: line 1 column 2 (char 1)"),
             (_yaml_error(), 2, "cards/x.yaml:4: not valid YAML (expected the node content, but found '<stream end>')"),
             (FileNotFoundError(errno.ENOENT, "No such file or directory", "data/x.jsonl"), 2,
              "data/x.jsonl: no such file or directory"),
             (OSError(errno.EIO, "Input/output error", "data/x.bin"), 1, "data/x.bin: input/output error"),
             (ValueError("line one\nline two"), 2, "line one; line two")]
    for err, code, message in cases:
        monkeypatch.setattr(zoo, "run", raising(err))
        got, _, text = run_cli("zoo", "list")
        assert got == code and one_error(text) == f"megazoo zoo list: error: {message}"
    monkeypatch.setattr(zoo, "run", raising(KeyboardInterrupt()))
    assert run_cli("zoo", "list")[0] == 130
    monkeypatch.setattr(zoo, "run", raising(RuntimeError("a bug")))
    with pytest.raises(RuntimeError, match="a bug"):
        run_cli("zoo", "list")
    monkeypatch.setenv("MEGAZOO_DEBUG", "1")
    monkeypatch.setattr(zoo, "run", raising(ValueError("shown with its traceback")))
    with pytest.raises(ValueError, match="shown with its traceback"):
        run_cli("zoo", "list")


def test_eval_lm_eval_hands_its_options_to_lm_eval(monkeypatch):
    """`megazoo eval lm-eval --model megazoo ...`: argparse's REMAINDER refused `--model` as
    unrecognized; the options now reach lm-eval's own parser untouched (found by the fuzz test)."""
    import sys
    import types

    seen = {}
    fake = types.ModuleType("lm_eval.__main__")
    fake.cli_evaluate = lambda: seen.update(argv=list(sys.argv))
    monkeypatch.setitem(sys.modules, "lm_eval.__main__", fake)
    monkeypatch.setitem(sys.modules, "megazoo.eval.lm_eval_adapter", types.ModuleType("megazoo.eval.lm_eval_adapter"))
    monkeypatch.setattr(sys, "argv", ["megazoo"])
    argv = ["--model", "megazoo", "--model_args", "checkpoint=ckpt", "--tasks", "lambada_openai"]
    assert run_cli("eval", "lm-eval", *argv)[0] == 0
    assert seen["argv"] == ["lm_eval", *argv]


def _yaml_error():
    import yaml

    try:
        yaml.safe_load(io.StringIO("a: 1\nb: 2\nc: [\n"))
    except yaml.YAMLError as e:
        e.problem_mark.name = "cards/x.yaml"
        return e
    raise AssertionError("the YAML parsed")


# ---- 12. generate, eval data and suites, plan --plot, model cards ---------------------------------

def test_generate_refuses_empty_prompts_and_prompts_past_the_context(work):
    for prompt in ("", "   "):
        code, _, err = run_cli("generate", str(work / "gpt"), "--prompt", "fine", "--prompt", prompt)
        assert code == 2 and one_error(err) == "megazoo generate: error: --prompt 2 is empty; give the text to continue"
    code, _, err = run_cli("generate", str(work / "gpt"), "--prompt", "one two three", "--max-new-tokens", "40")
    line = one_error(err)
    assert code == 2 and "43 tokens in all, more than the model's context of 32" in line
    assert "at most 29 new tokens" in line
    code, out, err = run_cli("generate", str(work / "gpt"), "--prompt", "one two three", "--max-new-tokens", "29")
    assert code == 0, err
    code, out, err = run_cli("generate", str(work / "gpt"), "--prompt", "one two three", "--json")
    assert code == 0 and "note: 29 new tokens, all the model's context of 32 leaves" in err  # the default, capped
    assert len(json.loads(out)["tokens"]) <= 29


def test_malformed_eval_data_and_suites(work, tmp_path):
    bad = tmp_path / "lambada.jsonl"
    bad.write_text('{"text": "all fine"}\n{"text": \n')
    before = digest(tmp_path)
    code, _, err = run_cli("eval", "task", "lambada", "--data", str(bad), "--checkpoint", str(work / "gpt"))
    assert code == 2 and f"{bad}, line 2: not valid JSON" in one_error(err)
    suite = tmp_path / "suite.yaml"
    for text, message in (("models:\n  - {name: a, checkpoint: x\ntasks: []\n", f"{suite}:3: not valid YAML"),
                          ("models:\n  - {name: a, checkpoint: x}\n", "`tasks` must be a non-empty list"),
                          ("- a\n", "a suite is a YAML mapping")):
        suite.write_text(text)
        code, _, err = run_cli("eval", "leaderboard", str(suite))
        assert code == 2 and message in one_error(err) and one_error(err).startswith("megazoo eval leaderboard: error:")
    suite.unlink()
    assert digest(tmp_path) == before


def test_plan_plot_into_a_missing_folder_fails_before_planning(tmp_path):
    code, out, err = run_cli("plan", "gpt-345m", "--gpus", "8", "--plot", str(tmp_path / "no" / "plan.png"))
    assert code == 2 and out == ""
    assert one_error(err) == (f"megazoo plan: error: --plot {tmp_path / 'no' / 'plan.png'}: the folder "
                              f"{tmp_path / 'no'} does not exist; create it first")
    assert list(tmp_path.iterdir()) == []


def test_a_model_card_with_a_yaml_error(tmp_path):
    card = tmp_path / "card.yaml"
    card.write_text("name: mine\narch: gpt\nmodel:\n  num_layers: [2\n")
    for argv in (("zoo", "show", str(card)), ("plan", str(card), "--gpus", "8")):
        code, _, err = run_cli(*argv)
        line = one_error(err)
        assert code == 2 and f"{card}:5: not valid YAML" in line, line
