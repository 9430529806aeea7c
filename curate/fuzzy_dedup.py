"""Fuzzy deduplication: MinHash LSH, Jaccard verification, connected components, a keep policy.

1. Signatures (per shard, on the workers): a document's shingles - `shingle: word` (`shingle_size`
   words of its normalised text) or `shingle: char` (`shingle_size` characters of its raw text, as
   NVIDIA's find_duplicates.py) - are hashed (CRC-32) and turned into `permutations` MinHash values
   by datasketch (`MinHash.update_batch`, all permutations on all shingles at once in numpy).
2. Banding (per band, across all partitions): the signature is cut into `bands` bands of `rows`
   values; documents whose band hashes to the same bucket in any band are LSH candidates. Each
   band is one task that reads every partition's bucket keys, so on Dask the grouping happens on
   the workers, across partitions.
3. Verification (per shard group): each LSH candidate's exact Jaccard similarity of the shingle
   sets is computed from the texts; pairs at or above `candidate_threshold` are the candidate pairs
   (NVIDIA's find_duplicates.py keeps those above 0.5), those at or above `threshold` (the group
   threshold: 0.9 in NVIDIA's group_duplicate_url.py as MT-NLG ran it) are edges.
4. Connected components of the edges (union-find over all partitions' edges); in each component one
   document survives by the `keep` policy - `first` in shard order, `longest` (most characters;
   ties: first), or `priority`: the copy from the dataset listed first in `priority` (MT-NLG keeps
   the copy of the highest-priority dataset; a dataset is the first folder of a shard's path, as
   for the blend; datasets not listed rank after the listed ones; ties: first) - and the others are
   removed with the reason.

LSH: a pair with Jaccard s becomes a candidate with probability 1 - (1 - s**rows)**bands; bands x
rows must equal permutations (rows is derived from the two when not given), and a setting whose
probability at `threshold` is below 0.5 is refused (it cannot reach the threshold). Defaults: 5-word
shingles, 120 permutations = 20 bands x 6 rows (half the pairs at 0.61 become candidates, 99.8% of
those at 0.8), threshold 0.8, first copy kept. `preset: nvidia`: 5-character shingles, 100
permutations in 10 bands (of 10 rows), candidates above 0.5, groups above 0.9.
"""

from __future__ import annotations

import hashlib
import zlib
from collections import defaultdict

from megazoo.curate.errors import CurateError
from megazoo.curate.exact_dedup import normalise
from megazoo.curate.shards import read_shard

FUZZY_DEFAULTS = {"preset": None, "threshold": 0.8, "candidate_threshold": None, "shingle": "word",
                  "shingle_size": 5, "permutations": 120, "bands": 20, "rows": 6, "seed": 1, "all_pairs_below": 32,
                  "keep": "first", "priority": None}
PRESETS = {"nvidia": {"shingle": "char", "shingle_size": 5, "permutations": 100, "bands": 10, "rows": 10,
                      "candidate_threshold": 0.5, "threshold": 0.9}}
SHINGLES = ("word", "char")
KEEP = ("first", "longest", "priority")
SHIFT = 32  # a document's key: shard index << SHIFT | position in the shard (orders by shard, then line)


def crc32(data: bytes) -> int:
    return zlib.crc32(data)


def candidate_probability(similarity: float, bands: int, rows: int) -> float:
    return 1.0 - (1.0 - similarity ** rows) ** bands


# the largest accepted values: far beyond real use (NeMo/MT-NLG use 100-500 permutations), and
# small enough that a signature (8 bytes x permutations per document) cannot reach the allocator
MAX_PERMUTATIONS = 8192
FUZZY_BOUNDS = {"shingle_size": (1, 1000), "permutations": (1, MAX_PERMUTATIONS), "bands": (1, MAX_PERMUTATIONS),
                "rows": (1, MAX_PERMUTATIONS), "seed": (0, 2**32 - 1), "all_pairs_below": (2, 1024)}


def _share(where: str, name: str, value, allow_none: bool = False):
    if value is None and allow_none:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value <= 1:
        raise CurateError(f"{where}.{name}: {value!r}; needs a Jaccard similarity in (0, 1]")
    return value


