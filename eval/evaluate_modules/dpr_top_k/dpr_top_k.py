"""DPR top-k retrieval accuracy as an ``evaluate`` metric.

The definition is the row "dpr_top_k" of megazoo.eval.evaluate_modules.table; this file exists so that
``evaluate.load(<this folder>)`` finds a script offline (evaluate names the metric after the class).
"""
from megazoo.eval.evaluate_modules import table


class DprTopK(table.TableMetric):
    metric = "dpr_top_k"
