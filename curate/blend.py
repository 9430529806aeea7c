"""Blending: each source of the curated corpus becomes a `.bin/.idx` prefix (through the same
`preprocess` that `megazoo preprocess` runs), and the sources are mixed into the `data.path` blend
the trainer reads (core/data/blend.py): `"W1 PREFIX1 W2 PREFIX2 ..."`.

A source is the first folder of a shard's path below the curated folder (shards directly in it form
the source `corpus`). Per source give `weight` (a share of the training samples) or `epochs` (how
many times its tokens are seen: its weight becomes epochs x tokens, normalised - MT-NLG's table of
datasets lists epochs per source this way); sources not listed get weight by their tokens.
`preset: mt-nlg` with `map: {DATASET: SOURCE}` gives each mapped source the weight of the MT-NLG
paper's table 2 (curate/mt_nlg.py; several datasets mapped to one source add up; unmapped datasets
are left out and the weights renormalised); every source of the input must then be mapped.
Writes OUT/SOURCE.bin/.idx, OUT/blend.json and OUT/data_path.txt (the `data.path` value). A rerun
over unchanged shards with the same tokenizer reuses the .bin/.idx and only rewrites the weights.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from megazoo.core.fs import write_json_atomic, write_text_atomic
from megazoo.curate.errors import CurateError
from megazoo.curate.shards import list_shards

BLEND_DEFAULTS = {"sources": {}, "tokenizer": "gpt2", "workers": 1, "preset": None, "map": None}


def sources_of(folder) -> dict[str, list[str]]:
    """source name -> its non-empty JSONL shards (paths)."""
    out: dict[str, list[str]] = {}
    for rel in list_shards(folder):
        parts = Path(rel).parts
        name = parts[0] if len(parts) > 1 else "corpus"
        path = os.path.join(folder, rel)
        if os.path.getsize(path) > 0:
            out.setdefault(name, []).append(path)
    return out


def check_config(cfg: dict, where: str = "blend") -> dict:
    """The settings with defaults: known keys, `sources` a mapping of `weight` or `epochs` in bounds."""
    from megazoo.curate.settings import check_keys, number

    check_keys(where, cfg, BLEND_DEFAULTS)
    cfg = {**BLEND_DEFAULTS, **cfg}
    if not isinstance(cfg["tokenizer"], str) or not cfg["tokenizer"]:
        raise CurateError(f"{where}.tokenizer: {cfg['tokenizer']!r}; give a tokenizer name (gpt2) or folder")
    cfg["workers"] = number(f"{where}.workers", cfg["workers"], 1, 1024, whole=True)
    sources = cfg["sources"] or {}
    if not isinstance(sources, dict):
        raise CurateError(f"{where}.sources: expected a mapping source: {{weight: W}} or {{epochs: E}}, "
                          f"got {sources!r}")
    for name, entry in sources.items():
        if not isinstance(entry, dict) or len(entry) != 1 or set(entry) - {"weight", "epochs"}:
            raise CurateError(f"{where}.sources.{name}: give one of `weight: W` or `epochs: E`, got {entry!r}")
        (kind, value), = entry.items()
        # a weight is a share (normalised); epochs repeat a source: both far below 10**6 in real blends
        entry[kind] = number(f"{where}.sources.{name}.{kind}", value, 0, 10**6)
    cfg["sources"] = {str(n): dict(e) for n, e in sources.items()}
    if cfg["preset"] is not None or cfg["map"] is not None:
        from megazoo.curate import mt_nlg

        if cfg["preset"] is None:
            raise CurateError(f"{where}.map: maps the datasets of a preset; add --preset mt-nlg (preset: mt-nlg)")
        if cfg["sources"]:
            raise CurateError(f"{where}: give either `preset` (the paper's weights) or `sources` (your own), not both")
        cfg["map"] = mt_nlg.check_map(cfg["preset"], cfg["map"], f"{where}.map")
    return cfg


def preset_sources(cfg: dict, present) -> dict:
    """`sources` from a preset's table for the sources present in the input (all must be mapped)."""
    from megazoo.curate import mt_nlg

    shares = mt_nlg.weights(cfg["preset"], cfg["map"])
    unmapped = sorted(set(present) - set(shares))
    if unmapped:
        raise CurateError(f"blend.map: the source {unmapped[0]} of the input has no {cfg['preset']} dataset; map one "
                          f"to it (--map DATASET={unmapped[0]}) or leave the source out of the input")
    missing = sorted(set(shares) - set(present))
    if missing:
        raise CurateError(f"blend.map: {missing[0]} is not a source of the input (sources: {', '.join(sorted(present))})")
    return {name: {"weight": w} for name, w in shares.items()}


