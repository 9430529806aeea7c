"""Domain-adaptive detoxification with self-generated data (SGEAT; Wang et al., NeurIPS 2022, arXiv 2202.04173).

The model generates (sample), its generations are scored for toxicity (profanity offline, any Hugging
Face classifier, or the Perspective API), the least toxic half is kept and preprocessed with
end-of-document tokens (filter), the model continues training on it, whole or adapters only, with
validation perplexity on the pretraining corpus (train, task `detox`), and Expected Maximum Toxicity
and Toxicity Probability are measured on RealToxicityPrompts (evaluate, score).

    from megazoo.tasks.detox import load_prompts, toxicity_metrics, make_scorer
    metrics = toxicity_metrics(scores, 25, [p.toxicity for p in load_prompts("prompts.jsonl")])

The stages are `megazoo task detox data|sample|train|evaluate` and the extras filter|score (see cli.py).
"""

from megazoo.tasks.detox.cache import ScoreCache
from megazoo.tasks.detox.data import Prompt, PromptsFormatError, load_prompts
from megazoo.tasks.detox.evaluate import toxicity_metrics
from megazoo.tasks.detox.perspective import PerspectiveClient, PerspectiveError
from megazoo.tasks.detox.scorers import make_scorer, score_texts

__all__ = ["PerspectiveClient", "PerspectiveError", "Prompt", "PromptsFormatError", "ScoreCache", "load_prompts",
           "make_scorer", "score_texts", "toxicity_metrics"]
