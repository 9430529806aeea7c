"""ChemProt micro precision/recall/F1 over CPR:3/4/5/6/9 as an ``evaluate`` metric.

The definition is the row "chemprot" of megazoo.eval.evaluate_modules.table; this file exists so that
``evaluate.load(<this folder>)`` finds a script offline (evaluate names the metric after the class).
"""
from megazoo.eval.evaluate_modules import table


class Chemprot(table.TableMetric):
    metric = "chemprot"
