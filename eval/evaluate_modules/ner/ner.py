"""Entity-level NER precision/recall/F1 (seqeval default mode) as an ``evaluate`` metric.

The definition is the row "ner" of megazoo.eval.evaluate_modules.table; this file exists so that
``evaluate.load(<this folder>)`` finds a script offline (evaluate names the metric after the class).
"""
from megazoo.eval.evaluate_modules import table


class Ner(table.TableMetric):
    metric = "ner"
