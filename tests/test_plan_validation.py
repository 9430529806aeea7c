"""The planner against published large runs (core/plan/published.py), one set of constants."""

from __future__ import annotations

import pytest

from megazoo.core.plan import Layout, PlanError, plan, search
from megazoo.core.plan.hardware import DEFAULT_EFFICIENCY, get_gpu
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
    assert [r["label"] for r in table if r["source"] == MIXTRAL_SOURCE] == [
        "Mixtral 8x7B on 64 H100 (MCore v0.8)", "Mixtral 8x7B on 64 H100 (MCore v0.9)"]
    assert sum(r["source"].startswith("Korthikanti") for r in table) == 10
    assert sum(r["source"].startswith("Llama 3") for r in table) == 3
    assert sum(r["source"].startswith("Nemotron") for r in table) == 3
    assert [r["label"] for r in table if r["source"].startswith("OPT")] == ["175B on 992 A100 (FSDP)"]
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
    # the rule's switch (fit.RULES) plans DeepSpeed's engine as Megatron's 1F1B, nothing else
    off = replace(DEFAULT_EFFICIENCY, rules_off=frozenset({"deepspeed_bubble"}))
    for row in published_rows():
        if row.layout.pipeline_engine == "deepspeed":
            megatron = evaluate(replace(row, layout=replace(row.layout, pipeline_engine="megatron")))
            assert evaluate(row, off)["predicted_step_s"] == pytest.approx(megatron["predicted_step_s"])


def test_leave_one_source_out():
    """The fitted constants (gemm_fraction, gemm_dim_half, kernel_overhead_s; core/plan/fit.py)
    chosen without a source's rows still predict that source's rows within 15%; and the defaults
    are the fit on every row (no constant is set per row or per source)."""
    from megazoo.core.plan.fit import FITTED, GRID, fit, leave_one_source_out

    results = leave_one_source_out()
    assert len(results) == len({r.source for r in published_rows()}) >= 7
    for r in results:
        assert r["worst_abs_error"] <= 0.15, r
    chosen = fit()
    assert all(getattr(chosen, name) == getattr(DEFAULT_EFFICIENCY, name) for name in FITTED)
    assert set(GRID) == set(FITTED)


def test_rows_say_whether_they_rest_on_the_interleaving_rule(table):
    for r, row in zip(table, published_rows()):
        # no paper states its number of chunks, except the MoE README's mapping table (VP 8) and Llama 3,
        # whose partition fixes it (the first chunk holds only the embedding: one layer place per chunk)
        assumed = row.layout.vpp > 1 and row.source != MIXTRAL_SOURCE \
            and not row.source.startswith("Llama 3")
        assert r["interleave_assumed"] is assumed
        assert ("residual_without_interleaving" in r) is assumed
    assert not any(r["interleave_assumed"] for r in table if r["source"].startswith("MT-NLG"))


# The rows whose planned memory does not fit their GPU, and why (the source does not give enough)
DOES_NOT_FIT = {
    # the paper tunes the micro-batches per pipeline round (N) without giving it; with N = pp = 16 (the
    # smallest round for 32 micro-batches, torch.distributed.pipelining's choice) stage 1 keeps 141 layer
    # activations in flight, 80.1 GiB with the planner's 3 GiB overhead: over by 0.1 GiB, less than the
    # uncertainty of that overhead (CUDA context, NCCL buffers, workspaces, fragmentation)
    "405B on 8192 H100, cp 1, seq 8K": 0.2,
}


def test_published_layouts_fit(table):
    """Every row's planned memory fits its GPU, but the ones DOES_NOT_FIT names (over by at most
    the GiB it says)."""
    assert set(DOES_NOT_FIT) <= {r["label"] for r in table}
    for r in table:
        if r["label"] in DOES_NOT_FIT:
            assert not r["fits"] and r["memory_gb"] - 80.0 < DOES_NOT_FIT[r["label"]], r["memory_gb"]
        else:
            assert r["fits"], (r["label"], r["memory_gb"])


