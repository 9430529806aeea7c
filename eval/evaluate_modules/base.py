"""A row of the metric table as an ``evaluate.Metric``: the class every generated module script subclasses."""
from __future__ import annotations

import datasets
import evaluate

from megazoo.eval.evaluate_modules.table import SPECS, Spec


def _column(kind):
    return datasets.Sequence(datasets.Value(kind[0])) if isinstance(kind, list) else datasets.Value(kind)


def features(spec: Spec):
    """evaluate's `features`: one datasets.Features, or a list when several layouts are accepted."""
    layouts = [datasets.Features({name: _column(kind) for name, kind in layout.items()}) for layout in spec.inputs]
    return layouts[0] if len(layouts) == 1 else layouts


class TableMetric(evaluate.Metric):
    """An ``evaluate`` metric defined by the row SPECS[metric]; a generated script sets `metric`.
    evaluate names the module after the subclass (Squad -> squad), so each script names its class so."""

    metric: str = ""

    def _info(self):
        spec = SPECS[self.metric]
        return evaluate.MetricInfo(description=spec.description, citation=spec.citation,
                                   inputs_description=spec.usage, features=features(spec))

    def _compute(self, **inputs_and_options):
        return SPECS[self.metric].compute(**inputs_and_options)
