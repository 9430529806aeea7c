"""How the fitted efficiency constants are chosen, and the check that they are not fitted to their test.

Three constants of `Efficiency` are fitted: gemm_fraction, gemm_dim_half and kernel_overhead_s; the
others are measured or stated (the GPU table, link and HBM fractions) or left where the earlier
table put them. `fit` picks, from a grid, the combination with the fewest held rows outside the
tolerance, then the smallest worst error, then the smallest mean error. `leave_one_source_out`
refits without each source's rows and reports how that source's rows then fare: the planner
predicts a paper it has not seen, not only the papers it was tuned on.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product

from megazoo.core.plan.hardware import DEFAULT_EFFICIENCY
from megazoo.core.plan.published import PublishedRow, published_rows
from megazoo.core.plan.shapes import Efficiency
from megazoo.core.plan.validation import evaluate

FITTED = ("gemm_fraction", "gemm_dim_half", "kernel_overhead_s")
GRID = {"gemm_fraction": (0.83, 0.85, 0.87), "gemm_dim_half": (24.0, 32.0, 40.0, 96.0),
        "kernel_overhead_s": (2e-6, 3e-6, 6e-6)}


def candidates(grid: dict = GRID, base: Efficiency = DEFAULT_EFFICIENCY) -> list[Efficiency]:
    names = list(grid)
    return [replace(base, **dict(zip(names, values))) for values in product(*(grid[n] for n in names))]


def held_rows(rows: list[PublishedRow] | None = None) -> list[PublishedRow]:
    """The rows held to the tolerance (not the indicative ones)."""
    return [r for r in (published_rows() if rows is None else rows) if not r.indicative]


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
    rows = held_rows(rows)
    effs = candidates(grid)
    errors = error_matrix(rows, effs)
    return effs[best(effs, errors, list(range(len(rows))), tolerance)]


def leave_one_source_out(rows: list[PublishedRow] | None = None, grid: dict = GRID,
                         tolerance: float = 0.10) -> list[dict]:
    """For each source: the constants fitted on every other source's rows, and this source's
    errors under them."""
    rows = held_rows(rows)
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
