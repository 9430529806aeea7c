"""A curation recipe: YAML naming the input, the output and the stages in order.

    input: data/raw            # a folder of shards; one subfolder per source for blending
    output: runs/curate
    text_key: text
    stages:                    # run in this order; a stage set to false is skipped
      filter: {min_words: 50}
      quality: {reference: data/reference, mode: pareto}
      exact-dedup: {}
      fuzzy-dedup: {threshold: 0.8, shingle_size: 5, permutations: 128, bands: 16, rows: 8}
      decontaminate: {tasks: [eval/suite.yaml]}
      blend: {tokenizer: gpt2, sources: {web: {epochs: 1}, books: {epochs: 2}}}
    dask: {scheduler: null, workers: 0, timeout: 10}

Paths are relative to the current directory. `--set KEY=VALUE` changes any key (dotted:
`stages.fuzzy-dedup.threshold=0.7`; values are read as YAML; `stages.quality=false` skips a stage).
"""

from __future__ import annotations

from pathlib import Path

from megazoo.curate.errors import CurateError

STAGES = ("filter", "quality", "exact-dedup", "fuzzy-dedup", "decontaminate", "blend")
TOP_KEYS = ("input", "output", "text_key", "stages", "dask")


def _shipped(name: str) -> Path | None:
    try:
        from megazoo.core.train.recipes import recipe_dir

        for candidate in (recipe_dir() / name, recipe_dir() / f"{name}.yaml"):
            if candidate.is_file():
                return candidate
    except ImportError:  # pragma: no cover
        pass
    return None


def load(recipe: str, overrides: list[str]) -> dict:
    import yaml

    path = Path(recipe)
    if not path.is_file():
        path = _shipped(recipe)
        if path is None:
            raise CurateError(f"{recipe}: no such recipe file (and no shipped recipe of that name); "
                              f"give a YAML path or a stage ({', '.join(STAGES)})")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as err:
        raise CurateError(f"{path}: not UTF-8 text ({err.reason}); a recipe is a YAML file") from None
    except yaml.YAMLError as err:
        from megazoo.core.train.user_errors import yaml_message

        raise CurateError(yaml_message(path, err)) from None
    if not isinstance(data, dict):
        raise CurateError(f"{path}: a curation recipe is a mapping (input, output, stages, ...)")
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CurateError(f"--set {item}: expected KEY=VALUE (e.g. stages.fuzzy-dedup.threshold=0.7)")
        node = data
        parts = key.split(".")
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[parts[-1]] = yaml.safe_load(value) if value else None
    return check(data, str(path))


def check(data: dict, where: str) -> dict:
    for key in data:
        if key not in TOP_KEYS:
            raise CurateError(f"{where}: unknown key `{key}` (keys: {', '.join(TOP_KEYS)})")
    for key in ("input", "output"):
        if not data.get(key):
            raise CurateError(f"{where}: `{key}` is not set (a folder path)")
    stages = data.get("stages") or {}
    if not isinstance(stages, dict) or not stages:
        raise CurateError(f"{where}: `stages` must map stage names to their settings ({', '.join(STAGES)})")
    for name, cfg in stages.items():
        if name not in STAGES:
            import difflib

            close = difflib.get_close_matches(str(name), STAGES, n=1)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            raise CurateError(f"{where}: stages.{name}: unknown stage{hint} (stages: {', '.join(STAGES)})")
        if cfg is not None and cfg is not False and not isinstance(cfg, dict):
            raise CurateError(f"{where}: stages.{name}: expected a mapping of settings, null (defaults) or "
                              f"false (skip), got {cfg!r}")
    if "blend" in stages and list(stages)[-1] != "blend":
        raise CurateError(f"{where}: stages.blend must be the last stage")
    data.setdefault("text_key", "text")
    data["dask"] = {"scheduler": None, "workers": 0, "timeout": 10, **(data.get("dask") or {})}
    return data