def check_config(cfg: dict, where: str = "fuzzy-dedup") -> dict:
    """The settings with defaults (a preset's values under the given ones)."""
    from megazoo.curate.settings import check_keys, number

    check_keys(where, cfg, FUZZY_DEFAULTS)
    given = dict(cfg)
    preset = given.get("preset")
    if preset is not None and preset not in PRESETS:
        raise CurateError(f"{where}.preset: {preset!r}; choose one of {', '.join(PRESETS)} (or leave it out)")
    cfg = {**FUZZY_DEFAULTS, **(PRESETS[preset] if preset else {}), **given}
    for name, (lo, hi) in FUZZY_BOUNDS.items():
        cfg[name] = number(f"{where}.{name}", cfg[name], lo, hi, whole=True)
    cfg["threshold"] = _share(where, "threshold", cfg["threshold"])
    cfg["candidate_threshold"] = _share(where, "candidate_threshold", cfg["candidate_threshold"], allow_none=True)
    if cfg["candidate_threshold"] is not None and cfg["candidate_threshold"] > cfg["threshold"]:
        raise CurateError(f"{where}.candidate_threshold: {cfg['candidate_threshold']} is above the group threshold "
                          f"{cfg['threshold']}; candidates are the pairs kept for grouping, so give a lower value")
    if cfg["shingle"] not in SHINGLES:
        raise CurateError(f"{where}.shingle: {cfg['shingle']!r}; choose word or char (--shingle char:5 or word:5)")
    if cfg["keep"] not in KEEP:
        raise CurateError(f"{where}.keep: {cfg['keep']!r}; choose one of {', '.join(KEEP)}")
    priority = cfg["priority"]
    if isinstance(priority, str):
        priority = [p for p in priority.split(",") if p]
    if priority is not None and (not isinstance(priority, list) or not priority
                                 or not all(isinstance(p, str) and p for p in priority)):
        raise CurateError(f"{where}.priority: {cfg['priority']!r}; give dataset names in order (--priority web,books)")
    if priority and len(set(priority)) != len(priority):
        raise CurateError(f"{where}.priority: {','.join(priority)} names a dataset twice; list each once")
    if (cfg["keep"] == "priority") != bool(priority):
        raise CurateError(f"{where}: keep `priority` and a `priority` list go together (--keep priority "
                          f"--priority DATASET,...); got keep {cfg['keep']} and priority {cfg['priority']!r}")
    cfg["priority"] = priority
    if "rows" not in given and cfg["bands"] and cfg["permutations"] % cfg["bands"] == 0:
        cfg["rows"] = cfg["permutations"] // cfg["bands"]
    b, r, p = cfg["bands"], cfg["rows"], cfg["permutations"]
    if b * r != p:
        raise CurateError(f"{where}: bands {b} x rows {r} = {b * r}, not permutations {p}; LSH cuts the {p} "
                          f"MinHash values into bands of rows, so set bands x rows = permutations "
                          f"(e.g. bands 20, rows 6 for 120)")
    caught = candidate_probability(float(cfg["threshold"]), b, r)
    if caught < 0.5:
        raise CurateError(f"{where}: bands {b} x rows {r} makes a pair at the threshold {cfg['threshold']} a "
                          f"candidate with probability {caught:.2f}; it cannot reach the threshold - use more "
                          f"bands and fewer rows (e.g. 20 x 6 for threshold 0.8)")
    return cfg


def dataset_of(rel: str) -> str:
    """A shard's dataset (source): the first folder of its path, `corpus` for shards at the top."""
    from pathlib import PurePosixPath

    parts = PurePosixPath(rel).parts
    return parts[0] if len(parts) > 1 else "corpus"


def check_priority(cfg: dict, in_dir, where: str = "fuzzy-dedup") -> None:
    """A priority list may name only datasets of the input (before any work starts)."""
    from megazoo.curate.shards import list_shards

    if not cfg.get("priority"):
        return
    present = sorted({dataset_of(rel) for rel in list_shards(in_dir)})
    unknown = [p for p in cfg["priority"] if p not in present]
    if unknown:
        raise CurateError(f"{where}.priority: {unknown[0]} is not a dataset of {in_dir} (datasets: "
                          f"{', '.join(present)}; a dataset is the first folder of a shard's path)")


