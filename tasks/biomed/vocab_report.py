"""How vocabularies split a list of terms: subwords per term and the share of terms kept whole.

BioMegatron's point about vocabulary: a vocabulary learned from biomedical text keeps domain
terms in fewer pieces than a general one of the same size. For each vocabulary (any megazoo
tokenizer spec: a `megazoo tokenizer train` folder, bert-wordpiece, ...):

    mean_subwords   the mean number of subwords a term becomes
    whole_share     the share of terms that stay one token
    max_subwords    the most pieces of any term

`write_report` writes report.json, table.md (one row per vocabulary) and subwords.png (the
distribution of subwords per term, one bar set per vocabulary).
"""

from __future__ import annotations

import json
from pathlib import Path


def read_terms(path: str | Path) -> list[str]:
    """One term per line (blank lines skipped); `file:line: not valid UTF-8` for undecodable bytes."""
    from megazoo.tasks.biomed.data import read_text

    terms = [line.strip() for line in read_text(path, "a text file, one term per line").splitlines() if line.strip()]
    if not terms:
        raise ValueError(f"{path}: no terms (one term per line)")
    return terms


def subword_counts(tokenizer, terms: list[str]) -> list[int]:
    return [len(ids) for ids in tokenizer.encode_batch(terms)]


def vocabulary_row(name: str, tokenizer, terms: list[str]) -> dict:
    counts = subword_counts(tokenizer, terms)
    return {"name": name, "vocab_size": tokenizer.vocab_size, "terms": len(terms),
            "mean_subwords": sum(counts) / len(counts), "whole_share": sum(c == 1 for c in counts) / len(counts),
            "max_subwords": max(counts), "counts": counts}


def compare(vocabularies: dict, terms: list[str]) -> list[dict]:
    """One row per vocabulary ({name: tokenizer}); the first is the reference of `reduction`
    (1 - mean / reference mean: the share of subwords saved against it)."""
    rows = [vocabulary_row(name, tok, terms) for name, tok in vocabularies.items()]
    ref = rows[0]["mean_subwords"]
    for r in rows:
        r["reduction_vs_first"] = 1 - r["mean_subwords"] / ref
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| vocabulary | size | terms | subwords per term | kept whole | most pieces | fewer subwords than "
             f"{rows[0]['name']} |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['vocab_size']} | {r['terms']} | {r['mean_subwords']:.3f} | "
                     f"{r['whole_share']:.1%} | {r['max_subwords']} | {r['reduction_vs_first']:.1%} |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    top = min(max(max(r["counts"]) for r in rows), 10)
    fig, ax = plt.subplots(figsize=(6, 3.2), dpi=90)
    width = 0.8 / len(rows)
    for k, r in enumerate(rows):
        share = [sum(min(c, top) == n for c in r["counts"]) / len(r["counts"]) for n in range(1, top + 1)]
        ax.bar([n + (k - (len(rows) - 1) / 2) * width for n in range(1, top + 1)], share, width,
               label=f"{r['name']} (mean {r['mean_subwords']:.2f})")
    ax.set_xlabel(f"subwords per term ({top} = {top} or more)")
    ax.set_ylabel("share of terms")
    ax.set_xticks(range(1, top + 1))
    ax.set_title(f"{rows[0]['terms']} terms split by each vocabulary", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def write_report(rows: list[dict], out_dir: str | Path, terms: list[str] | None = None,
                 overwrite: bool = False) -> dict[str, Path]:
    """Write the three files into a scratch folder, moved to `out_dir` only when complete (an
    existing non-empty `out_dir` only with `overwrite`, and then replaced only on success)."""
    from megazoo.core.fs import atomic_folder

    out = Path(out_dir)
    names = {"json": "report.json", "table": "table.md", "png": "subwords.png"}
    record = {"vocabularies": [{k: v for k, v in r.items() if k != "counts"} for r in rows]}
    if terms is not None:
        record["per_term"] = [{"term": t, **{r["name"]: r["counts"][i] for r in rows}} for i, t in enumerate(terms)]
    with atomic_folder(out, overwrite) as tmp:
        (tmp / names["json"]).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        (tmp / names["table"]).write_text(table(rows), encoding="utf-8")
        plot(rows, tmp / names["png"])
    return {key: out / name for key, name in names.items()}
