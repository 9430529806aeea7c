"""Planner validation: the planner's predictions against published scaling results.

Runs the planner (one global set of efficiency constants) on every row of
../shared/reference/scaling.md (Narayanan et al. 2021 on A100, MT-NLG 530B, Megatron-LM H100 weak
scaling) and the Megatron-Core MoE README's Mixtral 8x7B figure, prints each row with its residual,
the sensitivity of the row count to each constant, the --search ranking for MT-NLG and the dry
run, and rewrites this benchmark's section of
bench/RESULTS.md (--no-write: prints it instead), with the context- and expert-parallel sweeps of
issue 26. Usage: python bench/bench_plan.py [--no-write]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import fields, replace
from pathlib import Path

from megazoo.core.plan import Layout, ModelShape, PlanError, plan, search
from megazoo.core.plan.hardware import DEFAULT_EFFICIENCY, GPUS
from megazoo.core.plan.validation import MIXTRAL_SOURCE, published_rows, source_summary, validation_table
from megazoo.zoo.cards import card_shape, load_card
from results import write_section as write_results_section  # bench/results.py

HEADING = "## Planner validation (bench/bench_plan.py)"
RESULTS = Path(__file__).with_name("RESULTS.md")


TOLERANCE = 0.10  # issue 44: every row within 10% of the figure its source measured


def count_within(table: list[dict], tol: float = TOLERANCE) -> int:
    """Rows within `tol` in the figure each source measured (step time where given, else TFLOP/s or MFU)."""
    return sum(abs(r["error"]) <= tol for r in table)


def sensitivity() -> list[str]:
    """Rows within 10% when one constant is moved by -30% / +30% (all others unchanged)."""
    out = []
    for f in fields(DEFAULT_EFFICIENCY):
        base = getattr(DEFAULT_EFFICIENCY, f.name)
        if not base or f.name in ("overhead_gib", "step_overhead_s"):
            continue
        counts = []
        for factor in (0.7, 1.3):
            value = base * factor
            if f.name in ("gemm_fraction", "hbm_fraction", "link_fraction", "flash_fraction", "overlap_exposed"):
                value = min(value, 1.0)
            counts.append(count_within(validation_table(replace(DEFAULT_EFFICIENCY, **{f.name: value}))))
        out.append(f"`{f.name}` = {base:g}: {counts[0]} rows at x0.7, {counts[1]} at x1.3")
    return out


def section(table, sens, ranked, dry, seconds, cpu, cp_ep=None) -> str:
    n = count_within(table)
    eff = DEFAULT_EFFICIENCY
    lines = [HEADING, "",
             f"Peer: {len(table)} published runs of {len({r['source'] for r in table})} sources "
             f"(core/plan/published.py: each row cites its table and the settings it assumes). {n} of {len(table)} "
             f"rows within 10% of the figure each source measured (step time where given, else TFLOP/s or MFU; "
             f"issue 44's target: every row), one global set of constants (refit on the whole table, leave-one-source-out "
             f"below), no per-row fitting. "
             f"Residual = predicted / published TFLOP/s - 1, in each paper's own FLOP convention (Narayanan eq. 3 for "
             f"the A100 and MT-NLG rows, Megatron-LM's model FLOPs with the full attention core for H100 and "
             f"Mixtral, whose MoE layers count top-2 experts and no router).", "",
             "| source | model on GPUs | tp x pp x dp (vpp) | batch | published TFLOP/s | predicted | residual | GiB/GPU (fits) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in table:
        lay = f"{r['tp']} x {r['pp']} x {r['dp']}" + (f" ({r['vpp']})" if r["vpp"] > 1 else "")
        lay += f", ep {r['ep']}" if r["ep"] > 1 else ""
        lines.append(f"| {r['source']} | {r['label']} | {lay} | {r['batch']} | {r['published_tflops']:.1f} | "
                     f"{r['predicted_tflops']:.1f} | {r['residual']:+.1%} | {r['memory_gb']:.0f} "
                     f"({'yes' if r['fits'] else 'no'}) |")
    steps = [r for r in table if r.get("published_step_s")]
    interleaved = [r for r in table if r.get("interleave_assumed")]
    lines += ["", "Rows whose source gives a step time, seconds per iteration published / predicted (residual): "
              + "; ".join(f"{r['source']}, {r['label']}: {r['published_step_s']} / "
                          f"{r['predicted_step_s']:.1f} ({r['step_residual']:+.1%})" for r in steps)
              + ".", "",
              "Rows that depend on the interleaving rule (no paper states its number of chunks; vpp is the smallest "
              "that divides a stage's layers), with the residual the plain 1F1B schedule (vpp 1) would give: "
              + "; ".join(f"{r['label']} vpp {r['vpp']}: {r['residual']:+.1%} (vpp 1: "
                          f"{r['residual_without_interleaving']:+.1%})" for r in interleaved)
              + f". The other {len(table) - len(interleaved)} rows (pp 1, and MT-NLG's plain 1F1B pipeline) do not "
              "depend on it.", "",
              "Every row from the command line: `megazoo plan --validate` prints this table and each row's command, "
              "e.g. `megazoo plan mt-nlg-530b --gpus 2240 --gpu a100-80gb --tp 8 --pp 35 --micro-batch 1 "
              "--global-batch 1920 --recompute full --no-sp --no-flash-attention --no-scatter-gather "
              f"--flops-convention narayanan` ({steps[0]['predicted_step_s']:.1f} s, "
              f"{steps[0]['predicted_tflops']:.1f} TFLOP/s); tests/test_plan_cli.py runs every row's command and "
              "checks its step time and TFLOP/s against the validation.", "",
              "Constants (core/plan/shapes.py `Efficiency`): " + ", ".join(
                  f"`{f.name}` {getattr(eff, f.name):g}" for f in fields(eff) if f.name != "rules_off") + ". GPU table (sustained matmul "
              "TFLOP/s from public measurements): " + ", ".join(f"{g.name} {g.matmul_tflops:g} of {g.peak_tflops:g}"
                                                               for g in GPUS.values()) + ".", "",
              "Sensitivity (rows within 10% with one constant moved by 30%): " + "; ".join(sens) + ".", "",
              "| source | rows | mean abs. error | worst |", "|---|---|---|---|"] + [
              f"| {x['source']} | {x['rows']} | {x['mean_abs_error']:.1%} | {x['worst_abs_error']:.1%} |"
              for x in source_summary(table)] + ["",
              "Leave-one-source-out (core/plan/fit.py): the constants refit without each source predict its rows; "
              "tests/test_plan_validation.py holds every source within 15% that way. The rules behind the DeepSpeed "
              "pipeline bubble (MT-NLG), the cross-entropy cost and the refit: docs/parallelism.md.", "",
              "Assumptions the papers leave open, one rule for all rows: micro-batch 1; where a paper uses the "
              "interleaved schedule, the smallest number of chunks that divides a stage's layers. MT-NLG ran "
              "DeepSpeed's plain 1F1B pipeline without the scatter/gather optimisation. Largest misses: "
              + ", ".join(f"{r['label']} ({r['residual']:+.0%})" for r in sorted(table, key=lambda r: -abs(r['residual']))[:3])
              + ". MT-NLG (DeepSpeed) reached 126 TFLOP/s where Megatron-LM's own run of the same model on the "
              "same machine reached 159-163 (Narayanan et al. Tables 1-2); the planner, which models one "
              "software stack, sits between.", "",
              "`megazoo plan mt-nlg-530b --gpus 2240 --global-batch 1920 --search` (best setting per tp x pp): "
              + "; ".join(f"{i}. tp {p.layout['tp']} x pp {p.layout['pp']} (vpp {p.layout['vpp']}, recompute "
                          f"{p.layout['recompute']}, {p.tflops_per_gpu:.0f} TFLOP/s, {p.memory_gb_per_gpu:.0f} GiB)"
                          for i, p in enumerate(ranked[:3], 1)) + ".", "",
              "Dry run of mt-nlg-530b at TP 8 x PP 35 (meta device, fake process group): "
              + "; ".join(f"stage {c['stage']}: {c['model_params']:,} parameters, "
                          f"{'equal to' if c['ok'] else 'DIFFERENT from'} the planner" for c in dry)
              + ".", ""] + (cp_ep or [])
    lines += [f"(bench/bench_plan.py ran in {seconds:.1f} s wall, {cpu:.1f} s CPU, on a 2-core machine shared "
              "with other jobs.)", ""]
    return "\n".join(lines)


LLAMA3_8B = ModelShape(num_layers=32, hidden_size=4096, num_heads=32, num_kv_heads=8, ffn_hidden_size=14336,
                       vocab_size=128256, seq_length=8192, activation="swiglu", tie_embeddings=False, arch="llama",
                       position="rope", norm="rmsnorm", bias=False, dropout=False, name="llama3-8b")


def cp_ep_lines(table: list[dict]) -> list[str]:
    """Issue 26: the MoE row against its source, and the planner's cp and ep sweeps."""
    row = next(r for r in table if r["source"] == MIXTRAL_SOURCE)
    spec = next(r for r in published_rows() if r.source == MIXTRAL_SOURCE)
    best = plan(spec.shape, spec.layout, spec.gpu, flops_convention=spec.convention)
    eps = []
    for ep in (1, 2, 4, 8):
        p = plan(spec.shape, replace(spec.layout, ep=ep), spec.gpu, flops_convention=spec.convention)
        eps.append(f"ep {ep}: {p.memory_gb_per_gpu:.0f} GiB ({'fits' if p.fits else 'does not fit'}), "
                   f"{p.tflops_per_gpu:.0f} TFLOP/s, all-to-all {p.time_breakdown_s['ep_comm_in_compute']:.3f} s "
                   f"of {p.step_time_s:.2f} s")
    tb = best.time_breakdown_s
    out = ["### Context and expert parallelism (issue 26)", "",
           f"Mixtral 8x7B (46.7B parameters, 12.9B active) against the Megatron-Core MoE README as of MCore v0.8 "
           f"(NVIDIA/Megatron-LM megatron/core/transformer/moe/README.md: \"Mixtral 8X7B bf16 training to achieve "
           f"438 TFLOPS as of MCore v0.8\", with its reference mapping for Mixtral 8x7B: 64 H100, seq 4096, TP 1, "
           f"EP 8, PP 4, VP 8, MBS 1, GBS 256, dropless, all-to-all dispatcher): published "
           f"{row['published_tflops']:.0f}, predicted {row['predicted_tflops']:.0f} TFLOP/s per GPU "
           f"({row['residual']:+.1%}; the test's tolerance is 10%), {row['memory_gb']:.0f} GiB per GPU. Assumed, "
           "not stated next to the figure: that the 438 TFLOP/s were measured with that mapping, the distributed "
           "optimizer with overlapped gradient reduce and parameter gather (the README's example script), and "
           f"balanced routing. Step {best.step_time_s:.2f} s: compute {tb['compute']:.2f} (of which all-to-all "
           f"{tb['ep_comm_in_compute']:.3f}), bubble {tb['bubble']:.3f}, pipeline sends {tb['pp_comm']:.3f}, "
           f"gradient reduction {tb['dp_comm']:.3f}.", "",
           "The same layout at each ep (planner): " + "; ".join(eps) + ".", ""]
    rows = []
    for seq, gpus in ((32768, 8), (131072, 32)):
        for cp in (1, 2, 4, 8):
            if gpus % cp:
                continue
            base = Layout(gpus=gpus, tp=4 if seq > 65536 else 2, cp=cp, global_batch=gpus // (cp * (4 if seq > 65536 else 2)),
                          seq_length=seq, recompute="selective", distributed_optimizer=True, overlap_grad_reduce=True,
                          overlap_param_gather=True, tp_comm_overlap=True)
            try:
                p = plan(LLAMA3_8B, base, "h100", flops_convention="megatron2024")
                q = plan(LLAMA3_8B, replace(base, cp_overlap=False), "h100", flops_convention="megatron2024")
            except PlanError:
                continue
            rows.append(f"| {seq // 1024}K | {gpus} | {base.tp} | {cp} | {p.dp} | {p.memory_gb_per_gpu:.0f} "
                        f"({'fits' if p.fits else 'no'}) | {p.memory_breakdown_gb['activations']:.1f} | "
                        f"{p.tflops_per_gpu:.0f} | {p.time_breakdown_s.get('cp_comm_in_compute', 0.0):.3f} | "
                        f"{q.tflops_per_gpu:.0f} |")
    out += ["Llama-3-8B shape on H100 at long sequences (planner; bf16, selective recompute, distributed optimizer, "
            "one sequence per data-parallel replica): memory per GPU and throughput as cp grows, the ring's K/V "
            "sends overlapped with the attention of the chunk in hand (the assumption; the last dK/dV shift of "
            "backward always exposed) or not.", "",
            "| seq | GPUs | tp | cp | dp | GiB/GPU | activations GiB | TFLOP/s | exposed ring s | TFLOP/s, ring not overlapped |",
            "|---|---|---|---|---|---|---|---|---|---|"] + rows + [
            "", "One long-context figure is checked above: Llama 3 405B at 128K tokens with cp 16 (Llama 3 paper, "
            "table 4). The published CP tables of NeMo (Llama-2-7B / Llama-3-8B) are FP8 runs, which the planner's "
            "bf16 model does not cover. At small scale the cp and MoE terms are checked against the real model: "
            "activations saved per rank at cp 2 and 4 (4 processes, the ring) within 10% "
            "(tests/test_plan_small_scale.py), MoE activations within 10%, and the expert gradient buckets, "
            "sharded over the expert-dp ranks, byte-exact at dp 4 x ep 2.", ""]
    return out


