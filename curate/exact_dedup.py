"""Exact deduplication: documents whose normalised text (lowercased, punctuation dropped,
whitespace collapsed) hashes alike are copies; the first in shard order survives.

Hashing runs per shard (locally or on the workers); the decision needs every shard's hashes, so it
is made once here, and then each shard is rewritten without the copies.
"""

from __future__ import annotations

import hashlib
import re

from megazoo.curate.shards import read_shard

_NON_WORD = re.compile(r"[^\w\s]+", re.UNICODE)


def normalise(text: str) -> str:
    return " ".join(_NON_WORD.sub(" ", text.lower()).split())


def text_hash(text: str) -> str:
    return hashlib.md5(normalise(text).encode("utf-8")).hexdigest()


def shard_hashes(in_dir: str, rel: str, key: str) -> list[tuple[str, str]]:
    """(hash, id) of each document of a shard, in order."""
    return [(text_hash(d[key]), d["id"]) for d in read_shard(in_dir, rel, key)]


def choose(per_shard: list[list[tuple[str, str]]], rels: list[str]) -> tuple[dict, list[int]]:
    """({shard: {position: removal reason}} for every copy, sizes of the duplicate groups) from
    shard-ordered hashes. A copy is named by its place (shard, position), not by its id: two
    documents may share an id (a user's data, or one id for different texts) and only the copy goes."""
    first: dict[str, str] = {}
    size: dict[str, int] = {}
    drop: dict[str, dict[str, str]] = {}
    for rel, hashes in zip(rels, per_shard):
        for pos, (h, doc_id) in enumerate(hashes):
            if h in first:
                drop.setdefault(rel, {})[str(pos)] = f"exact-dedup: copy of {first[h]}"
                size[h] += 1
            else:
                first[h] = doc_id
                size[h] = 1
    return drop, sorted((s for s in size.values() if s > 1), reverse=True)
