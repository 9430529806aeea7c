"""The curation report: what each stage kept and removed, and why.

OUTPUT/report.json (every stage's statistics), OUTPUT/report.md (a table of documents and words in
and out per stage, the removal reasons, duplicate cluster sizes, decontamination hits per
benchmark), OUTPUT/report.png (documents and words kept after each stage) and OUTPUT/removed.jsonl
(`{"id", "stage", "reason"}` for every removed document, gathered from the stages' `_removed/`).
Words are whitespace-separated words (the report needs no tokenizer); the blend stage adds the
tokenizer's token counts.
"""

from __future__ import annotations

import json
from pathlib import Path

from megazoo.core.fs import atomic_file, write_json_atomic, write_text_atomic
from megazoo.curate.shards import REMOVED_DIR


def gather_removed(output, folders: list) -> int:
    count = 0
    with atomic_file(Path(output) / "removed.jsonl", "w") as out:
        for stage_dir in folders:
            folder = Path(stage_dir) / REMOVED_DIR
            for path in sorted(folder.rglob("*.jsonl")) if folder.is_dir() else []:
                for line in path.read_text(encoding="utf-8").splitlines():
                    if line.strip():
                        out.write(line + "\n")
                        count += 1
    return count


def markdown(results: list[dict], final: str, executor: str, workers: int) -> str:
    lines = ["# Curation report", "",
             f"Ran on: {executor} ({workers} worker{'s' if workers != 1 else ''}). Curated corpus: `{final}`.", "",
             "| stage | docs in | docs out | words in | words out | removed | resumed shards |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for s in results:
        lines.append(f"| {s['stage']} | {s['docs_in']:,} | {s['docs_out']:,} | {s['words_in']:,} | "
                     f"{s['words_out']:,} | {s['removed']:,} | {s.get('resumed_shards', 0)} |")
    for s in results:
        extra = s.get("extra", {})
        parts = []
        if s.get("reasons"):
            parts.append("reasons: " + ", ".join(f"{k} {v}" for k, v in sorted(s["reasons"].items(),
                                                                                 key=lambda kv: -kv[1])))
        if "cluster_sizes" in extra:
            sizes = extra["cluster_sizes"]
            parts.append(f"{len(sizes)} duplicate clusters, sizes {sizes[:20]}{' ...' if len(sizes) > 20 else ''}")
        if "candidate_pairs" in extra:
            parts.append(f"{extra['candidate_pairs']} candidate pairs, {extra['verified_pairs']} verified")
        if "documents_hit" in extra or "benchmarks" in extra:
            hits = extra.get("documents_hit", {})
            grams = extra.get("ngram_hits", {})
            parts.append("benchmarks hit (documents / n-grams): " + (", ".join(
                f"{b} {hits[b]} / {grams.get(b, 0)}" for b in sorted(hits)) or "none")
                + f"; checked against {', '.join(sorted(extra.get('benchmarks', {})))}"
                + (f"; {extra['frequent_ngrams_left']} frequent n-grams left alone"
                   if extra.get("frequent_ngrams_left") else ""))
        if "score_histogram" in extra:
            hist = extra["score_histogram"]
            parts.append("quality scores (bin: documents): " + ", ".join(f"{b} {hist[b]}" for b in sorted(hist)))
        if "data_path" in extra:
            parts.append(f"data.path: `{extra['data_path']}`; tokens {extra.get('tokens')}")
        if parts:
            lines += ["", f"**{s['stage']}**: " + "; ".join(parts)]
    lines += ["", "Removed documents with their reasons: `removed.jsonl`. Figure: `report.png`.", ""]
    return "\n".join(lines)


def plot(results: list[dict], path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["input"] + [s["stage"] for s in results]
    docs = [results[0]["docs_in"]] + [s["docs_out"] for s in results] if results else [0]
    words = [results[0]["words_in"]] + [s["words_out"] for s in results] if results else [0]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(names, docs, "o-", label="documents")
    ax.set_ylabel("documents kept")
    ax2 = ax.twinx()
    ax2.plot(names, words, "s--", color="tab:orange", label="words")
    ax2.set_ylabel("words kept")
    ax.set_title("megazoo curate: kept after each stage")
    fig.legend(loc="upper right", bbox_to_anchor=(0.88, 0.88))
    fig.tight_layout()
    with atomic_file(path) as f:
        fig.savefig(f, format="png", dpi=100)
    plt.close(fig)


def write_report(output, results: list[dict], final: str, executor: str = "local", workers: int = 1,
                 folders: list | None = None) -> dict:
    """The report files in `output`. `folders`: where the stages' folders are now (a scratch folder
    that is moved into place afterwards); by default the `folder` each stage's statistics name."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    removed = gather_removed(output, folders if folders is not None else [s["folder"] for s in results])
    report = {"final": final, "executor": executor, "workers": workers, "removed": removed,
              "stages": json.loads(json.dumps(results))}
    write_json_atomic(output / "report.json", report, indent=1)
    write_text_atomic(output / "report.md", markdown(results, final, executor, workers))
    if results:
        plot(results, output / "report.png")
    return report
