"""Perplexity from summed NLL and token counts as an ``evaluate`` metric.

Calls megazoo.eval.metrics.perplexity on the totals: exp(sum of NLL / sum of tokens).
"""
import datasets
import evaluate

from megazoo.eval.metrics import perplexity

_DESCRIPTION = "Perplexity exp(total NLL / total scored tokens) from per-text summed NLLs (nats)."
_KWARGS = """
Args:
    nll: per text, the summed negative log-likelihood of its scored tokens (nats).
    num_tokens: per text, the number of scored tokens.
Returns:
    perplexity: float.
"""


class Perplexity(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS,
            features=datasets.Features(
                {
                    "nll": datasets.Value("float64"),
                    "num_tokens": datasets.Value("int64"),
                }
            ),
        )

    def _compute(self, nll, num_tokens):
        return {"perplexity": perplexity(sum(nll), sum(num_tokens))}
