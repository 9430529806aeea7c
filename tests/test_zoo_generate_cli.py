"""`megazoo generate`: a checkpoint with its tokenizer continues prompts, the same text at one
process and at tp=2 x pp=2 (4 local ranks); bad inputs give one clear error each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from megazoo.cli import main
from megazoo.core.data.tokenizers import _gpt2_dir
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.gather import full_state
from megazoo.zoo.bert import TINY as BERT_TINY
from megazoo.zoo.bert import BertModel
from megazoo.zoo.generate import generate
from megazoo.zoo.gpt import GPTModel
from megazoo.zoo.gpt.config import llama_layout
from megazoo.zoo.io import save_model

PROMPTS = ["The history of", "Hello"]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """A tiny Llama-layout decoder over the GPT-2 vocabulary, saved with the GPT-2 tokenizer."""
    cfg = llama_layout(num_layers=4, hidden_size=64, num_heads=4, num_kv_heads=2, ffn_hidden_size=96,
                       vocab_size=50257, seq_length=64)
    model = GPTModel(cfg).initialize(0).eval()
    out = tmp_path_factory.mktemp("gen") / "ckpt"
    save_model(out, "llama", cfg, full_state(model, ParallelContext.single()), tokenizer=_gpt2_dir())
    return out, model


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_generate_one_process_and_tp2_pp2(ckpt, capsys):
    path, model = ckpt
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(_gpt2_dir()))
    want = generate(model, [tok(p)["input_ids"] for p in PROMPTS], 6, eos_token_id=tok.eos_token_id)
    args = [str(path), *sum((["--prompt", p] for p in PROMPTS), []), "--max-new-tokens", "6", "--json"]
    assert main(["generate", *args]) == 0
    captured = capsys.readouterr()
    here = _lines(captured.out)
    assert [r["tokens"] for r in here] == want
    assert [r["prompt"] for r in here] == PROMPTS and all(r["continuation"] for r in here)
    assert "tokens/s" in captured.err
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    four = subprocess.run([sys.executable, "-m", "megazoo", "generate", *args, "--tp", "2", "--pp", "2"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert four.returncode == 0, four.stderr
    assert _lines(four.stdout) == here  # printed once (rank 0), the same tokens
    assert "tp 2 x pp 2" in four.stderr


def test_bad_inputs(ckpt, tmp_path, capsys):
    path, _ = ckpt
    assert main(["generate", str(tmp_path / "nowhere"), "--prompt", "x", "--tp", "2"]) == 2  # no rank started
    assert "nowhere is not a megazoo model checkpoint: no model.yaml" in capsys.readouterr().err
    assert main(["generate", str(path), "--prompt", "x", "--pp", "3"]) == 2
    assert "pp=3 must divide num_layers=4" in capsys.readouterr().err
    cfg = BERT_TINY["bert-tiny"]()
    save_model(tmp_path / "bert", "bert", cfg, full_state(BertModel(cfg).initialize(0), ParallelContext.single()))
    assert main(["generate", str(tmp_path / "bert"), "--prompt", "x"]) == 2
    assert "generation needs a decoder (gpt, llama) or t5" in capsys.readouterr().err
    bare = tmp_path / "bare"
    save_model(bare, "llama", *_state_of(path))
    assert main(["generate", str(bare), "--prompt", "x"]) == 2
    assert "has no tokenizer" in capsys.readouterr().err
    small = tmp_path / "small"  # a 512-token model beside the 50257-token GPT-2 tokenizer (synthetic data)
    cfg = _small_config()
    save_model(small, "gpt", cfg, full_state(GPTModel(cfg).initialize(0), ParallelContext.single()),
               tokenizer=_gpt2_dir())
    assert main(["generate", str(small), "--prompt", "x"]) == 2
    assert "its tokenizer has 50257 tokens but the model only 512" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # argparse's bounds (core/argtypes.py int_in)
        main(["generate", str(path), "--prompt", "x", "--max-new-tokens", "0"])
    assert refused.value.code == 2
    assert "argument --max-new-tokens: must be between 1 and 131072, got 0" in capsys.readouterr().err
    assert main(["generate", str(path), "--prompt", "x", "--vpp", "2"]) == 2
    assert "--vpp 2 needs --pp > 1" in capsys.readouterr().err


def _state_of(path):
    from megazoo.zoo.hf import config_from_dict
    from megazoo.zoo.io import load_model

    arch, cfg, state = load_model(path)
    return config_from_dict(arch, cfg), state


def _small_config():
    from megazoo.zoo.gpt.config import gpt2_layout

    return gpt2_layout(num_layers=2, hidden_size=32, num_heads=4, vocab_size=512, seq_length=32)


@pytest.mark.parametrize("probe, picked", [("faster", torch.bfloat16), ("slower", torch.float32)])
def test_dtype_auto_follows_the_bf16_probe(ckpt, monkeypatch, capsys, probe, picked):
    """--dtype auto: bf16 weights where the machine's bf16 products are faster (the probe's result
    injected), fp32 where slower; the model that generates holds that dtype."""
    from megazoo.zoo import cli_generate

    path, _ = ckpt
    monkeypatch.setenv("MEGAZOO_BF16_PROBE", probe)
    seen = []
    real = cli_generate.load

    def spy(payload, ctx):
        out = real(payload, ctx)
        seen.append(next(out[1].parameters()).dtype)
        return out

    monkeypatch.setattr(cli_generate, "load", spy)
    assert main(["generate", str(path), "--prompt", "Hello", "--max-new-tokens", "2", "--dtype", "auto"]) == 0
    assert seen == [picked]
    assert cli_generate.weights_dtype("fp32", "cpu") is None and cli_generate.weights_dtype("bf16", "cpu") is torch.bfloat16
