"""How the fitted efficiency constants are chosen, and the check that they are not fitted to their test.

Three constants of `Efficiency` are fitted: gemm_fraction, gemm_dim_half and kernel_overhead_s; the
others are measured or stated (the GPU table, link and HBM fractions) or left where the earlier
table put them. `fit` picks, from a grid, the combination with the fewest rows outside the
tolerance, then the smallest worst error, then the smallest mean error. `leave_one_source_out`
refits without each source's rows and reports how that source's rows then fare: the planner
predicts a paper it has not seen, not only the papers it was tuned on.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product

from megazoo.core.plan.hardware import DEFAULT_EFFICIENCY
from megazoo.core.plan.published import H100_SOURCE, MTNLG_SOURCE, PublishedRow, published_rows
from megazoo.core.plan.shapes import Efficiency
from megazoo.core.plan.validation import evaluate

FITTED = ("gemm_fraction", "gemm_dim_half", "kernel_overhead_s")
GRID = {"gemm_fraction": (0.83, 0.85, 0.87), "gemm_dim_half": (24.0, 32.0, 40.0, 96.0),
        "kernel_overhead_s": (2e-6, 3e-6, 6e-6)}


def candidates(grid: dict = GRID, base: Efficiency = DEFAULT_EFFICIENCY) -> list[Efficiency]:
    names = list(grid)
    return [replace(base, **dict(zip(names, values))) for values in product(*(grid[n] for n in names))]


def error_matrix(rows: list[PublishedRow], effs: list[Efficiency]) -> list[list[float]]:
    """errors[i][j]: row j's error (the figure its source measured) under candidate i."""
    return [[evaluate(row, eff)["error"] for row in rows] for eff in effs]


def score(errors: list[float], tolerance: float = 0.10) -> tuple[int, float, float]:
    """(rows outside the tolerance, worst |error|, mean |error|): smaller is better, in that order."""
    absolute = [abs(e) for e in errors]
    return sum(a > tolerance for a in absolute), max(absolute), sum(absolute) / len(absolute)


def best(effs: list[Efficiency], errors: list[list[float]], keep: list[int], tolerance: float = 0.10) -> int:
    """Index of the candidate that scores best on the rows `keep`."""
    return min(range(len(effs)), key=lambda i: score([errors[i][j] for j in keep], tolerance))


def fit(rows: list[PublishedRow] | None = None, grid: dict = GRID, tolerance: float = 0.10) -> Efficiency:
    rows = published_rows() if rows is None else rows
    effs = candidates(grid)
    errors = error_matrix(rows, effs)
    return effs[best(effs, errors, list(range(len(rows))), tolerance)]


def leave_one_source_out(rows: list[PublishedRow] | None = None, grid: dict = GRID,
                         tolerance: float = 0.10) -> list[dict]:
    """For each source: the constants fitted on every other source's rows, and this source's
    errors under them."""
    rows = published_rows() if rows is None else rows
    effs = candidates(grid)
    errors = error_matrix(rows, effs)
    out = []
    for source in dict.fromkeys(r.source for r in rows):
        mine = [j for j, r in enumerate(rows) if r.source == source]
        others = [j for j in range(len(rows)) if j not in mine]
        i = best(effs, errors, others, tolerance)
        out.append(dict(source=source, constants={n: getattr(effs[i], n) for n in grid},
                        errors={rows[j].label: errors[i][j] for j in mine},
                        worst_abs_error=max(abs(errors[i][j]) for j in mine)))
    return out


# The structural rules added because of one source's rows (issue 44), by the name Efficiency.rules_off
# switches them off with, and that source. Rules that are mechanisms rather than fits are not here:
# the ZeRO-1/2/3 traffic and memory (zero.py: counted, and held to megazoo's buffers by
# tests/test_plan_zero.py), the last gradient bucket's floor on an overlapped reduction
# (timing.overlapped_exposed: moves no published row), the stand-in layer slots of Llama 3 and BLOOM
# (each row's stated partition).
RULES = {
    "deepspeed_bubble": (MTNLG_SOURCE, "DeepSpeed's pipeline engine pays 2 (p - 1) micro-batch times to fill and "
                                       "drain (timing.bubble_time), read off MT-NLG's three step times"),
    "cross_entropy_bytes": (H100_SOURCE, "52 HBM bytes per logit in the vocab-parallel cross-entropy, was 20 "
                                         "(timing.CROSS_ENTROPY_BYTES), for the H100 table's 1.7B"),
}


def rules_left_out(rows: list[PublishedRow] | None = None, grid: dict = GRID, tolerance: float = 0.10) -> list[dict]:
    """For each structural rule (RULES): its source's rows planned without the rule, with the default
    constants and with the constants refit on every other source's rows (the source then unseen twice
    over: neither the rule nor the constants come from it), beside the errors with the rule; and how
    far the rule moves the rows of the other sources (`others`: label -> (with, without))."""
    rows = published_rows() if rows is None else rows
    effs = candidates(grid)
    errors = error_matrix(rows, effs)
    out = []
    for rule, (source, what) in RULES.items():
        mine = [j for j, r in enumerate(rows) if r.source == source]
        others = [j for j in range(len(rows)) if j not in mine]
        refit = effs[best(effs, errors, others, tolerance)]
        with_rule = {rows[j].label: evaluate(rows[j])["error"] for j in range(len(rows))}
        off = replace(DEFAULT_EFFICIENCY, rules_off=frozenset({rule}))
        without = {rows[j].label: evaluate(rows[j], off)["error"] for j in range(len(rows))}
        refit_off = replace(refit, rules_off=frozenset({rule}))
        unseen = {rows[j].label: evaluate(rows[j], refit_off)["error"] for j in mine}
        out.append(dict(rule=rule, source=source, what=what,
                        errors={rows[j].label: dict(with_rule=with_rule[rows[j].label],
                                                    without=without[rows[j].label],
                                                    without_refit=unseen[rows[j].label]) for j in mine},
                        worst_without=max(abs(without[rows[j].label]) for j in mine),
                        worst_without_refit=max(abs(v) for v in unseen.values()),
                        others={rows[j].label: (with_rule[rows[j].label], without[rows[j].label]) for j in others
                                if with_rule[rows[j].label] != without[rows[j].label]}))
    return out
