"""The planner's residual on every published run of core/plan/published.py, per row and per source.

A row's published TFLOP/s follows its paper's FLOP convention, so the planner's predicted step time
is turned into TFLOP/s with that same convention before comparing. A row's `error` is the residual
of the figure its source measured: the step time where the source gives one, else TFLOP/s (or MFU,
the same figure over the GPU's peak). Residual = predicted / published - 1.
"""

from __future__ import annotations

from dataclasses import replace

from megazoo.core.plan.flops import convention_flops
from megazoo.core.plan.hardware import DEFAULT_EFFICIENCY, get_gpu
from megazoo.core.plan.planner import plan
from megazoo.core.plan.published import (MIXTRAL_SOURCE, PublishedRow, gpt, minimal_interleave, mixtral_8x7b,
                                         published_rows)
from megazoo.core.plan.shapes import Efficiency

__all__ = ["MIXTRAL_SOURCE", "PublishedRow", "evaluate", "gpt", "minimal_interleave", "mixtral_8x7b",
           "published_rows", "source_summary", "validation_table"]


def published_tflops(row: PublishedRow) -> float:
    """The row's TFLOP/s per GPU: as published; else its published MFU times the GPU's dense peak;
    else its published step time turned into TFLOP/s in the row's convention."""
    if row.tflops is not None:
        return row.tflops
    if row.mfu is not None:
        return row.mfu * get_gpu(row.gpu).peak_tflops
    return _tflops(row, row.step_time_s)


def _tflops(row: PublishedRow, step_s: float) -> float:
    shape = row.flops_shape or row.shape
    seq = row.layout.seq_length or shape.seq_length
    flops = convention_flops(shape, row.layout.batch, seq, row.layout.tp, row.convention)
    return flops / step_s / row.layout.gpus / 1e12


def evaluate(row: PublishedRow, eff: Efficiency = DEFAULT_EFFICIENCY) -> dict:
    """The planner's prediction for one published row, in the row's own FLOP convention.
    Rows whose vpp is assumed also carry the residual with the plain schedule (vpp 1), which shows
    how much of their agreement rests on the interleaving rule."""
    p = plan(row.shape, row.layout, row.gpu, eff, flops_convention=row.convention)
    predicted = _tflops(row, p.step_time_s) if row.flops_shape else p.tflops_per_gpu
    published = published_tflops(row)
    residual = predicted / published - 1.0
    out = dict(source=row.source, label=row.label, tp=row.layout.tp, pp=row.layout.pp, vpp=row.layout.vpp,
               dp=row.layout.dp, cp=row.layout.cp, ep=row.layout.ep, gpus=row.layout.gpus, batch=row.layout.batch,
               convention=row.convention, gpu=row.gpu, published_tflops=published, tflops_from_mfu=row.tflops is None,
               predicted_tflops=predicted, residual=residual, predicted_step_s=p.step_time_s,
               published_step_s=row.step_time_s, peak_fraction=predicted / get_gpu(row.gpu).peak_tflops,
               memory_gb=p.memory_gb_per_gpu, fits=p.fits, bubble=p.bubble_fraction,
               interleave_assumed=row.interleave_assumed, cite=row.cite, assumed=row.assumed,
               time_breakdown_s=p.time_breakdown_s)
    # the step time the published TFLOP/s implies, where the source gives no step time
    out["step_residual"] = (p.step_time_s / row.step_time_s - 1.0) if row.step_time_s else 1.0 / (1.0 + residual) - 1.0
    out["error"] = out["step_residual"] if row.step_time_s else residual
    out["measured"] = "step time" if row.step_time_s else ("MFU" if row.tflops is None else "TFLOP/s")
    if row.interleave_assumed:
        plain = plan(row.shape, replace(row.layout, vpp=1), row.gpu, eff, flops_convention=row.convention)
        out["residual_without_interleaving"] = _tflops(row, plain.step_time_s) / published - 1.0
    return out


def validation_table(eff: Efficiency = DEFAULT_EFFICIENCY, rows: list[PublishedRow] | None = None) -> list[dict]:
    return [evaluate(r, eff) for r in (published_rows() if rows is None else rows)]


def source_summary(table: list[dict]) -> list[dict]:
    """Per source: rows, mean and worst absolute error (of the figure each source measured)."""
    out: dict[str, dict] = {}
    for r in table:
        s = out.setdefault(r["source"], dict(source=r["source"], rows=0, errors=[]))
        s["rows"] += 1
        s["errors"].append(abs(r["error"]))
    return [dict(source=s["source"], rows=s["rows"], mean_abs_error=sum(s["errors"]) / s["rows"],
                 worst_abs_error=max(s["errors"])) for s in out.values()]