def test_llama3_memory_follows_the_papers_pipeline_and_sharding(table):
    """Llama 3 405B (arXiv 2407.21783 sec. 3.3.2): the embedding and the output layer each take a layer's
    place (the first and last stage hold 7 layers, the first chunk only the embedding, so vpp 8), and
    FSDP shards gradients and optimizer state (ZeRO-2); 8K sequences train without recompute. With the 128 equal layer slots, vpp 4 and
    unsharded fp32 gradients the planner had put the rows at 101.5 / 86.2 / 86.2 GiB."""
    from dataclasses import replace

    from megazoo.core.plan.memory import inflight_layers, stage_memory
    from megazoo.core.plan.params import stage_layers

    rows = [r for r in published_rows() if r.source.startswith("Llama 3")]
    for row in rows:
        shape, lay = row.shape, row.layout
        assert (shape.num_layers, lay.vpp, lay.embedding_slots, lay.sharding) == (126, 8, True, "grads")
        layers = [sum(b - a for a, b in stage_layers(shape, lay, i)) for i in range(lay.pp)]
        assert layers == [7] + [8] * 14 + [7]
        assert stage_layers(shape, lay, 0)[0] == (0, 0) and stage_layers(shape, lay, 15)[-1] == (126, 126)
        # 16 micro-batches: every forward of the step is in flight before the first backward
        m = lay.num_micro_batches
        assert inflight_layers(shape, lay, 0) == 16 * 7
        assert inflight_layers(shape, lay, 1) == (2 * 14 + 7 * 16 + 1 if m == 32 else 16 * 8)
        # ZeRO-2: the gradients are a shard and a bucket, not 4 bytes per parameter
        mem = stage_memory(shape, lay, 1, DEFAULT_EFFICIENCY.overhead_gib)
        assert mem.grads < 0.2 * 4 * mem.params
        unsharded = stage_memory(shape, replace(lay, shard="optimizer"), 1, DEFAULT_EFFICIENCY.overhead_gib)
        assert unsharded.grads > 4 * mem.params
    got = {r["label"]: r for r in table if r["source"].startswith("Llama 3")}
    assert [round(r["memory_gb"], 1) for r in got.values()] == [80.1, 73.3, 73.2]
    assert all(abs(r["error"]) <= 0.10 for r in got.values())


def test_embedding_slots_partition_and_its_mistakes():
    from megazoo.core.plan.memory import inflight_chunks, inflight_layers
    from megazoo.core.plan.params import stage_layers

    shape = card_shape("gpt-345m")  # 24 layers
    lay = Layout(gpus=4, pp=2, vpp=2, global_batch=8, embedding_slots=True)  # 26 places, not 4 x k
    with pytest.raises(PlanError, match=r"num_layers 24 \+ 2 \(embedding_slots.*not divisible by pp x vpp = 2 x 2"):
        plan(shape, lay)
    lay = Layout(gpus=2, pp=2, global_batch=8, embedding_slots=True)  # 13 places per stage
    assert stage_layers(shape, lay, 0) == [(0, 12)] and stage_layers(shape, lay, 1) == [(12, 24)]
    # equal chunks: the layers in flight are the chunks in flight times a chunk's layers
    even = Layout(gpus=4, pp=4, vpp=2, global_batch=16)
    for stage in range(4):
        assert inflight_layers(shape, even, stage) == inflight_chunks(even, stage) * 3
    with pytest.raises(PlanError, match="embedding_slots is for decoder-only models"):
        plan(card_shape("t5-220m"), Layout(gpus=1, embedding_slots=True))


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
    """Megatron-Core MoE README (MCore v0.8, then v0.9): Mixtral 8x7B bf16 at 438 TFLOP/s per GPU, 64 H100 at
    TP 1, EP 8, PP 4, VP 8, MBS 1, GBS 256, seq 4096 (core/plan/validation.py states the source)."""
    row, later = (r for r in table if r["source"] == MIXTRAL_SOURCE)
    assert (row["tp"], row["ep"], row["pp"], row["vpp"], row["dp"], row["batch"]) == (1, 8, 4, 8, 16, 256)
    assert row["published_tflops"] == 438.0 and row["convention"] == "megatron2024"
    assert abs(row["residual"]) <= 0.10, row["residual"]  # bench/RESULTS.md records it
    assert row["fits"]
    # the same README at MCore v0.9 (468 TFLOP/s, the same mapping table): the same plan, so the
    # residual shows the software release the planner does not see (-6%)
    assert later["predicted_step_s"] == row["predicted_step_s"] and later["published_tflops"] == 468.0
    assert later["residual"] == pytest.approx((1 + row["residual"]) * 438 / 468 - 1)
    assert abs(later["residual"]) <= 0.10


