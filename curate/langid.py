"""Language identification with py3langid: a maintained fork of langid.py (Lui & Baldwin 2012) whose
naive Bayes model over byte n-grams (97 languages) ships inside the wheel, so it works offline. The
project does not train its own model. Probabilities are normalised (norm_probs=True), so
`min_score` is the model's confidence in its best language."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1)
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def identify(text: str) -> tuple[str, float]:
    """(ISO 639-1 language, confidence in [0, 1]) of a text."""
    lang, score = _identifier().classify(text)
    return lang, float(score)


def language_reason(text: str, languages: list[str], min_score: float) -> str | None:
    """Why a document fails the language rule, or None when it passes."""
    lang, score = identify(text)
    if lang not in languages:
        return f"language {lang} ({score:.2f}) not in {','.join(languages)}"
    if score < min_score:
        return f"language {lang} confidence {score:.2f} < {min_score}"
    return None
