"""Fuzzy deduplication: MinHash LSH with Jaccard verification and connected components.

1. Signatures (per shard, on the workers): a document's word shingles (`shingle_size` words of its
   normalised text) are hashed (CRC-32) and turned into `permutations` MinHash values by datasketch
   (`MinHash.update_batch`, which applies all permutations to all shingles at once in numpy).
2. Banding (per band, across all partitions): the signature is cut into `bands` bands of `rows`
   values; documents whose band hashes to the same bucket in any band are candidate pairs. Each
   band is one task that reads every partition's bucket keys for that band, so on Dask the
   grouping happens on the workers, across partitions.
3. Verification (per shard group): each candidate pair's true Jaccard similarity of the shingle
   sets is computed from the texts; pairs at or above `threshold` are edges.
4. Connected components of the edges (union-find over all partitions' edges); in each component
   the first document in shard order survives and the others are removed with the reason.

LSH: a pair with Jaccard s becomes a candidate with probability 1 - (1 - s**rows)**bands; bands x
rows must equal permutations, and a setting whose probability at `threshold` is below 0.5 is
refused (it cannot reach the threshold). Defaults: 5-word shingles, 120 permutations = 20 bands x
6 rows (half the pairs at 0.61 become candidates, 99.8% of those at 0.8), threshold 0.8.
"""

from __future__ import annotations

import hashlib
import zlib
from collections import defaultdict

from megazoo.curate.errors import CurateError
from megazoo.curate.exact_dedup import normalise
from megazoo.curate.shards import read_shard

FUZZY_DEFAULTS = {"threshold": 0.8, "shingle_size": 5, "permutations": 120, "bands": 20, "rows": 6,
                  "seed": 1, "all_pairs_below": 32}
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


def check_config(cfg: dict, where: str = "fuzzy-dedup") -> dict:
    from megazoo.curate.settings import check_keys, number

    check_keys(where, cfg, FUZZY_DEFAULTS)
    cfg = {**FUZZY_DEFAULTS, **cfg}
    for name, (lo, hi) in FUZZY_BOUNDS.items():
        cfg[name] = number(f"{where}.{name}", cfg[name], lo, hi, whole=True)
    if not isinstance(cfg["threshold"], (int, float)) or isinstance(cfg["threshold"], bool) \
            or not 0 < cfg["threshold"] <= 1:
        raise CurateError(f"{where}.threshold: {cfg['threshold']!r}; needs a Jaccard similarity in (0, 1]")
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


def shingles(text: str, size: int) -> set[str]:
    words = normalise(text).split()
    if len(words) <= size:
        return {" ".join(words)}
    return {" ".join(words[i:i + size]) for i in range(len(words) - size + 1)}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if (a or b) else 1.0


def signature(text: str, cfg: dict):
    from datasketch import MinHash

    m = MinHash(num_perm=cfg["permutations"], seed=cfg["seed"], hashfunc=crc32)
    items = [s.encode("utf-8") for s in shingles(text, cfg["shingle_size"])]
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
    return {"ids": [d["id"] for d in docs], "keys": keys, "buckets": buckets}


def partition_ids(partition: dict) -> list[str]:
    return partition["ids"]


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
    """(a, c, jaccard) of the candidate pairs whose true shingle Jaccard reaches the threshold."""
    needed = defaultdict(set)
    for a, c in pairs:
        for k in (a, c):
            needed[k >> SHIFT].add(k)
    sets = {}
    mask = (1 << SHIFT) - 1
    for shard, keys in needed.items():
        docs = read_shard(in_dir, rels[shard], key)
        for k in keys:
            sets[k] = shingles(docs[k & mask][key], cfg["shingle_size"])
    out = []
    for a, c in pairs:
        j = jaccard(sets[a], sets[c])
        if j >= cfg["threshold"]:
            out.append((a, c, round(j, 4)))
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
    edges = []
    for found in executor.map(verify, [(in_dir, rels, key, cfg, by_shard[s]) for s in sorted(by_shard)],
                              desc="fuzzy-dedup verify"):
        edges += found
    edges.sort()
    root = components(edges)
    ids = executor.gather([executor.submit(partition_ids, p) for p in parts])
    best = defaultdict(float)
    for a, c, j in edges:
        best[a], best[c] = max(best[a], j), max(best[c], j)
    sizes = defaultdict(int)
    for node, r in root.items():
        sizes[r] += 1
    mask = (1 << SHIFT) - 1
    drop: dict[str, dict[str, str]] = {}
    for node, r in sorted(root.items()):
        if node != r:
            survivor = ids[r >> SHIFT][r & mask]
            drop.setdefault(rels[node >> SHIFT], {})[str(node & mask)] = (
                f"fuzzy-dedup: near-duplicate of {survivor} (Jaccard up to {best[node]:.2f}, cluster of {sizes[r]})")
    stats = {"candidate_pairs": len(candidates), "verified_pairs": len(edges),
             "cluster_sizes": sorted(sizes.values(), reverse=True)}
    return drop, stats
