"""Entity-level NER precision/recall/F1 (seqeval default mode) as an ``evaluate`` metric.

Calls megazoo.eval.metrics.ner_scores (conlleval chunking; IOB1, IOB2 and IOBES).
"""
import datasets
import evaluate

from megazoo.eval.metrics import ner_scores

_DESCRIPTION = "Micro entity-level precision, recall and F1 with conlleval chunking (seqeval's default mode)."
_KWARGS = """
Args:
    predictions: per sentence, the predicted tags.
    references: per sentence, the gold tags.
Returns:
    precision, recall, f1: floats in [0, 1]; per_type: {type: {precision, recall, f1, support}}.
"""


class Ner(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="Tjong Kim Sang and Buchholz 2000 (conlleval); Nakayama 2018, seqeval.",
            inputs_description=_KWARGS,
            features=datasets.Features(
                {
                    "predictions": datasets.Sequence(datasets.Value("string")),
                    "references": datasets.Sequence(datasets.Value("string")),
                }
            ),
        )

    def _compute(self, predictions, references):
        return ner_scores(predictions, references)
