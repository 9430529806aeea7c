"""LM scoring is batch-invariant, layout-invariant (TP=2 equals TP=1) and scores what it says."""

import math

import torch

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.launch import spawn
from megazoo.eval.lm import MegazooLM
from megazoo.eval.scoring import generate_until, loglikelihood, loglikelihood_rolling, rolling_windows
from megazoo.zoo.gpt import TINY, GPTModel


class ByteTokenizer:
    """Bytes as ids; 256 is end-of-text. Enough for exact scoring tests."""

    eod = 256

    def encode(self, text):
        return list(text.encode("utf-8"))

    def decode(self, ids):
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


REQUESTS = [("The cat sat on the ", "mat"), ("", "Hello"), ("A long context " * 3, " and more"),
            ("x", "y"), ("Numbers: 1 2 3 ", "4 5"), ("Trailing space ", "word"), ("q", "uite a long one"),
            ("Once upon a time", " there"), ("ab", "c")]
TEXTS = ["short text", "a much longer text " * 6]  # the second needs several windows (max_length 32)


def _lm(ctx, layout="gpt-tiny"):
    model = GPTModel(TINY[layout](), ctx).initialize(3)
    return MegazooLM(model, ByteTokenizer())


GENERATE = [("Once upon a time", {"max_gen_toks": 10}), ("ab", {"until": ["b"], "max_gen_toks": 10}),
            ("A long context " * 3, {"max_gen_toks": 6})]


class Recomputing:
    """The same model seen through the bare LanguageModel protocol: generate_until recomputes the
    whole prefix for each token (no KV cache), the reference for the cached path."""

    def __init__(self, lm):
        self.lm, self.max_length, self.eot_id = lm, lm.max_length, lm.eot_id
        self.encode, self.decode, self.logprobs = lm.encode, lm.decode, lm.logprobs


def scores(tp):
    ctx = ParallelContext.build(ParallelConfig(tp=tp))
    out = {}
    for layout in TINY:
        lm = _lm(ctx, layout)
        out[layout] = (loglikelihood(lm, REQUESTS, batch_size=8), loglikelihood_rolling(lm, TEXTS, batch_size=8),
                       generate_until(lm, GENERATE), generate_until(Recomputing(lm), GENERATE))
    return out


def pipeline_scores(tp, pp):
    """The same scores with the model split into pp stages (and tp slices): every rank gets them."""
    ctx = ParallelContext.build(ParallelConfig(tp=tp, pp=pp))
    out = {}
    for layout in TINY:
        cfg = TINY[layout]()
        per_stage = cfg.num_layers // pp
        start = ctx.pp_rank * per_stage
        stage = GPTModel(cfg, ctx, pre_process=ctx.is_first_stage, post_process=ctx.is_last_stage,
                         layers=(start, start + per_stage)).initialize(3)
        lm = MegazooLM([stage], ByteTokenizer())
        out[layout] = (loglikelihood(lm, REQUESTS, batch_size=8), loglikelihood_rolling(lm, TEXTS, batch_size=8),
                       generate_until(lm, GENERATE))
    return out


def test_batch_size_one_equals_batch_size_eight():
    lm = _lm(ParallelContext.single())
    one = loglikelihood(lm, REQUESTS, batch_size=1)
    eight = loglikelihood(lm, REQUESTS, batch_size=8)
    for (a, ga), (b, gb) in zip(one, eight):
        assert abs(a - b) <= 1e-5 * max(1, abs(a)) and ga == gb
    r1 = loglikelihood_rolling(lm, TEXTS, batch_size=1)
    r8 = loglikelihood_rolling(lm, TEXTS, batch_size=8)
    assert all(abs(a - b) <= 1e-5 * max(1, abs(a)) for a, b in zip(r1, r8))


def test_loglikelihood_is_the_sum_of_token_logprobs():
    lm = _lm(ParallelContext.single())
    ctx_ids, cont_ids = lm.encode("The cat"), lm.encode(" sat")
    ids = torch.tensor([ctx_ids + cont_ids])
    lp = lm.logprobs(ids[:, :-1])[0]
    expected = sum(lp[len(ctx_ids) - 1 + i, t].item() for i, t in enumerate(cont_ids))
    greedy = all(lp[len(ctx_ids) - 1 + i].argmax().item() == t for i, t in enumerate(cont_ids))
    (got, got_greedy), = loglikelihood(lm, [("The cat ", "sat")])  # the space moves to the continuation
    assert math.isclose(got, expected, rel_tol=1e-6) and got_greedy == greedy


def test_rolling_windows_score_every_token_once():
    tokens = list(range(100))
    windows = rolling_windows(tokens, eot_id=-1, max_length=32)
    scored = [t for _, cont in windows for t in cont]
    assert scored == tokens
    for ctx, cont in windows:
        assert len(ctx) + len(cont) - 1 <= 32  # fits the model
    assert windows[0][0] == [-1]
    # lm-eval's disjoint windows: each full window is conditioned on the token before it only
    assert windows[1] == ([31], tokens[32:64])
    assert windows[-1] == (tokens[67:96], tokens[96:])  # the short last one keeps a full input


def test_tp2_equals_tp1():
    ref = scores(1)
    got = spawn(scores, 2, 2, timeout=180)[0]
    for layout in TINY:
        for (a, ga), (b, gb) in zip(ref[layout][0], got[layout][0]):
            assert abs(a - b) <= 1e-5 * max(1, abs(a)), (layout, a, b)
            assert ga == gb
        for a, b in zip(ref[layout][1], got[layout][1]):
            assert abs(a - b) <= 1e-5 * max(1, abs(a)), (layout, a, b)


def test_pipeline_layouts_equal_one_process():
    ref = scores(1)
    for rank, got in enumerate(spawn(pipeline_scores, 4, 2, 2, timeout=240)):  # tp=2 x pp=2
        for layout in TINY:
            for (a, ga), (b, gb) in zip(ref[layout][0], got[layout][0]):
                assert abs(a - b) <= 1e-5 * max(1, abs(a)) and ga == gb, (rank, layout, a, b)
            for a, b in zip(ref[layout][1], got[layout][1]):
                assert abs(a - b) <= 1e-5 * max(1, abs(a)), (rank, layout, a, b)
            assert got[layout][2] == ref[layout][2], (rank, layout)  # KV-cached generation across stages


def test_cached_generation_equals_recomputing_the_prefix():
    ref = scores(1)
    for layout in TINY:
        cached, recomputed = ref[layout][2], ref[layout][3]
        assert cached == recomputed, layout
        assert cached[0] and "b" not in cached[1]


def test_generate_until_stops_at_the_stop_string():
    lm = _lm(ParallelContext.single())
    (free,) = generate_until(lm, [("Hello", {"max_gen_toks": 12})])
    assert 0 < len(lm.encode(free)) <= 12
    stop = free[len(free) // 2] if len(free) > 1 else free
    (cut,) = generate_until(lm, [("Hello", {"until": [stop], "max_gen_toks": 12})])
    assert stop not in cut and free.startswith(cut)
