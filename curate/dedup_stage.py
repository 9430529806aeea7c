"""The two global stages, exact-dedup and fuzzy-dedup, with resume: the decision (which documents
go, by shard and position) is computed once from every shard and saved (`_decisions.json`); then
each unfinished shard is rewritten without them. A killed run reuses the decisions and the finished
shards; a rerun with other settings or changed input is refused before that (pipeline.py), so saved
decisions are only reused for the settings and input they were made from."""

from __future__ import annotations

import json
from pathlib import Path

from megazoo.core.fs import write_json_atomic
from megazoo.curate import exact_dedup, fuzzy_dedup
from megazoo.curate.shards import list_shards
from megazoo.curate.stages import pending, summarise, verify, write_shard


def _decide(name: str, cfg: dict, in_dir: str, key: str, executor) -> tuple[dict, dict]:
    rels = list_shards(in_dir)
    if name == "exact-dedup":
        hashes = executor.map(exact_dedup.shard_hashes, [(in_dir, rel, key) for rel in rels], desc=name)
        drop, sizes = exact_dedup.choose(hashes, rels)
        return drop, {"cluster_sizes": sizes}
    return fuzzy_dedup.find_duplicates(in_dir, rels, key, cfg, executor)


def run_dedup_stage(name: str, cfg: dict, in_dir, out_dir, key: str, executor) -> dict:
    in_dir, out_dir = str(in_dir), str(out_dir)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    saved = Path(out_dir) / "_decisions.json"
    if saved.is_file():
        decision = json.loads(saved.read_text())
    else:
        drop, stats = _decide(name, cfg, in_dir, key, executor)
        decision = {"drop": drop, "stats": stats}
        write_json_atomic(saved, decision)
    todo, done = pending(in_dir, out_dir)
    drop = executor.share(decision["drop"]) if executor.kind == "dask" else decision["drop"]
    results = executor.map(write_shard, [(drop, name, in_dir, out_dir, rel, key) for rel in todo],
                           desc=f"{name} write")
    verify(in_dir, out_dir, done + results)
    stats = dict(decision["stats"])
    sizes = stats.get("cluster_sizes", [])
    stats["clusters"] = len(sizes)
    stats["largest_clusters"] = sizes[:10]
    return summarise(name, out_dir, done + results, resumed=len(done), extra=stats)
