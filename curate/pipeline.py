"""Running stages: one stage on a folder (`megazoo curate STAGE`) or a recipe's stages in order
(`megazoo curate RECIPE`), each reading the previous stage's folder and writing its own
(`OUTPUT/NN-STAGE/`), then the report. Every stage resumes from its finished shards."""

from __future__ import annotations

from pathlib import Path

from megazoo.curate.errors import CurateError
from megazoo.curate.stages import run_shard_stage


def run_stage(name: str, cfg: dict | None, in_dir, out_dir, key: str, executor, progress: bool = True) -> dict:
    """Run one stage from `in_dir` into `out_dir`; return its statistics (also in out_dir/_stage.json)."""
    cfg = dict(cfg or {})
    in_dir, out_dir = str(in_dir), str(out_dir)
    if Path(in_dir).resolve() == Path(out_dir).resolve():
        raise CurateError(f"--output {out_dir}: the same folder as --input; give a new folder")
    if name == "filter":
        from megazoo.curate.filters import FilterConfig, filter_shard

        FilterConfig.from_dict(cfg, "filter")  # check the settings here, not on every worker
        return run_shard_stage(name, filter_shard, {"text_key": key, "config": cfg}, in_dir, out_dir, executor)
    if name == "quality":
        from megazoo.curate import quality

        cfg = quality.check_config(cfg)
        model = quality.load_or_train(cfg, in_dir, out_dir, key)
        params = {"text_key": key, "config": cfg, "model": model}
        return run_shard_stage(name, quality.quality_shard, params, in_dir, out_dir, executor)
    if name in ("exact-dedup", "fuzzy-dedup"):
        from megazoo.curate.dedup_stage import run_dedup_stage

        if name == "fuzzy-dedup":
            from megazoo.curate.fuzzy_dedup import check_config

            cfg = check_config(cfg)
        elif cfg:
            raise CurateError(f"exact-dedup.{sorted(cfg)[0]}: exact-dedup takes no settings")
        return run_dedup_stage(name, cfg, in_dir, out_dir, key, executor)
    if name == "decontaminate":
        from megazoo.curate.decontaminate import DECON_DEFAULTS, decontaminate_shard
        from megazoo.curate.eval_sets import benchmark_texts, ngram_index

        unknown = set(cfg) - set(DECON_DEFAULTS)
        if unknown:
            raise CurateError(f"decontaminate.{sorted(unknown)[0]}: unknown setting "
                              f"(settings: {', '.join(DECON_DEFAULTS)})")
        cfg = {**DECON_DEFAULTS, **cfg}
        for setting in ("ngram", "margin", "min_piece", "max_splits"):
            value = cfg[setting]
            if not isinstance(value, int) or isinstance(value, bool) or value < (1 if setting == "ngram" else 0):
                raise CurateError(f"decontaminate.{setting}: {value!r}; needs a whole number"
                                  f"{' >= 1' if setting == 'ngram' else ' >= 0'}")
        if isinstance(cfg["tasks"], str):
            cfg["tasks"] = [cfg["tasks"]]
        if not cfg["tasks"]:
            raise CurateError("decontaminate.tasks: no evaluation files given (--tasks FILE ..., a suite YAML, "
                              "NAME=PATH or `generated`)")
        texts = benchmark_texts(list(cfg["tasks"]))
        index = ngram_index(texts, cfg["ngram"])
        params = {"text_key": key, "config": {k: v for k, v in cfg.items() if k != "tasks"}, "index": index}
        stats = run_shard_stage(name, decontaminate_shard, params, in_dir, out_dir, executor)
        stats["extra"]["benchmarks"] = {n: len(t) for n, t in sorted(texts.items())}
        stats["extra"]["eval_ngrams"] = len(index)
        return stats
    if name == "blend":
        from megazoo.curate.blend import blend
        from megazoo.curate.shards import list_shards, words

        result = blend(in_dir, out_dir, cfg, key, progress=progress)
        docs = sum(1 for _ in _docs(in_dir, key, list_shards))
        word_count = sum(words(d[key]) for d in _docs(in_dir, key, list_shards))
        return {"stage": "blend", "docs_in": docs, "docs_out": docs, "words_in": word_count,
                "words_out": word_count, "removed": 0, "reasons": {}, "resumed_shards": 0,
                "extra": {"data_path": result["data_path"],
                          "tokens": {n: s["tokens"] for n, s in result["sources"].items()}}}
    raise CurateError(f"unknown stage `{name}`")


def _docs(folder, key, list_shards):
    from megazoo.curate.shards import read_shard

    for rel in list_shards(folder):
        yield from read_shard(folder, rel, key)


def stage_folder(output, position: int, name: str) -> Path:
    return Path(output) / f"{position:02d}-{name}"


def run_recipe(recipe: dict, executor, progress: bool = True) -> dict:
    """Run a recipe's stages in order and write the report; returns the report's content."""
    from megazoo.curate.report import write_report

    key = recipe["text_key"]
    current = recipe["input"]
    results = []
    for position, (name, cfg) in enumerate(recipe["stages"].items(), 1):
        if cfg is False:
            continue
        out = stage_folder(recipe["output"], position, name)
        stats = run_stage(name, cfg, current, out, key, executor, progress)
        stats["folder"] = str(out)
        results.append(stats)
        if name != "blend":
            current = out
    return write_report(recipe["output"], results, final=str(current), executor=executor.kind,
                        workers=executor.workers)