def shingles(text: str, size: int) -> set[str]:
    words = normalise(text).split()
    if len(words) <= size:
        return {" ".join(words)}
    return {" ".join(words[i:i + size]) for i in range(len(words) - size + 1)}


def char_shingles(text: str, size: int) -> set[str]:
    """Every `size`-character piece of the raw text (NVIDIA's find_duplicates.py shingles)."""
    if len(text) <= size:
        return {text}
    return {text[i:i + size] for i in range(len(text) - size + 1)}


def shingle_set(text: str, cfg: dict) -> set[str]:
    if cfg.get("shingle", "word") == "char":
        return char_shingles(text, cfg["shingle_size"])
    return shingles(text, cfg["shingle_size"])


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if (a or b) else 1.0


def signature(text: str, cfg: dict):
    from datasketch import MinHash

    m = MinHash(num_perm=cfg["permutations"], seed=cfg["seed"], hashfunc=crc32)
    items = [s.encode("utf-8") for s in shingle_set(text, cfg)]
    # update_batch makes a shingles x permutations matrix: in chunks, so a long document's memory
    # stays bounded (about 3 x 8 MiB x 16); the minimum over chunks is the same signature
    step = max(1, (1 << 20) // cfg["permutations"])
    for start in range(0, len(items), step):
        m.update_batch(items[start:start + step])
    return m.hashvalues


def shard_bands(in_dir: str, rel: str, index: int, key: str, cfg: dict) -> dict:
    """One partition's bucket keys: {"ids": [...], "keys": doc keys (int64, n), "buckets": one 64-bit
    hash per document and band (uint64, n x bands)} - numpy arrays, cheap to move between workers."""
    import numpy as np

    docs = read_shard(in_dir, rel, key)
    rows, bands = cfg["rows"], cfg["bands"]
    buckets = np.zeros((len(docs), bands), dtype=np.uint64)
    for pos, doc in enumerate(docs):
        values = signature(doc[key], cfg)
        for b in range(bands):
            digest = hashlib.blake2b(values[b * rows:(b + 1) * rows].tobytes(), digest_size=8).digest()
            buckets[pos, b] = int.from_bytes(digest, "little")
    keys = np.array([index << SHIFT | pos for pos in range(len(docs))], dtype=np.int64)
    return {"ids": [d["id"] for d in docs], "keys": keys, "buckets": buckets,
            "lengths": [len(d[key]) for d in docs]}


def partition_ids(partition: dict) -> tuple[list[str], list[int]]:
    return partition["ids"], partition["lengths"]


def band_pairs(band: int, all_pairs_below: int, *partitions) -> list[tuple[int, int]]:
    """Candidate pairs of one band across every partition: documents sharing a bucket. Buckets of
    fewer than `all_pairs_below` documents give all their pairs; larger ones pair each member with
    the first and with its neighbour in order (enough to connect a component, linear in size)."""
    import numpy as np

    if not partitions:
        return []
    buckets = np.concatenate([p["buckets"][:, band] for p in partitions])
    keys = np.concatenate([p["keys"] for p in partitions])
    order = np.lexsort((keys, buckets))  # by bucket, then by document
    buckets, keys = buckets[order], keys[order]
    starts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]])
    ends = np.r_[starts[1:], len(buckets)]
    pairs = set()
    for lo, hi in zip(starts[ends - starts > 1], ends[ends - starts > 1]):
        members = keys[lo:hi].tolist()
        if len(members) < all_pairs_below:
            pairs.update((a, c) for i, a in enumerate(members) for c in members[i + 1:])
        else:
            pairs.update((members[0], c) for c in members[1:])
            pairs.update(zip(members[1:], members[2:]))
    return sorted(pairs)


def verify(in_dir: str, rels: list[str], key: str, cfg: dict, pairs: list[tuple[int, int]]) -> list[tuple]:
    """(a, c, jaccard) of the LSH candidates whose exact shingle Jaccard reaches the candidate threshold
    (the group threshold when none is set)."""
    needed = defaultdict(set)
    for a, c in pairs:
        for k in (a, c):
            needed[k >> SHIFT].add(k)
    sets = {}
    mask = (1 << SHIFT) - 1
    for shard, keys in needed.items():
        docs = read_shard(in_dir, rels[shard], key)
        for k in keys:
            sets[k] = shingle_set(docs[k & mask][key], cfg)
    out = []
    low = cfg.get("candidate_threshold")
    low = cfg["threshold"] if low is None else low
    for a, c in pairs:
        j = jaccard(sets[a], sets[c])
        if j >= low:
            out.append((a, c, j))
    return out


