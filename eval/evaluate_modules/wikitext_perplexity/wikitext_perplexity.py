"""Megatron's WikiText-103 perplexity and adjusted perplexity as an ``evaluate`` metric.

The definition is the row "wikitext_perplexity" of megazoo.eval.evaluate_modules.table; this file exists so that
``evaluate.load(<this folder>)`` finds a script offline (evaluate names the metric after the class).
"""
from megazoo.eval.evaluate_modules import table


class WikitextPerplexity(table.TableMetric):
    metric = "wikitext_perplexity"
