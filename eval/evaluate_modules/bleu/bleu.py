"""Corpus BLEU (sacrebleu) as an ``evaluate`` metric: megazoo.eval.metrics.bleu."""
import datasets
import evaluate

from megazoo.eval.metrics import bleu

_DESCRIPTION = "sacrebleu corpus BLEU on the 0-100 scale (Post 2018)."
_KWARGS = """
Args:
    predictions: generated strings.
    references: one reference string, or a list of references, per prediction.
    tokenize: sacrebleu tokenizer (default "13a"); lowercase: bool.
Returns:
    bleu: float in [0, 100].
"""


class Bleu(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="Post 2018, A Call for Clarity in Reporting BLEU Scores.",
            inputs_description=_KWARGS,
            features=[
                datasets.Features(
                    {
                        "predictions": datasets.Value("string"),
                        "references": datasets.Sequence(datasets.Value("string")),
                    }
                ),
                datasets.Features(
                    {
                        "predictions": datasets.Value("string"),
                        "references": datasets.Value("string"),
                    }
                ),
            ],
        )

    def _compute(self, predictions, references, tokenize="13a", lowercase=False):
        return {"bleu": bleu(predictions, references, tokenize=tokenize, lowercase=lowercase)}