def test_mixtral_needs_expert_parallelism_to_fit():
    from dataclasses import replace

    row = next(r for r in published_rows() if r.source == MIXTRAL_SOURCE)
    without = plan(row.shape, replace(row.layout, ep=1), row.gpu)
    assert not without.fits  # all 8 experts of 8 layers per rank: the reason for ep 8
    assert plan(row.shape, row.layout, row.gpu).memory_gb_per_gpu < without.memory_gb_per_gpu / 1.5


def test_the_cross_entropy_rule_moves_the_large_vocabulary_rows():
    """timing.CROSS_ENTROPY_BYTES (52 bytes per logit, Megatron-LM's vocab-parallel cross-entropy
    pass by pass): the output stage pays them per logit at the HBM rate, and the rule is what
    brings the H100 table's 1.7B (V = 131,072 against h = 2048) within 10%; the large models,
    whose vocabulary is small against their layers, barely move."""
    from dataclasses import replace

    from megazoo.core.plan.validation import evaluate

    rows = {r.label: r for r in published_rows()}
    small, large = rows["1.7B on 48 H100"], rows["462B on 6144 H100"]
    with_rule = {k: evaluate(r) for k, r in (("small", small), ("large", large))}
    off = replace(DEFAULT_EFFICIENCY, rules_off=frozenset({"cross_entropy_bytes"}))  # 20 bytes, the count before
    without = {k: evaluate(r, off) for k, r in (("small", small), ("large", large))}
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


# ---- issue 44, continued: OPT-175B's FSDP, the data-parallel overlap, the rules left out ----------------
def test_opt_175b_fsdp_row(table):
    """OPT-175B (Zhang et al. 2022): 992 A100, FSDP (ZeRO-3) with tensor parallelism 8, up to 147
    TFLOP/s per GPU, counted as Narayanan et al.'s eq. 3: the logbook's 4.30E+23 FLOPs for 300B tokens
    is that count to three digits. The planner charges the FSDP traffic (per micro-batch, two weight
    all-gathers and a gradient reduce-scatter over the 124 ranks) and its overlap."""
    from dataclasses import replace

    from megazoo.core.plan.flops import narayanan_flops
    from megazoo.core.plan.validation import evaluate

    row = next(r for r in published_rows() if r.source.startswith("OPT"))
    lay = row.layout
    assert (lay.tp, lay.pp, lay.dp, lay.batch, lay.num_micro_batches, lay.sharding) == (8, 1, 124, 992, 1, "full")
    assert row.convention == "narayanan" and row.tflops == 147.0
    assert narayanan_flops(row.shape, 300e9 / 2048, 2048, vocab=50272) == pytest.approx(4.30e23, rel=0.005)
    r = next(r for r in table if r["source"].startswith("OPT"))
    assert abs(r["error"]) <= 0.10 and r["fits"], r["error"]
    # ZeRO-3 moves 1.5x ZeRO-1's elements (2 gathers + 1 reduce-scatter against 1 + 1), and most of it hides
    zero1 = plan(row.shape, replace(lay, shard="optimizer"), row.gpu)
    zero3 = plan(row.shape, lay, row.gpu)
    assert zero3.dp_traffic_gb > 1.2 * zero1.dp_traffic_gb and zero3.dp_comm_s > zero1.dp_comm_s
    assert 0 < zero3.time_breakdown_s["dp_comm"] < 0.5 * zero3.dp_comm_s
    # without prefetch every gather waits: the row would be far outside the published figure
    waits = evaluate(replace(row, layout=replace(lay, shard_prefetch=False)))
    assert waits["predicted_step_s"] > r["predicted_step_s"] + 2.0 and abs(waits["error"]) > 0.10


def test_bloom_layer_slots_pay_the_output_layer_once(table):
    """BLOOM 176B's 70 layers run on 12 stages as Megatron-DeepSpeed's 'type:transformer|embedding'
    partition places them: the embedding and the tied output layer each take a layer's place, so the
    row plans 72 equal slots on a shape without an output layer (lm_head False). Such a shape pays no
    output-layer GEMMs or cross-entropy on its last stage: the last stage (5 layers and the output
    layer's slot) takes a middle stage's time. Paying the real output layer on top of its slot, as the
    planner did before, made the last stage the slowest and the row 16% long."""
    from dataclasses import replace

    from megazoo.core.plan.timing import stage_micro_batch_time

    row = next(r for r in published_rows() if r.source.startswith("BLOOM"))
    shape, lay, gpu = row.shape, row.layout, get_gpu(row.gpu)
    assert (shape.num_layers, shape.lm_head, row.flops_shape.num_layers, lay.pp) == (72, False, 70, 12)
    middle, last = (stage_micro_batch_time(shape, lay, gpu, DEFAULT_EFFICIENCY, i)[0] for i in (5, lay.pp - 1))
    assert last == pytest.approx(middle)
    with_head = stage_micro_batch_time(replace(shape, lm_head=True), lay, gpu, DEFAULT_EFFICIENCY, lay.pp - 1)[0]
    assert with_head > 1.1 * middle  # the real output layer (V = 250,880 over tp 4) on top of the slot
    r = next(r for r in table if r["source"].startswith("BLOOM"))
    assert abs(r["error"]) <= 0.10 and r["fits"], r["error"]