def weights(tokens: dict[str, int], spec: dict) -> dict[str, float]:
    """Normalised blend weights from per-source `weight` or `epochs` (tokens for unlisted sources)."""
    unknown = set(spec) - set(tokens)
    if unknown:
        raise CurateError(f"blend.sources.{sorted(unknown)[0]}: no such source in the curated corpus "
                          f"(sources: {', '.join(sorted(tokens))})")
    raw = {}
    for name, count in tokens.items():
        entry = spec.get(name) or {}
        if not isinstance(entry, dict) or set(entry) - {"weight", "epochs"} or len(entry) > 1:
            raise CurateError(f"blend.sources.{name}: give one of `weight: W` or `epochs: E`, got {entry!r}")
        value = next(iter(entry.values()), 1.0)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < float("inf"):
            raise CurateError(f"blend.sources.{name}: {value!r}; weight or epochs must be a number >= 0")
        if "weight" in entry:
            raw[name] = float(value)
        elif "epochs" in entry:
            raw[name] = float(value) * count
        else:
            raw[name] = float(count)
    total = sum(raw.values())
    if total <= 0:
        raise CurateError("blend: every source has weight 0")
    return {name: value / total for name, value in raw.items()}


def blend(folder, out_dir, cfg: dict, text_key: str = "text", progress: bool = False, final_dir=None,
          previous_dir=None) -> dict:
    """Tokenise each source and write the blend into `out_dir`; returns blend.json's content.
    `final_dir`: where out_dir will be once complete (the prefixes in data.path name it);
    `previous_dir`: a finished blend of the same shards whose .bin/.idx may be linked, not redone."""
    from megazoo.core.data.preprocess import preprocess

    cfg = check_config(cfg)
    final_dir = str(final_dir or out_dir)
    sources = sources_of(folder)
    if not sources:
        raise CurateError(f"{folder}: every shard is empty; nothing to blend")
    if cfg["preset"]:  # before any tokenisation: every source mapped, every mapped source there
        cfg = {**cfg, "sources": preset_sources(cfg, sources)}
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    for place in (out_dir, previous_dir):
        previous = _finished(place, cfg, sources) if place else None
        if previous is not None:  # the sources were tokenised already, only the weights may change
            tokens = {n: s["tokens"] for n, s in previous["sources"].items()}
            prefixes = {n: os.path.join(final_dir, n) for n in previous["sources"]}
            if place != out_dir:
                _link(previous, out_dir)
            return _write(out_dir, cfg, tokens, prefixes, sources)
    tokens, prefixes = {}, {}
    for name, paths in sorted(sources.items()):
        stats = preprocess(paths, cfg["tokenizer"], os.path.join(str(out_dir), name), workers=cfg["workers"],
                           append_eod=True, json_key=text_key, fmt="jsonl", progress=progress)
        tokens[name], prefixes[name] = stats.tokens, os.path.join(final_dir, name)
    return _write(out_dir, cfg, tokens, prefixes, sources)


def _link(previous: dict, out_dir) -> None:
    """The earlier blend's .bin/.idx into out_dir: hard links (the old folder is removed later, the
    links keep the data), copies where the file system has none."""
    import shutil

    for name, source in previous["sources"].items():
        for ext in (".bin", ".idx"):
            target = os.path.join(str(out_dir), name + ext)
            try:
                os.link(source["prefix"] + ext, target)
            except OSError:
                shutil.copy2(source["prefix"] + ext, target)


def _signature(paths: list[str]) -> list:
    return [[p, os.path.getsize(p), os.stat(p).st_mtime_ns] for p in paths]


def _finished(out_dir, cfg: dict, sources: dict) -> dict | None:
    """blend.json of an earlier run over the same shards and tokenizer whose .bin/.idx are there."""
    path = Path(out_dir) / "blend.json"
    if not path.is_file():
        return None
    try:
        previous = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    same = (previous.get("tokenizer") == cfg["tokenizer"]
            and previous.get("inputs") == {n: _signature(p) for n, p in sorted(sources.items())})
    files = all(os.path.isfile(s["prefix"] + ext) for s in previous.get("sources", {}).values() for ext in (".bin", ".idx"))
    return previous if same and files else None


def _write(out_dir, cfg: dict, tokens: dict, prefixes: dict, sources: dict) -> dict:
    shares = weights(tokens, dict(cfg["sources"] or {}))
    data_path = " ".join(f"{shares[n]:.6g} {prefixes[n]}" for n in sorted(prefixes))
    result = {"data_path": data_path, "tokenizer": cfg["tokenizer"], "preset": cfg.get("preset"), "map": cfg.get("map"),
              "inputs": {n: _signature(p) for n, p in sorted(sources.items())},
              "sources": {n: {"prefix": prefixes[n], "tokens": tokens[n], "weight": shares[n],
                              **((cfg["sources"] or {}).get(n) or {})} for n in sorted(prefixes)}}
    write_json_atomic(Path(out_dir) / "blend.json", result, indent=1)
    write_text_atomic(Path(out_dir) / "data_path.txt", data_path + "\n")
    return json.loads(json.dumps(result))
