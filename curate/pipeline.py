"""Running stages: one stage on a folder (`megazoo curate STAGE`) or a recipe's stages in order
(`megazoo curate RECIPE`), each reading the previous stage's folder and writing its own
(`OUTPUT/NN-STAGE/`), then the report.

A stage's output folder is one of:
- new (missing or empty): the stage writes its settings (`_settings.json`: the stage, its full
  settings, the input folder and the size and time of every input shard) first, then each shard
  atomically with its done marker, and its counts (`_stage.json`) last;
- its own, from a run with the same settings and unchanged input: the run resumes (finished shards
  are kept, a killed run continues);
- its own with other settings or changed input: refused, naming the setting, unless --overwrite;
- anything else that is not empty: refused unless --overwrite.
With --overwrite the stage runs into a new scratch folder beside the output, which replaces the old
folder only once it is complete (core.fs.atomic_folder): a failed run leaves the old one as it was.
A new folder that fails on an error is removed again (everything in it was made by the run); one
that is killed is kept for the rerun. Nothing the stage did not create is deleted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from megazoo.core.fs import atomic_folder, resolve, resumable_folder, write_json_atomic
from megazoo.curate.errors import CurateError
from megazoo.curate.settings import check_stage_config
from megazoo.curate.shards import SETTINGS_FILE, list_shards
from megazoo.curate.stages import run_shard_stage

RECIPE_FILE = "_recipe.json"  # marks a recipe's output folder (its stages are checked one by one)


def input_signature(in_dir) -> list:
    """[shard, size, mtime_ns] of every input shard: a rerun over changed input is seen."""
    out = []
    for rel in list_shards(in_dir):
        st = os.stat(Path(in_dir) / rel)
        out.append([rel, st.st_size, st.st_mtime_ns])
    return out


def _task_paths(tasks: list[str]) -> list[str]:
    """decontaminate's tasks with their paths resolved (NAME=PATH keeps its name), for the record."""
    out = []
    for spec in tasks:
        name, sep, rest = spec.partition("=")
        if spec == "generated" or (not sep and not os.path.exists(spec)):
            out.append(spec)
        elif sep and not os.path.exists(spec):
            out.append(f"{name}={resolve(rest)}")
        else:
            out.append(str(resolve(spec)))
    return out


def stage_settings(name: str, cfg: dict, in_dir, key: str, final_in=None) -> dict:
    """What `_settings.json` records: a rerun is the same run only if all of this is equal."""
    record = json.loads(json.dumps(cfg))
    if name == "quality":
        record["reference"] = str(resolve(record["reference"]))
    if name == "decontaminate":
        record["tasks"] = _task_paths(record["tasks"])
    return {"stage": name, "settings": record, "text_key": key, "input": str(resolve(final_in or in_dir)),
            "shards": input_signature(in_dir)}


def _difference(old: dict, new: dict, where: str, out) -> str | None:
    """The first thing that differs between a stage folder's recorded settings and this run's."""
    if old.get("stage") != new["stage"]:
        return f"{out} holds the output of the {old.get('stage')} stage, not {new['stage']}"
    before, now = old.get("settings") or {}, new["settings"]
    for k in sorted(set(before) | set(now)):
        if before.get(k) != now.get(k):
            return (f"{where}.{k} is {json.dumps(now.get(k))} now and was {json.dumps(before.get(k))} "
                    f"when {out} was made")
    if old.get("text_key") != new["text_key"]:
        return f"the text key is {new['text_key']!r} now and was {old.get('text_key')!r} when {out} was made"
    if old.get("input") != new["input"]:
        return f"the input is {new['input']} now and was {old.get('input')} when {out} was made"
    was = {rel: (size, t) for rel, size, t in old.get("shards") or []}
    for rel, size, t in new["shards"]:
        if rel not in was:
            return f"the input shard {rel} was added after {out} was made"
        if was.pop(rel) != (size, t):
            return f"the input shard {rel} changed after {out} was made"
    if was:
        return f"the input shard {sorted(was)[0]} was removed after {out} was made"
    return None


