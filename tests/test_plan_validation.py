"""The planner against published large runs (core/plan/published.py), one set of constants."""

from __future__ import annotations

import pytest

from megazoo.core.plan import Layout, PlanError, plan, search
from megazoo.core.plan.hardware import DEFAULT_EFFICIENCY
from megazoo.core.plan.validation import MIXTRAL_SOURCE, published_rows, source_summary, validation_table
from megazoo.zoo.cards import card_shape


@pytest.fixture(scope="module")
def table():
    return validation_table(DEFAULT_EFFICIENCY)


def test_validation_set_is_complete(table):
    labels = [r["label"] for r in table]
    assert len(table) >= 40
    assert sum("A100" in lab and r["source"].startswith("Narayanan") for lab, r in zip(labels, table)) == 13
    assert sum(r["source"].startswith("MT-NLG") for r in table) == 3
    assert sum("H100" in lab and r["source"].startswith("Megatron-LM H100") for lab, r in zip(labels, table)) == 9
    assert [r["label"] for r in table if r["source"] == MIXTRAL_SOURCE] == ["Mixtral 8x7B on 64 H100"]
    assert sum(r["source"].startswith("Korthikanti") for r in table) == 10
    assert sum(r["source"].startswith("Llama 3") for r in table) == 3
    assert sum(r["source"].startswith("Nemotron") for r in table) == 3
    assert any(r["label"] == "1008.0B on 3072 A100" and r["published_tflops"] == 163 for r in table)
    for r in table:  # every row carries its residual, its source's table or section and its assumptions
        assert r["residual"] == pytest.approx(r["predicted_tflops"] / r["published_tflops"] - 1)
        assert r["cite"] and (r["assumed"] or r["source"].startswith("MT-NLG"))


def test_every_row_says_what_it_was_measured_by(table):
    for r, row in zip(table, published_rows()):
        assert row.tflops is not None or row.mfu is not None or row.step_time_s is not None
        if row.step_time_s:  # the step time is the figure held to the tolerance
            assert r["measured"] == "step time" and r["error"] == r["step_residual"]
        else:
            assert r["error"] == r["residual"]
        if row.tflops is None and row.mfu is not None:  # TFLOP/s from the MFU and the datasheet peak
            assert r["published_tflops"] == pytest.approx(row.mfu * (312.0 if row.gpu.startswith("a100") else 989.0))


def test_sources_are_summarised(table):
    summary = {s["source"]: s for s in source_summary(table)}
    assert set(summary) == {r["source"] for r in table}
    mtnlg = summary["MT-NLG (Smith et al. 2022)"]
    assert mtnlg["rows"] == 3 and mtnlg["worst_abs_error"] >= mtnlg["mean_abs_error"] > 0


@pytest.mark.parametrize("gpus,dp,seconds", [(2240, 8, 60.1), (2800, 10, 50.2), (3360, 12, 44.4)])
def test_mtnlg_step_time(table, gpus, dp, seconds):
    # MT-NLG's table: seconds per iteration at DP 8, 10, 12 (280 GPUs per replica); issue 44: within 10%
    row = next(r for r in table if r["label"] == f"530B on {gpus} A100")
    assert row["dp"] == dp and row["published_step_s"] == seconds
    assert abs(row["step_residual"]) <= 0.10, row["step_residual"]


def test_the_deepspeed_bubble_rule_is_what_brings_mtnlg_within_10_percent():
    """The rule of issue 44 (timing.bubble_time): without it the 3,360-GPU row is 14.6% short; with
    it every MT-NLG row is within 10%, and no Megatron-LM row changes (the rule is the engine's)."""
    from dataclasses import replace

    from megazoo.core.plan.validation import evaluate

    for row in published_rows():
        if row.layout.pipeline_engine == "deepspeed":
            megatron = evaluate(replace(row, layout=replace(row.layout, pipeline_engine="megatron")))
            deepspeed = evaluate(row)
            assert deepspeed["predicted_step_s"] > megatron["predicted_step_s"]
            if row.source.startswith("MT-NLG"):
                assert abs(deepspeed["error"]) <= 0.10 < abs(megatron["error"]), (row.label, megatron["error"])
    assert {r.source for r in published_rows() if r.layout.pipeline_engine == "deepspeed"} == {
        "MT-NLG (Smith et al. 2022)", "BLOOM 176B (BigScience 2022)"}