def write_section(text: str) -> None:
    write_results_section(HEADING, text, RESULTS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print only; leave bench/RESULTS.md alone")
    args = parser.parse_args()
    start, cpu_start = time.perf_counter(), time.process_time()
    table = validation_table()
    for r in table:
        print(f"{r['label']:24s} tp{r['tp']} pp{r['pp']} dp{r['dp']} v{r['vpp']}: published {r['published_tflops']:6.1f} "
              f"predicted {r['predicted_tflops']:6.1f} residual {r['residual']:+6.1%}")
    print(f"within 10%: {count_within(table)} / {len(table)}")
    sens = sensitivity()
    print("\n".join(sens))
    ranked = search(card_shape("mt-nlg-530b"), Layout(gpus=2240, global_batch=1920), "a100-80gb")
    from megazoo.zoo.cli_plan import dry_run

    dry = dry_run(load_card("mt-nlg-530b"), Layout(gpus=2240, tp=8, pp=35, global_batch=1920, recompute="full"))
    cp_ep = cp_ep_lines(table)
    print("\n".join(cp_ep))
    text = section(table, sens, ranked, dry, time.perf_counter() - start, time.process_time() - cpu_start, cp_ep)
    if not args.no_write:
        write_section(text)
        print(f"wrote the section of {RESULTS}")
    else:
        print("\n" + text)


if __name__ == "__main__":
    main()