def components(edges: list[tuple]) -> dict[int, int]:
    """node -> its component's smallest key (union-find, union by smaller root)."""
    parent: dict[int, int] = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, c, _ in edges:
        ra, rc = find(a), find(c)
        if ra != rc:
            parent[max(ra, rc)] = min(ra, rc)
    return {node: find(node) for node in parent}


def find_duplicates(in_dir: str, rels: list[str], key: str, cfg: dict, executor) -> tuple[dict, dict]:
    """({shard: {position: removal reason}}, statistics) for a folder of shards, on the executor.
    Decisions are keyed by the document's place (shard, position), never by its id, which a user's
    data may repeat."""
    from megazoo.core.argtypes import check_fits
    from megazoo.curate.shards import count_documents

    # every partition's band keys are held at once (in this process, or on the workers): refuse
    # a size this machine cannot hold before any signature is computed
    n_docs = sum(count_documents(in_dir, rel) for rel in rels)
    check_fits(n_docs * (8 * cfg["bands"] + 8 + 120), f"fuzzy-dedup's signature matrix ({n_docs:,} documents x "
               f"{cfg['bands']} bands)", "use fewer bands and permutations, or split the input and run on a Dask "
               "cluster with more memory")
    parts = [executor.submit(shard_bands, in_dir, rel, i, key, cfg) for i, rel in enumerate(rels)]
    band_tasks = [executor.submit(band_pairs, b, cfg["all_pairs_below"], *parts) for b in range(cfg["bands"])]
    candidates = sorted(set().union(*executor.gather(band_tasks))) if band_tasks else []
    by_shard = defaultdict(list)
    for a, c in candidates:
        by_shard[a >> SHIFT].append((a, c))
    found_pairs = []
    for found in executor.map(verify, [(in_dir, rels, key, cfg, by_shard[s]) for s in sorted(by_shard)],
                              desc="fuzzy-dedup verify"):
        found_pairs += found
    edges = sorted(e for e in found_pairs if e[2] >= cfg["threshold"])
    root = components(edges)
    gathered = executor.gather([executor.submit(partition_ids, p) for p in parts])
    ids = [g[0] for g in gathered]
    lengths = [g[1] for g in gathered]
    best = defaultdict(float)
    for a, c, j in edges:
        best[a], best[c] = max(best[a], j), max(best[c], j)
    groups = defaultdict(list)
    for node, r in sorted(root.items()):
        groups[r].append(node)
    mask = (1 << SHIFT) - 1
    rank = survivor_rank(cfg, rels, lengths)
    drop: dict[str, dict[str, str]] = {}
    for members in groups.values():
        keeper = min(members, key=rank)
        survivor = ids[keeper >> SHIFT][keeper & mask]
        for node in members:
            if node != keeper:
                drop.setdefault(rels[node >> SHIFT], {})[str(node & mask)] = (
                    f"fuzzy-dedup: near-duplicate of {survivor} (Jaccard up to {best[node]:.2f}, cluster of "
                    f"{len(members)}, kept by {cfg.get('keep', 'first')})")
    stats = {"lsh_candidates": len(candidates), "candidate_pairs": len(found_pairs), "verified_pairs": len(edges),
             "cluster_sizes": sorted((len(m) for m in groups.values()), reverse=True)}
    return drop, stats


def survivor_rank(cfg: dict, rels: list[str], lengths: list[list[int]]):
    """The sort key that puts a component's survivor first: by the keep policy, then shard order."""
    mask = (1 << SHIFT) - 1
    keep = cfg.get("keep", "first")
    if keep == "longest":
        return lambda node: (-lengths[node >> SHIFT][node & mask], node)
    if keep == "priority":
        order = {name: i for i, name in enumerate(cfg["priority"])}
        return lambda node: (order.get(dataset_of(rels[node >> SHIFT]), len(order)), node)
    return lambda node: node