def test_leave_one_source_out():
    """The fitted constants (gemm_fraction, gemm_dim_half, kernel_overhead_s; core/plan/fit.py)
    chosen without a source's rows still predict that source's rows within 15%; and the defaults
    are the fit on every held row (no constant is set per row or per source)."""
    from megazoo.core.plan.fit import FITTED, GRID, fit, leave_one_source_out

    results = leave_one_source_out()
    assert len(results) == len({r.source for r in published_rows() if not r.indicative}) >= 7
    for r in results:
        assert r["worst_abs_error"] <= 0.15, r
    chosen = fit()
    assert all(getattr(chosen, name) == getattr(DEFAULT_EFFICIENCY, name) for name in FITTED)
    assert set(GRID) == set(FITTED)


def test_rows_say_whether_they_rest_on_the_interleaving_rule(table):
    for r, row in zip(table, published_rows()):
        # no paper states its number of chunks, except the MoE README's mapping table (VP 8)
        assumed = row.layout.vpp > 1 and row.source != MIXTRAL_SOURCE
        assert r["interleave_assumed"] is assumed
        assert ("residual_without_interleaving" in r) is assumed
    assert not any(r["interleave_assumed"] for r in table if r["source"].startswith("MT-NLG"))


def test_published_layouts_fit(table):
    # Llama 3's memory measures (gradients sharded with the optimizer state, early deallocation,
    # paper 3.3.2) are not modelled: the planner puts those rows at 86-101 GiB (their assumptions say so)
    rows = [r for r in table if not r["source"].startswith("Llama 3")]
    assert all(r["fits"] for r in rows), [r["label"] for r in rows if not r["fits"]]


def test_known_bad_layouts_are_flagged():
    shape = card_shape("mt-nlg-530b")
    bad = plan(shape, Layout(gpus=2240, tp=8, pp=1, global_batch=2240, recompute="full"), "a100-80gb")
    assert not bad.fits and bad.memory_gb_per_gpu > 1000
    assert any("does not fit" in w for w in bad.warnings)
    # an 8.3B model needs 18 bytes per parameter of model states: far more than one 32 GB V100
    node = plan(card_shape("gpt-8.3b"), Layout(gpus=1, recompute="full"), "v100")
    assert not node.fits


def test_search_ranks_the_published_mtnlg_layout_in_its_top_3():
    shape = card_shape("mt-nlg-530b")
    ranked = search(shape, Layout(gpus=2240, global_batch=1920), "a100-80gb")
    top = [(p.layout["tp"], p.layout["pp"]) for p in ranked[:3]]
    assert (8, 35) in top, top
    assert all(p.fits for p in ranked)
    assert [p.step_time_s for p in ranked] == sorted(p.step_time_s for p in ranked)  # one batch: time ranks


@pytest.mark.parametrize("layout,message", [
    (Layout(gpus=2240, tp=8, pp=4, global_batch=1920), "num_layers 105 is not divisible by pp 4"),
    (Layout(gpus=2000, tp=8, pp=35, global_batch=1920), "2000 GPUs are not divisible by tp x pp = 8 x 35"),
    (Layout(gpus=3360, tp=3, pp=35, global_batch=1920), "num_heads 128 is not divisible by tp 3"),
    (Layout(gpus=2240, tp=8, pp=35, global_batch=1001), "global batch 1001 is not divisible by dp x micro-batch"),
    (Layout(gpus=2240, tp=8, pp=35, vpp=2, global_batch=1920), "not divisible by pp x vpp = 35 x 2"),
])
def test_bad_layouts_have_one_clear_error(layout, message):
    with pytest.raises(PlanError, match=message.replace("(", r"\(")):
        plan(card_shape("mt-nlg-530b"), layout, "a100-80gb")


