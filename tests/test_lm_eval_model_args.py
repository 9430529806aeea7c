"""The megazoo lm-eval backend takes lm-eval's model arguments as its users write them for `--model hf`:
`pretrained=` (with `checkpoint=` as an alias), `dtype`, `device` and `batch_size` (a number or the
string lm-eval passes) are honoured on a tiny checkpoint; lm-eval's own --batch_size/--device do not
collide with the model_args forms; every bad argument is one line naming it."""

import logging
import subprocess
import sys

import pytest
import torch

from megazoo.core.data.tokenizers import _gpt2_dir
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.gather import full_state
from megazoo.eval.lm_eval_adapter import BackendConfig, MegazooLMEval, ModelArgsError, parse_device
from megazoo.zoo.gpt import GPTModel
from megazoo.zoo.gpt.config import llama_layout
from megazoo.zoo.io import save_model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny Llama-layout decoder with the GPT-2 tokenizer, stored in fp32 and in bf16."""
    cfg = llama_layout(num_layers=2, hidden_size=32, num_heads=4, num_kv_heads=2, ffn_hidden_size=48,
                       vocab_size=50257, seq_length=64)
    state = full_state(GPTModel(cfg).initialize(0).eval(), ParallelContext.single())
    tmp = tmp_path_factory.mktemp("tiny_lm_eval")
    fp32 = save_model(tmp / "tiny-fp32", "llama", cfg, state, tokenizer=_gpt2_dir())
    bf16 = save_model(tmp / "tiny-bf16", "llama", cfg, {k: v.to(torch.bfloat16) for k, v in state.items()},
                      tokenizer=_gpt2_dir())
    return fp32, bf16


def param_dtype(backend: MegazooLMEval) -> torch.dtype:
    return next(backend.lm.model.parameters()).dtype


def test_model_args_as_lm_eval_passes_them(tiny):
    fp32, bf16 = tiny
    # the command line: model_args parsed to a dict, plus lm-eval's own defaults (batch 1, device cuda:0)
    made = MegazooLMEval.create_from_arg_obj({"pretrained": str(fp32), "dtype": "bfloat16", "batch_size": "8"},
                                             {"batch_size": 1, "max_batch_size": None, "device": "cpu"})
    assert made.batch_size == 8 and param_dtype(made) == torch.bfloat16 and str(made.device) == "cpu"
    info = made.get_model_info()
    assert info["pretrained"] == str(fp32) and info["model_dtype"] == "torch.bfloat16"
    assert info["model_num_parameters"] == sum(p.numel() for p in made.lm.model.parameters())
    # simple_evaluate's string form, the old checkpoint= alias, lm-eval's --batch_size when model_args has none
    made = MegazooLMEval.create_from_arg_string(f"checkpoint={fp32},dtype=float16", {"batch_size": 4})
    assert made.batch_size == 4 and param_dtype(made) == torch.float16
    assert param_dtype(MegazooLMEval.create_from_arg_string(f"pretrained={fp32}")) == torch.float32
    assert param_dtype(MegazooLMEval.create_from_arg_string(f"pretrained={bf16},dtype=auto")) == torch.bfloat16
    assert param_dtype(MegazooLMEval.create_from_arg_string(f"pretrained={fp32},dtype=auto")) == torch.float32


def test_scores_follow_the_dtype(tiny):
    fp32, _ = tiny
    requests = [("The history of", " Python"), ("Hello", " world")]
    full = MegazooLMEval.create_from_arg_string(f"pretrained={fp32},dtype=float32").lm
    half = MegazooLMEval.create_from_arg_string(f"pretrained={fp32},dtype=bfloat16").lm
    from megazoo.eval.scoring import loglikelihood

    a, b = loglikelihood(full, requests), loglikelihood(half, requests)
    assert all(abs(x[0] - y[0]) < 0.5 for x, y in zip(a, b))  # the same model ...
    assert any(x[0] != y[0] for x, y in zip(a, b))  # ... computed in another precision


@pytest.mark.parametrize("args, message", [
    ({"pretrained": "P", "temperature": 0.5}, "--model_args temperature=0.5: not a megazoo backend argument"),
    ({}, "needs --model_args pretrained=DIR"),
    ({"pretrained": "A", "checkpoint": "B"}, "checkpoint= is an alias of pretrained=; give one of them"),
    ({"pretrained": "P", "dtype": "int8"}, "--model_args dtype=int8: use float32, bfloat16, float16 or auto"),
    ({"pretrained": "P", "batch_size": "auto"}, "batch_size=auto: the megazoo backend does not search"),
    ({"pretrained": "P", "batch_size": "auto:4"}, "batch_size=auto:4: the megazoo backend does not search"),
    ({"pretrained": "P", "batch_size": "eight"}, "--model_args batch_size=eight: expected a whole number"),
    ({"pretrained": "P", "batch_size": 0}, "--model_args batch_size=0: must be at least 1"),
    ({"pretrained": "P", "max_length": "x"}, "--model_args max_length=x: expected a whole number"),
    ({"pretrained": "P", "device": "gpu7"}, "device gpu7: not a torch device; use cpu, cuda, cuda:N or mps"),
])
def test_bad_model_args_are_one_line(args, message):
    with pytest.raises(ModelArgsError) as err:
        BackendConfig.from_args(args)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the fallback is for machines without CUDA")
def test_cuda_without_a_gpu_falls_back_to_the_cpu_and_says_so(caplog):
    with caplog.at_level(logging.WARNING):
        assert parse_device("cuda:0") == "cpu"
    assert "torch sees no CUDA device: scoring on cpu" in caplog.text


def test_the_lm_eval_command_names_a_bad_model_arg(tiny, tmp_path):
    (tmp_path / "d.jsonl").write_text('{"context": "a b", "target": " c"}\n')
    (tmp_path / "t.yaml").write_text(f"task: tiny_args\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
                                     f"    test: {tmp_path / 'd.jsonl'}\ntest_split: test\noutput_type: loglikelihood\n"
                                     "doc_to_text: '{{context}}'\ndoc_to_target: '{{target}}'\n")
    done = subprocess.run([sys.executable, "-m", "lm_eval", "--model", "megazoo", "--model_args",
                           f"pretrained={tiny[0]},dtyp=bfloat16", "--tasks", "tiny_args", "--include_path",
                           str(tmp_path), "--device", "cpu"], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "ModelArgsError: --model_args dtyp=bfloat16: not a megazoo backend argument" in done.stderr, done.stderr[-2000:]


def test_megazoo_eval_lm_eval_names_a_bad_model_arg_in_one_line(tiny):
    done = subprocess.run([sys.executable, "-m", "megazoo", "eval", "lm-eval", "--model", "megazoo", "--model_args",
                           f"pretrained={tiny[0]},batch_size=auto", "--tasks", "lambada_openai", "--device", "cpu"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert errors == ["megazoo eval lm-eval: error: batch_size=auto: the megazoo backend does not search for a batch "
                      "size (nor use max_batch_size); give a number, e.g. batch_size=8"], done.stderr[-2000:]
    assert "Traceback" not in done.stderr
