"""ZeRO-2 and ZeRO-3 (`parallel.shard: grads | full`) through the real trainer, fp32 on gloo: at dp 2
and dp 4, composed with tp 2 + sp, pp 2 (1F1B, the tied embedding across stages), interleaved pp,
cp 2, ep 2 (MoE), full recompute, gradient accumulation, with and without prefetch and overlap, each
equal to the single-process run of the same seed and data: losses, gradient norms and final weights,
to the tolerance measured from the reference's own float noise (tests/noise.py; at least 1e-5)."""

import pytest

from megazoo.core.parallel.launch import spawn
from tests.noise import FLOOR, other_rounding, tolerances
from tests.train_cases import grad_norms, run_cases, tiny

STEPS = ["train.steps=4"]
MODELS = {
    "gpt": [],
    "gpt4": ["model.num_layers=4"],  # interleaving: pp 2 x vpp 2 stages of one layer
    "moe": ["model.moe.num_experts=4", "model.moe.top_k=2", "model.moe.aux_loss=0.01", "train.micro_batch=8"],
}
FULL = "parallel.shard=full"


def cfg(root, name: str, model: str, *layout: str):
    return tiny(f"{root}/{name}", *STEPS, *MODELS[model], *layout)


def _references(root) -> dict:
    runs = run_cases({m: cfg(root, m, m, *([] if m == "moe" else ["train.micro_batch=8"])) for m in MODELS})
    for m, run in runs.items():
        run["grad_norms"] = grad_norms(root / m)
    return runs


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    refs = _references(tmp_path_factory.mktemp("ref"))
    with other_rounding():
        again = _references(tmp_path_factory.mktemp("again"))
    for m in refs:
        refs[m]["tol"] = tolerances({k: refs[m][k] for k in again[m]}, again[m])
    return refs


def _two_rank_cases(root: str) -> dict:
    return run_cases({
        ("grads", "gpt"): cfg(root, "grads", "gpt", "parallel.shard=grads"),
        ("full", "gpt"): cfg(root, "full", "gpt", FULL),
        ("full, no prefetch, no overlap, small buckets", "gpt"): cfg(
            root, "full-sync", "gpt", FULL, "parallel.shard_prefetch=false", "optim.overlap_grad_reduce=false",
            "optim.bucket_size=3000"),
        ("full, full recompute, one micro-batch", "gpt"): cfg(root, "full-rc", "gpt", FULL, "recompute=full",
                                                             "train.micro_batch=4"),
    })


def _four_rank_cases(root: str) -> dict:
    return run_cases({
        ("full dp4", "gpt"): cfg(root, "dp4", "gpt", FULL),
        ("full, tp2 + sp", "gpt"): cfg(root, "tp2", "gpt", FULL, "parallel.tp=2", "parallel.sp=true"),
        ("full, pp2", "gpt"): cfg(root, "pp2", "gpt", FULL, "parallel.pp=2"),
        ("full, pp2 x vpp2", "gpt4"): cfg(root, "vpp", "gpt4", FULL, "parallel.pp=2", "parallel.vpp=2"),
        ("full, cp2", "gpt"): cfg(root, "cp2", "gpt", FULL, "parallel.cp=2"),
        # one micro-batch of 4 per dp rank: the reference's one micro-batch of 8 (load balancing per micro-batch)
        ("full, ep2", "moe"): cfg(root, "ep2", "moe", FULL, "parallel.ep=2", "train.micro_batch=2"),
    })


def check(results: list, references: dict, root) -> None:
    seen = set()
    for rank, per_rank in enumerate(results):
        for (name, model), got in per_rank.items():
            seen.add(name)
            ref = references[model]
            tol = ref["tol"]
            assert len(got["losses"]) == 4
            for step, (a, b) in enumerate(zip(got["losses"], ref["losses"]), 1):
                assert abs(a - b) <= tol["losses"] * max(1.0, abs(b)), f"{name} rank {rank}: step {step}: {a} vs {b}"
            params = dict(got["params"])
            if "head.weight" in params and "head.weight" not in ref["params"]:  # a pp stage's tied copy
                params["embed.weight"] = params.pop("head.weight")
            assert params and set(params) <= set(ref["params"])
            for key, p in params.items():
                err = (p - ref["params"][key]).abs().max().item()
                assert err <= tol["params"], f"{name} rank {rank}: {key} differs by {err:.2e}"
    for per_rank in results[:1]:
        for (name, model) in per_rank:
            run = {"grads": "grads", "full": "full", "full dp4": "dp4", "full, tp2 + sp": "tp2", "full, pp2": "pp2",
                   "full, cp2": "cp2"}.get(name)
            if run:  # the global gradient norm over the shards, clipping active
                norms = grad_norms(root / run)
                ref = references[model]
                assert all(abs(a - b) <= ref["tol"]["grad_norms"] for a, b in zip(norms, ref["grad_norms"])), (name, norms)
    assert seen


def _two_ranks(root: str) -> dict:
    """Every 2-rank run of this file in one spawn (each spawn imports torch again on every rank)."""
    return {"dp2": _two_rank_cases(f"{root}/dp2"), "text": _text_models(f"{root}/text")}


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    root = tmp_path_factory.mktemp("two_ranks")
    return root, spawn(_two_ranks, 2, str(root), timeout=900)


def test_zero2_and_zero3_at_dp2_match_one_process(references, two_ranks):
    root, results = two_ranks
    check([r["dp2"] for r in results], references, root / "dp2")


def test_zero3_composes_with_dp4_tp_sp_pp_vpp_cp_ep(references, tmp_path):
    check(spawn(_four_rank_cases, 4, str(tmp_path), timeout=900), references, tmp_path)


def test_measured_tolerances_stay_tight(references):
    for ref in references.values():
        assert all(FLOOR <= t <= 1e-4 for t in ref["tol"].values()), ref["tol"]


def _text_models(root: str) -> dict:
    from tests.train_cases import text_model
    return run_cases({(recipe, mode): text_model(recipe, f"{root}/{recipe}-{mode}", "train.steps=3",
                                                 f"parallel.shard={mode}")
                      for recipe in ("bert-tiny", "t5-tiny") for mode in ("optimizer", "full")})


def test_zero3_trains_bert_and_t5_like_zero1(two_ranks):
    """The units of an encoder (BERT) and of an encoder-decoder (T5, cross-attention to the encoder's
    output) gather and free in the right order: ZeRO-3 equals ZeRO-1 at dp 2."""
    for got in (r["text"] for r in two_ranks[1]):
        for recipe in ("bert-tiny", "t5-tiny"):
            a, b = got[(recipe, "full")], got[(recipe, "optimizer")]
            assert all(abs(x - y) <= FLOOR * max(1.0, abs(y)) for x, y in zip(a["losses"], b["losses"])), recipe
            for key, p in a["params"].items():
                assert (p - b["params"][key]).abs().max().item() <= FLOOR, (recipe, key)
