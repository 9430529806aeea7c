"""Corpus BLEU (sacrebleu) as an ``evaluate`` metric: megazoo.eval.metrics.bleu.

The definition is the row "bleu" of megazoo.eval.evaluate_modules.table; this file exists so that
``evaluate.load(<this folder>)`` finds a script offline (evaluate names the metric after the class).
"""
from megazoo.eval.evaluate_modules import table


class Bleu(table.TableMetric):
    metric = "bleu"