def test_unknown_gpu():
    with pytest.raises(PlanError, match=r"unknown GPU 'a200'; known GPUs: v100, a100-40gb, a100-80gb, h100, h200, b200"):
        plan(card_shape("gpt-345m"), Layout(gpus=8), "a200")


def test_rows_use_their_papers_settings():
    rows = {r.label: r for r in published_rows()}
    mtnlg = rows["530B on 2240 A100"]
    assert (mtnlg.layout.tp, mtnlg.layout.pp, mtnlg.layout.dp, mtnlg.layout.batch) == (8, 35, 8, 1920)
    h100 = rows["462B on 6144 H100"]
    assert (h100.layout.tp, h100.layout.pp, h100.layout.dp, h100.shape.vocab_size) == (8, 16, 48, 131072)


# ---- issue 26: the published MoE figure ------------------------------------------------------------
def test_mixtral_against_the_megatron_core_moe_figure(table):
    """Megatron-Core MoE README (MCore v0.8): Mixtral 8x7B bf16 at 438 TFLOP/s per GPU, 64 H100 at
    TP 1, EP 8, PP 4, VP 8, MBS 1, GBS 256, seq 4096 (core/plan/validation.py states the source)."""
    row = next(r for r in table if r["source"] == MIXTRAL_SOURCE)
    assert (row["tp"], row["ep"], row["pp"], row["vpp"], row["dp"], row["batch"]) == (1, 8, 4, 8, 16, 256)
    assert row["published_tflops"] == 438.0 and row["convention"] == "megatron2024"
    assert abs(row["residual"]) <= 0.10, row["residual"]  # bench/RESULTS.md records it
    assert row["fits"]


def test_mixtral_needs_expert_parallelism_to_fit():
    from dataclasses import replace

    row = next(r for r in published_rows() if r.source == MIXTRAL_SOURCE)
    without = plan(row.shape, replace(row.layout, ep=1), row.gpu)
    assert not without.fits  # all 8 experts of 8 layers per rank: the reason for ep 8
    assert plan(row.shape, row.layout, row.gpu).memory_gb_per_gpu < without.memory_gb_per_gpu / 1.5


def test_the_cross_entropy_rule_moves_the_large_vocabulary_rows(monkeypatch):
    """timing.CROSS_ENTROPY_BYTES (52 bytes per logit, Megatron-LM's vocab-parallel cross-entropy
    pass by pass): the output stage pays them per logit at the HBM rate, and the rule is what
    brings the H100 table's 1.7B (V = 131,072 against h = 2048) within 10%; the large models,
    whose vocabulary is small against their layers, barely move."""
    import megazoo.core.plan.timing as timing
    from megazoo.core.plan.validation import evaluate

    rows = {r.label: r for r in published_rows()}
    small, large = rows["1.7B on 48 H100"], rows["462B on 6144 H100"]
    with_rule = {k: evaluate(r) for k, r in (("small", small), ("large", large))}
    monkeypatch.setattr(timing, "CROSS_ENTROPY_BYTES", 20)  # the count before issue 44
    without = {k: evaluate(r) for k, r in (("small", small), ("large", large))}
    assert abs(with_rule["small"]["error"]) <= 0.10 < abs(without["small"]["error"])
    logits = small.layout.batch // small.layout.dp * small.shape.seq_length * 131072  # per GPU per step
    extra = 32 * logits / (3350e9 * DEFAULT_EFFICIENCY.hbm_fraction)
    assert with_rule["small"]["predicted_step_s"] - without["small"]["predicted_step_s"] == pytest.approx(extra)
    assert abs(with_rule["large"]["error"] - without["large"]["error"]) < 0.005


def test_pipeline_engine_errors():
    shape = card_shape("mt-nlg-530b")
    with pytest.raises(PlanError, match="DeepSpeed's pipeline engine has no interleaved schedule; use vpp 1"):
        plan(shape, Layout(gpus=2240, tp=8, pp=35, vpp=3, global_batch=1920, pipeline_engine="deepspeed"))
    with pytest.raises(PlanError, match="pipeline_engine must be megatron or deepspeed, got 'colossal'"):
        plan(shape, Layout(gpus=2240, tp=8, pp=35, global_batch=1920, pipeline_engine="colossal"))
