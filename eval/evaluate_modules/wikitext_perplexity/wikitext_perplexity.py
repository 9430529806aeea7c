"""Megatron's WikiText-103 perplexity and adjusted perplexity as an ``evaluate`` metric.

Calls megazoo.eval.metrics.adjusted_perplexity (Megatron-LM tasks/zeroshot_gpt/evaluate.py).
"""
import datasets
import evaluate

from megazoo.eval.metrics import adjusted_perplexity

_DESCRIPTION = "ppl = exp(L/(N-1)) over BPE targets; adjusted ppl = exp(L/(N_orig-1)) per original word; capped at exp(20)."
_KWARGS = """
Args:
    nll: per document (usually one: the whole file), the summed NLL of all its N-1 targets.
    num_tokenized_tokens: per document, N, its tokenised length.
    num_original_tokens: per document, its word-level count len(raw.strip().split(" ")).
Returns:
    avg_loss, ppl, adjusted_ppl, token_ratio (of the summed counts).
"""


class WikitextPerplexity(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=(
                "Shoeybi et al. 2019, Megatron-LM: Training Multi-Billion Parameter Language "
                "Models Using Model Parallelism."
            ),
            inputs_description=_KWARGS,
            features=datasets.Features(
                {
                    "nll": datasets.Value("float64"),
                    "num_tokenized_tokens": datasets.Value("int64"),
                    "num_original_tokens": datasets.Value("int64"),
                }
            ),
        )

    def _compute(self, nll, num_tokenized_tokens, num_original_tokens):
        return adjusted_perplexity(sum(nll), sum(num_tokenized_tokens), sum(num_original_tokens))
