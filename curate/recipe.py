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
Every key is checked when the recipe is loaded, before any stage runs: unknown keys (named with the
nearest valid one), numbers out of bounds, NaN and infinity are refused, and so is an output that
is, contains or lies inside an input (the input folder, the quality reference, the evaluation
files, the recipe itself): core.fs.check_paths.
"""

from __future__ import annotations

from pathlib import Path

from megazoo.curate.errors import CurateError

STAGES = ("filter", "quality", "exact-dedup", "fuzzy-dedup", "decontaminate", "blend")
TOP_KEYS = ("input", "output", "text_key", "stages", "dask")
DASK_KEYS = ("scheduler", "workers", "timeout")
MAX_WORKERS = 1024  # local Dask worker processes
MAX_TIMEOUT = 86400.0  # seconds to wait for a scheduler


def _shipped(name: str) -> Path | None:
    try:
        from megazoo.core.train.recipes import recipe_dir

        for candidate in (recipe_dir() / name, recipe_dir() / f"{name}.yaml"):
            if candidate.is_file():
                return candidate
    except ImportError:  # pragma: no cover
        pass
    return None


def load(recipe: str, overrides: list[str], overwrite: bool = False) -> dict:
    """The checked recipe (with `path`: the file it came from), its paths checked by the output policy."""
    import yaml

    path = Path(recipe)
    if not path.is_file():
        path = _shipped(recipe)
        if path is None:
            raise CurateError(f"{recipe}: no such recipe file (and no shipped recipe of that name); "
                              f"give a YAML path or a stage ({', '.join(STAGES)})")
    from megazoo.curate.shards import text_lines

    try:
        data = yaml.safe_load("".join(text_lines(path))) or {}
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
    data = check(data, str(path))
    data["path"] = str(path)
    check_recipe_paths(data, overwrite)
    fuzzy = data["stages"].get("fuzzy-dedup")
    if isinstance(fuzzy, dict) and fuzzy.get("priority") and Path(data["input"]).is_dir():
        from megazoo.curate.fuzzy_dedup import check_config, check_priority

        # the stages keep the input's folders, so its datasets are the fuzzy stage's datasets
        check_priority(check_config(dict(fuzzy)), data["input"], f"{path}: stages.fuzzy-dedup")
    return data


def check_recipe_paths(recipe: dict, overwrite: bool) -> None:
    """The output policy on the recipe's paths (core.fs.check_paths), before any stage runs."""
    from megazoo.core.fs import Declared, OutputRefused, PathRole, check_paths
    from megazoo.curate.pipeline import _task_paths

    where = recipe["path"]
    inputs = [Declared("input", recipe["input"], PathRole("input", "folder")),
              Declared("the recipe", where, PathRole("input", "file"))]
    stages = recipe["stages"]
    quality = stages.get("quality") or {}
    if quality.get("reference"):
        inputs.append(Declared("stages.quality.reference", quality["reference"], PathRole("input")))
    for task in (stages.get("decontaminate") or {}).get("tasks") or []:
        path = _task_paths([task])[0].partition("=")[2] or task
        inputs.append(Declared("stages.decontaminate.tasks", path, PathRole("input")))
    # resumable: the recipe's own earlier output is continued; pipeline.recipe_state refuses anything else
    output = Declared("output", recipe["output"], PathRole("output", "folder", resumable=True))
    try:
        check_paths(inputs, [output], overwrite)
    except OutputRefused as err:
        raise CurateError(f"{where}: {err}") from None


def check(data: dict, where: str) -> dict:
    from megazoo.curate.settings import check_keys, number, unknown_key

    check_keys(where + ":", data, TOP_KEYS, "key")
    for key in ("input", "output"):
        if not data.get(key):
            raise CurateError(f"{where}: `{key}` is not set (a folder path)")
        if not isinstance(data[key], str):
            raise CurateError(f"{where}: `{key}` is {data[key]!r}; give a folder path")
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
    # every stage's settings, checked now: a mistake in the last stage is found before the first runs
    from megazoo.curate.settings import check_stage_config

    for name, cfg in stages.items():
        if cfg is not False:
            check_stage_config(name, cfg, f"{where}: stages.{name}")
    data.setdefault("text_key", "text")
    if not isinstance(data["text_key"], str) or not data["text_key"]:
        raise CurateError(f"{where}: text_key is {data['text_key']!r}; give the JSON key of the text (e.g. text)")
    dask = data.get("dask") or {}
    if not isinstance(dask, dict):
        raise CurateError(f"{where}: dask: expected a mapping (scheduler, workers, timeout), got {dask!r}")
    for key in dask:
        if key not in DASK_KEYS:
            raise unknown_key(f"{where}: dask", key, DASK_KEYS)
    dask = {"scheduler": None, "workers": 0, "timeout": 10, **dask}
    if dask["scheduler"] is not None and not isinstance(dask["scheduler"], str):
        raise CurateError(f"{where}: dask.scheduler: {dask['scheduler']!r}; give an address (tcp://host:8786) or null")
    dask["workers"] = number(f"{where}: dask.workers", dask["workers"] or 0, 0, MAX_WORKERS, whole=True)
    dask["timeout"] = number(f"{where}: dask.timeout", dask["timeout"], 0, MAX_TIMEOUT, open_lo=True)
    data["dask"] = dask
    return data
