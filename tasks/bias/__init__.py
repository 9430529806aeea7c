"""Social-bias detection with few-shot instruction prompts (Prabhumoye et al., arXiv 2112.07868).

No fine-tuning: for each post, an instruction and a definition of the category, k labelled
exemplars from a small support repository (class-balanced nearest neighbours in embedding space),
then the post; the label is read from the LM's p(" Yes") against p(" No"); ROC-AUC per category.

    from megazoo.tasks.bias import load_posts, load_template, Repository, evaluate_posts
    posts = load_posts("SBIC.v2.tst.csv", "offensive")   # per-annotation or aggregated CSV
    template = load_template("offensive")                  # prompts.yaml (editable)

The paper's fine-tuned baseline is a BERT classifier trained on the same support CSV through the
core trainer (`task: bias`, megazoo.tasks.bias.builder; recipe `bias-classifier`) and evaluated on the
same test CSV with the same metrics and post ids (megazoo.tasks.bias.classifier).

The stages are `megazoo task bias data|train|evaluate|study ...` (see megazoo.tasks.bias.cli).
"""

from megazoo.tasks.bias.data import (CATEGORIES, Post, SbicFormatError, load_posts, read_aggregated,
                                     read_annotations)
from megazoo.tasks.bias.evaluate import bootstrap_ci, summarise, threshold_metrics, tune_threshold
from megazoo.tasks.bias.generate import generate_sbic
from megazoo.tasks.bias.prompts import Template, load_template
from megazoo.tasks.bias.selection import SelectionError, select

__all__ = ["CATEGORIES", "Post", "Repository", "SbicFormatError", "SelectionError", "Template", "bootstrap_ci",
           "evaluate_posts", "generate_sbic", "load_posts", "load_template", "read_aggregated", "read_annotations",
           "select", "summarise", "threshold_metrics", "tune_threshold"]


def __getattr__(name):  # the pipeline imports torch: load it on first use
    if name in ("Repository", "evaluate_posts"):
        from megazoo.tasks.bias import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'megazoo.tasks.bias' has no attribute {name!r}")
