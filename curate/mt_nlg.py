"""The MT-NLG 530B training blend: Smith et al. 2022, "Using DeepSpeed and Megatron to Train
Megatron-Turing NLG 530B, A Large-Scale Generative Language Model" (arXiv:2201.11990), table 2
("Datasets used to train the MT-NLG model"): each dataset's tokens (billions), its weight in the
blend (% of the 270B training tokens) and the epochs that weight amounts to.

`megazoo curate blend --preset mt-nlg --map NAME=SOURCE ...` gives each mapped source the paper's
weight; `data_path({NAME: PREFIX})` writes the paper's blend over prefixes a user already has.
Datasets left unmapped are left out and the remaining weights renormalised (data.path normalises).

The figures were written from the paper as remembered; the paper itself could not be opened where
this was written, so check them against table 2 of arXiv:2201.11990 before a run that depends on them
(they are self-consistent: the weights sum to 100.1% and weight x 270B / tokens gives the epochs).
"""

from __future__ import annotations

from megazoo.curate.errors import CurateError

# name: (tokens in billions, weight in %, epochs) - table 2 of the paper, in its order
MT_NLG_TABLE = {
    "Books3": (25.7, 14.3, 1.5),
    "OpenWebText2": (14.8, 19.3, 3.6),
    "Stack Exchange": (11.6, 5.7, 1.4),
    "PubMed Abstracts": (4.4, 2.9, 1.8),
    "Wikipedia": (4.2, 4.8, 3.2),
    "Gutenberg (PG-19)": (2.7, 0.9, 0.9),
    "BookCorpus2": (1.5, 1.0, 1.8),
    "NIH ExPorter": (0.3, 0.2, 1.8),
    "Pile-CC": (49.8, 9.4, 0.5),
    "ArXiv": (20.8, 1.4, 0.2),
    "GitHub": (24.3, 1.6, 0.2),
    "CC-2020-50": (68.7, 13.0, 0.5),
    "CC-2021-04": (82.6, 15.7, 0.5),
    "RealNews": (21.9, 9.0, 1.1),
    "CC-Stories": (5.3, 0.9, 0.5),
}
PRESETS = {"mt-nlg": MT_NLG_TABLE}
TRAINING_TOKENS_B = 270  # the paper's training run: 270B tokens


def table(preset: str) -> dict[str, tuple[float, float, float]]:
    if preset not in PRESETS:
        raise CurateError(f"blend.preset: {preset!r}; choose one of {', '.join(PRESETS)}")
    return PRESETS[preset]


def check_map(preset: str, mapping, where: str = "blend.map") -> dict[str, str]:
    """{paper dataset: local name}, every dataset one of the table's (a one-line error otherwise)."""
    rows = table(preset)
    if not isinstance(mapping, dict) or not mapping:
        raise CurateError(f"{where}: give each dataset of the {preset} table its source (--map Books3=books ...; "
                          f"datasets: {', '.join(rows)})")
    for name, target in mapping.items():
        if name not in rows:
            import difflib

            close = difflib.get_close_matches(str(name), list(rows), n=1)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            raise CurateError(f"{where}.{name}: not a dataset of the {preset} table{hint} (datasets: {', '.join(rows)})")
        if not isinstance(target, str) or not target:
            raise CurateError(f"{where}.{name}: {target!r}; give a source folder name or a .bin/.idx prefix")
    return {str(n): str(t) for n, t in mapping.items()}


def weights(preset: str, mapping: dict[str, str]) -> dict[str, float]:
    """{local name: the paper's weight (%)}, summed where several datasets share one local name."""
    rows = table(preset)
    out: dict[str, float] = {}
    for name, target in check_map(preset, mapping).items():
        out[target] = out.get(target, 0.0) + rows[name][1]
    return out


def data_path(mapping: dict[str, str], preset: str = "mt-nlg") -> str:
    """The `data.path` blend "W1 PREFIX1 W2 PREFIX2 ..." with the paper's weights (as fractions of
    the mapped datasets' total) for {dataset: .bin/.idx prefix}."""
    shares = weights(preset, mapping)
    total = sum(shares.values())
    return " ".join(f"{w / total:.6g} {prefix}" for prefix, w in shares.items())