def test_an_overlapped_reduction_exposes_at_least_its_last_bucket():
    """timing.overlapped_exposed: an overlapped gradient reduction leaves eff.overlap_exposed of it on
    the critical path, and never less than its last bucket, which is complete only when the backward
    ends. One bucket: all of it; many small buckets: the share."""
    from megazoo.core.plan.timing import overlapped_exposed

    shape = card_shape("gpt-345m")
    one = plan(shape, Layout(gpus=16, global_batch=16, overlap_grad_reduce=True, bucket_size=10**9), "a100-80gb")
    many = plan(shape, Layout(gpus=16, global_batch=16, overlap_grad_reduce=True, bucket_size=10**6), "a100-80gb")
    assert one.dp_comm_s == pytest.approx(many.dp_comm_s)
    assert one.time_breakdown_s["dp_comm"] == pytest.approx(one.dp_comm_s)
    assert many.time_breakdown_s["dp_comm"] == pytest.approx(DEFAULT_EFFICIENCY.overlap_exposed * many.dp_comm_s)
    assert overlapped_exposed(1.0, 2, DEFAULT_EFFICIENCY) == 0.5
    assert overlapped_exposed(1.0, 400, DEFAULT_EFFICIENCY) == DEFAULT_EFFICIENCY.overlap_exposed


def test_pipeline_sends_cross_the_network_when_cp_spreads_the_grid_over_nodes():
    from megazoo.core.plan.timing import pp_bandwidth

    gpu = get_gpu("h100")
    node = pp_bandwidth(Layout(gpus=8, tp=2, cp=2, pp=2), gpu, DEFAULT_EFFICIENCY)
    nodes = pp_bandwidth(Layout(gpus=16, tp=2, cp=4, pp=2), gpu, DEFAULT_EFFICIENCY)  # tp x dp x pp = 4: one node
    assert node == pytest.approx(450e9 * DEFAULT_EFFICIENCY.link_fraction)
    assert nodes == pytest.approx(50e9 * DEFAULT_EFFICIENCY.link_fraction)


def test_structural_rules_left_out_for_their_own_source():
    """Issue 44's rules that were read off one source (fit.RULES), planned for that source without
    the rule (default constants, and constants refit without the source). Both sources then fall
    outside 15%: each rule is what brings its source within 10%, so neither is confirmed by its own
    source. What the rules do elsewhere: DeepSpeed's bubble moves one other row, BLOOM (the other
    DeepSpeed pipeline), which stays within 10% with the rule and without it; the cross-entropy bytes
    move every other row by under 1.1 points."""
    from megazoo.core.plan.fit import RULES, rules_left_out

    assert {source for source, _ in RULES.values()} <= {r.source for r in published_rows()}
    results = {r["rule"]: r for r in rules_left_out()}
    assert set(results) == set(RULES)
    for r in results.values():
        assert all(abs(e["with_rule"]) <= 0.10 for e in r["errors"].values()), r["errors"]
        assert r["worst_without"] > 0.15 and r["worst_without_refit"] > 0.15
    bubble = results["deepspeed_bubble"]
    assert set(bubble["others"]) == {"176B on 384 A100"}
    assert all(abs(e) <= 0.10 for e in bubble["others"]["176B on 384 A100"]), bubble["others"]
    assert all(e["without"] < -0.15 for e in bubble["errors"].values())  # -15.4, -16.1, -18.3%
    ce = results["cross_entropy_bytes"]
    assert ce["errors"]["1.7B on 48 H100"]["without"] > 0.15
    assert all(abs(a - b) < 0.011 for a, b in ce["others"].values()) and len(ce["others"]) > 20
