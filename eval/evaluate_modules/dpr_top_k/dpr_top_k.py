"""DPR top-k retrieval accuracy as an ``evaluate`` metric.

Calls megazoo.eval.metrics.retrieval_top_k_accuracy (DPR has_answer / calculate_matches).
"""
import datasets
import evaluate

from megazoo.eval.metrics import retrieval_top_k_accuracy

_DESCRIPTION = "Fraction of questions with an answer-bearing passage among the top k (DPR matching)."
_KWARGS = """
Args:
    predictions: per question, the ranked retrieved passage texts.
    references: per question, the gold answers.
    ks: cut-offs (default 1, 5, 20, 100); match: "string" (default) or "regex".
Returns:
    top_<k>: float in [0, 1] for each k.
"""


class DprTopK(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="Karpukhin et al. 2020, Dense Passage Retrieval for Open-Domain Question Answering.",
            inputs_description=_KWARGS,
            features=datasets.Features(
                {
                    "predictions": datasets.Sequence(datasets.Value("string")),
                    "references": datasets.Sequence(datasets.Value("string")),
                }
            ),
        )

    def _compute(self, predictions, references, ks=(1, 5, 20, 100), match="string"):
        scores = retrieval_top_k_accuracy(references, predictions, ks=ks, match=match)
        return {f"top_{k}": v for k, v in scores.items()}
