"""Running a stage over every shard with resume: the shape all stages share.

A per-document stage is a function `fn(docs, params) -> (kept, removed_records, extra_stats)`.
`run_shard_stage` runs it once per input shard that has no done marker in the output folder yet,
on the executor, and sums the shard statistics into the stage's `_stage.json`. A run that was killed
therefore redoes only the shards it had not finished. Deduplication is global (it needs every
shard's hashes) but ends the same way: `write_shard` drops the chosen documents (by shard and
position) shard by shard. Before the counts are summed, `verify` checks them against the files.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from megazoo.core.fs import write_json_atomic
from megazoo.curate.errors import CurateError
from megazoo.curate.shards import (count_documents, finish_shard, list_shards, output_name, read_done, read_shard,
                                    removed_path, words)


def shard_stats(rel: str, docs: list[dict], kept: list[dict], removed: list[dict], key: str, extra: dict) -> dict:
    reasons = Counter(r["reason"].split(":", 1)[0] for r in removed)
    return {"shard": rel, "docs_in": len(docs), "docs_out": len(kept),
            "words_in": sum(words(d[key]) for d in docs), "words_out": sum(words(d[key]) for d in kept),
            "removed": len(removed), "reasons": dict(reasons), "extra": extra}


def process_shard(fn, params: dict, in_dir: str, out_dir: str, rel: str) -> dict:
    """Read one shard, apply a per-document stage, write survivors + removed records + done marker."""
    key = params["text_key"]
    docs = read_shard(in_dir, rel, key)
    kept, removed, extra = fn(docs, params)
    return finish_shard(out_dir, rel, kept, removed, shard_stats(rel, docs, kept, removed, key, extra))


def write_shard(drop: dict, stage: str, in_dir: str, out_dir: str, rel: str, key: str) -> dict:
    """Dedup's last step: write a shard without the documents in `drop` ({shard: {position: reason}})."""
    docs = read_shard(in_dir, rel, key)
    mine = drop.get(rel, {})
    kept = [d for pos, d in enumerate(docs) if str(pos) not in mine]
    removed = [{"id": d["id"], "stage": stage, "reason": mine[str(pos)]} for pos, d in enumerate(docs)
               if str(pos) in mine]
    return finish_shard(out_dir, rel, kept, removed, shard_stats(rel, docs, kept, removed, key, {}))


def pending(in_dir, out_dir) -> tuple[list[str], list[dict]]:
    """(shards still to do, the stats of those already done)."""
    todo, done = [], []
    for rel in list_shards(in_dir):
        stats = read_done(out_dir, rel)
        (todo.append(rel) if stats is None else done.append(stats))
    return todo, done


def run_shard_stage(name: str, fn, params: dict, in_dir, out_dir, executor) -> dict:
    """Run a per-document stage over all unfinished shards; return (and save) its summed statistics."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    todo, done = pending(in_dir, out_dir)
    params = executor.share(params) if executor.kind == "dask" else params
    results = executor.map(process_shard, [(fn, params, str(in_dir), str(out_dir), rel) for rel in todo],
                           desc=name)
    verify(in_dir, out_dir, done + results)
    return summarise(name, out_dir, done + results, resumed=len(done))


def verify(in_dir, out_dir, shard_results: list[dict]) -> None:
    """Check every shard's counts against the files: documents read from the input shard, lines of
    the output shard and of its removed records. A report never gives a count the files do not hold
    (a done marker of a shard that was changed afterwards, two shards written to one name)."""
    for s in shard_results:
        rel = s["shard"]
        found = {"docs_in": (Path(in_dir) / rel, count_documents(in_dir, rel)),
                 "docs_out": (Path(out_dir) / output_name(rel), _lines(Path(out_dir) / output_name(rel))),
                 "removed": (removed_path(out_dir, rel), _lines(removed_path(out_dir, rel)))}
        for field, (path, count) in found.items():
            if count != s[field]:
                raise CurateError(f"{path}: holds {count} documents, but the stage counted {s[field]} ({field}); "
                                  "a file was changed while or after the stage ran - rerun it with --overwrite")


def _lines(path: Path) -> int:
    if not path.is_file():
        return -1
    with open(path, "rb") as f:
        return sum(1 for line in f if line.strip())


def summarise(name: str, out_dir, shard_results: list[dict], resumed: int, extra: dict | None = None) -> dict:
    """Sum shard statistics into the stage's `_stage.json`."""
    total = {"stage": name, "shards": len(shard_results), "resumed_shards": resumed,
             "docs_in": 0, "docs_out": 0, "words_in": 0, "words_out": 0, "removed": 0,
             "reasons": Counter(), "extra": {}}
    for s in sorted(shard_results, key=lambda s: s["shard"]):
        for k in ("docs_in", "docs_out", "words_in", "words_out", "removed"):
            total[k] += s[k]
        total["reasons"].update(s["reasons"])
        for k, v in s.get("extra", {}).items():
            if isinstance(v, dict):
                total["extra"].setdefault(k, Counter()).update(v)
            else:
                total["extra"][k] = total["extra"].get(k, 0) + v
    total["reasons"] = dict(total["reasons"])
    total["extra"] = {k: dict(v) if isinstance(v, Counter) else v for k, v in total["extra"].items()}
    total["extra"].update(extra or {})
    write_json_atomic(Path(out_dir) / "_stage.json", json.loads(json.dumps(total)), indent=1)
    return total