def output_state(out, settings: dict, where: str, overwrite: bool) -> str:
    """new | resume | replace for a stage's output folder (see the module docstring), or a refusal."""
    out = Path(out)
    if not out.exists():
        return "new"
    if not out.is_dir():
        raise CurateError(f"{out}: is a file, not a folder; give a folder for the stage's output (nothing was changed)")
    if not any(out.iterdir()):
        return "new"
    if overwrite:
        return "replace"
    marker = out / SETTINGS_FILE
    if not marker.is_file():
        raise CurateError(f"{out}: exists and is not empty, and is not a folder this stage wrote; choose a new "
                          "folder, or pass --overwrite to replace it (nothing was changed)")
    try:
        old = json.loads(marker.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        old = {}
    differs = _difference(old if isinstance(old, dict) else {}, settings, where, out)
    if differs:
        raise CurateError(f"{differs}; what it holds was made from those. Pass --overwrite to redo the stage, "
                          "or give a new output folder (nothing was changed)")
    return "resume"


def run_stage(name: str, cfg: dict | None, in_dir, out_dir, key: str, executor, progress: bool = True, *,
              overwrite: bool = False, where: str | None = None, final_in=None, final_out=None) -> dict:
    """Run one stage from `in_dir` into `out_dir`; return its statistics (also in out_dir/_stage.json).
    `where`: how messages name the stage's settings (`fuzzy-dedup`, `r.yaml: stages.fuzzy-dedup`);
    `final_in`, `final_out`: the paths `in_dir` and `out_dir` will have once a recipe's scratch folder
    is in place (what the settings record and the blend's data.path names)."""
    where = where or name
    in_dir, out_dir = str(in_dir), str(out_dir)
    if Path(in_dir).resolve() == Path(out_dir).resolve():
        raise CurateError(f"--output {out_dir}: the same folder as --input; give a new folder")
    cfg = check_stage_config(name, cfg, where)
    if name == "fuzzy-dedup":
        from megazoo.curate.fuzzy_dedup import check_priority

        check_priority(cfg, in_dir, where)  # a priority list naming an unknown dataset: before any work
    if name == "decontaminate":
        from megazoo.curate.decontaminate import check_task_names

        check_task_names(cfg, where)  # an n-gram size for a benchmark the tasks do not have: before any work
    settings = stage_settings(name, cfg, in_dir, key, final_in)
    state = output_state(out_dir, settings, where, overwrite)
    final = str(final_out or out_dir)
    if state == "replace":
        with atomic_folder(out_dir, overwrite=True) as tmp:
            write_json_atomic(tmp / SETTINGS_FILE, settings)
            return _run(name, cfg, in_dir, tmp, key, executor, progress, final=final, previous=out_dir)
    if state == "resume":
        return _run(name, cfg, in_dir, out_dir, key, executor, progress, final=final)
    # a new or empty folder: an error (a malformed shard, a bad tokenizer) leaves nothing behind, a
    # kill keeps the shards written so far for the rerun
    with resumable_folder(out_dir) as out:
        write_json_atomic(out / SETTINGS_FILE, settings)
        return _run(name, cfg, in_dir, out_dir, key, executor, progress, final=final)


def _run(name: str, cfg: dict, in_dir: str, out_dir, key: str, executor, progress: bool, final, previous=None):
    out_dir = str(out_dir)
    if name == "filter":
        from megazoo.curate.filters import filter_shard

        return run_shard_stage(name, filter_shard, {"text_key": key, "config": cfg}, in_dir, out_dir, executor)
    if name == "quality":
        from megazoo.curate import quality

        model = quality.load_or_train(cfg, in_dir, out_dir, key)
        params = {"text_key": key, "config": cfg, "model": model}
        return run_shard_stage(name, quality.quality_shard, params, in_dir, out_dir, executor)
    if name in ("exact-dedup", "fuzzy-dedup"):
        from megazoo.curate.dedup_stage import run_dedup_stage

        return run_dedup_stage(name, cfg, in_dir, out_dir, key, executor)
    if name == "decontaminate":
        from megazoo.curate.decontaminate import build_index, decontaminate_shard
        from megazoo.curate.eval_sets import benchmark_texts

        texts = benchmark_texts(list(cfg["tasks"]))
        index = build_index(texts, cfg["ngram"], cfg["min_ngram"], cfg["ngram_per_task"])
        config = {k: v for k, v in cfg.items() if k not in ("tasks", "preset")}
        frequent = _frequent_ngrams(index, config, in_dir, out_dir, key, executor)
        params = {"text_key": key, "config": config, "index": index, "frequent": frequent}
        stats = run_shard_stage(name, decontaminate_shard, params, in_dir, out_dir, executor)
        stats["extra"]["benchmarks"] = {n: len(t) for n, t in sorted(texts.items())}
        stats["extra"]["eval_ngrams"] = len(index["grams"])
        stats["extra"]["eval_ngram_lengths"] = index["lengths"]
        stats["extra"]["frequent_ngrams_left"] = len(frequent)
        write_json_atomic(Path(out_dir) / "_stage.json", json.loads(json.dumps(stats)), indent=1)
        return stats
    if name == "blend":
        from megazoo.curate.blend import blend
        from megazoo.curate.shards import words

        result = blend(in_dir, out_dir, cfg, key, progress=progress, final_dir=final, previous_dir=previous)
        docs = list(_docs(in_dir, key))
        word_count = sum(words(d[key]) for d in docs)
        stats = {"stage": "blend", "docs_in": len(docs), "docs_out": len(docs), "words_in": word_count,
                 "words_out": word_count, "removed": 0, "reasons": {}, "resumed_shards": 0,
                 "extra": {"data_path": result["data_path"],
                           "tokens": {n: s["tokens"] for n, s in result["sources"].items()}}}
        write_json_atomic(Path(out_dir) / "_stage.json", stats)
        return stats
    raise CurateError(f"unknown stage `{name}`")


FREQUENCY_FILE = "_ngram_frequency.json"  # decontaminate's first pass, kept for a resumed run


def _frequent_ngrams(index: dict, config: dict, in_dir: str, out_dir: str, key: str, executor) -> set[int]:
    """The indexed n-grams found in `max_doc_frequency` or more training documents (NVIDIA's
    key threshold: common phrases, left alone): counted over every shard on the executor, once."""
    from megazoo.curate.decontaminate import count_shard

    if not config["max_doc_frequency"]:
        return set()
    saved = Path(out_dir) / FREQUENCY_FILE
    if saved.is_file():
        return set(json.loads(saved.read_text())["frequent"])
    shared = {"index": index, "config": config}
    shared = executor.share(shared) if executor.kind == "dask" else shared
    counts: dict[int, int] = {}
    for part in executor.map(count_shard, [(in_dir, rel, key, shared) for rel in list_shards(in_dir)],
                             desc="decontaminate count"):
        for h, c in part.items():
            counts[h] = counts.get(h, 0) + c
    frequent = sorted(h for h, c in counts.items() if c >= config["max_doc_frequency"])
    write_json_atomic(saved, {"max_doc_frequency": config["max_doc_frequency"], "frequent": frequent,
                              "documents_per_ngram": sorted(counts.values(), reverse=True)[:20]})
    return set(frequent)


def _docs(folder, key):
    from megazoo.curate.shards import read_shard

    for rel in list_shards(folder):
        yield from read_shard(folder, rel, key)


def stage_folder(output, position: int, name: str) -> Path:
    return Path(output) / f"{position:02d}-{name}"


def recipe_state(output, overwrite: bool) -> str:
    """new | resume | replace for a recipe's output folder; refused when it is someone else's."""
    out = Path(output)
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return "new"
    if not out.is_dir():
        raise CurateError(f"output: {output} is a file, not a folder; give a folder (nothing was changed)")
    if overwrite:
        return "replace"
    if not (out / RECIPE_FILE).is_file():
        raise CurateError(f"output: {output} exists and is not empty, and is not a curation recipe's output; "
                          "choose a new folder, or pass --overwrite to replace it (nothing was changed)")
    return "resume"


def run_recipe(recipe: dict, executor, progress: bool = True, overwrite: bool = False) -> dict:
    """Run a recipe's stages in order and write the report; returns the report's content.
    An existing output of this recipe resumes (each stage checks its own settings); with
    --overwrite the whole recipe runs into a scratch folder that replaces the output when complete."""
    output = str(resolve(recipe["output"]))
    where = f"{recipe.get('path', 'recipe')}: stages"
    list_shards(recipe["input"])  # a missing or empty input is refused before the output is made
    state = recipe_state(output, overwrite)
    if state == "replace":
        with atomic_folder(output, overwrite=True) as tmp:
            return _run_recipe(recipe, executor, progress, output, tmp, where)
    Path(output).mkdir(parents=True, exist_ok=True)
    return _run_recipe(recipe, executor, progress, output, Path(output), where)


def _run_recipe(recipe: dict, executor, progress: bool, output: str, work: Path, where: str) -> dict:
    """The stages into `work` (the output itself, or its scratch folder), named as under `output`."""
    from megazoo.curate.report import write_report

    write_json_atomic(work / RECIPE_FILE, {"recipe": recipe.get("path"), "input": str(resolve(recipe["input"]))})
    key = recipe["text_key"]
    current, current_final = recipe["input"], recipe["input"]
    results, folders = [], []
    for position, (name, cfg) in enumerate(recipe["stages"].items(), 1):
        if cfg is False:
            continue
        out = stage_folder(work, position, name)
        final = stage_folder(output, position, name)
        stats = run_stage(name, cfg, current, out, key, executor, progress, where=f"{where}.{name}",
                          final_in=current_final, final_out=final)
        stats["folder"] = str(final)
        results.append(stats)
        folders.append(out)
        if name != "blend":
            current, current_final = out, final
    return write_report(work, results, final=str(current_final), executor=executor.kind,
                        workers=executor.workers, folders=folders)
