"""ParlAI unigram F1 (and knowledge F1) as an ``evaluate`` metric.

The definition is the row "dialogue_f1" of megazoo.eval.evaluate_modules.table; this file exists so that
``evaluate.load(<this folder>)`` finds a script offline (evaluate names the metric after the class).
"""
from megazoo.eval.evaluate_modules import table


class DialogueF1(table.TableMetric):
    metric = "dialogue_f1"
