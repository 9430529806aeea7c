"""`megazoo quickstart [--out DIR]`: the main job, on embedded defaults, with no data and no network.

1. pretrain a small GPT (GPT-2 layout, GPT-2 tokenizer) at TP=2 x PP=2 on 4 local ranks (gloo on
   CPU, nccl on GPUs) on the embedded corpus, with a progress bar (loss, tokens/s, MFU);
2. evaluate held-out perplexity and save a checkpoint;
3. export a Hugging Face folder, reload it with transformers, check its logits against megazoo's
   and print a generated continuation;
4. leave loss.png and summary.md in the run directory.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from megazoo.core.argtypes import positive_int

PROMPT = "The Python standard library"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=None, help="run directory (default: runs/quickstart-<time>)")
    parser.add_argument("--steps", type=positive_int, default=None, help="training steps (default: the recipe's)")
    parser.add_argument("--set", dest="overrides", nargs="+", action="append", default=[], metavar="KEY=VALUE",
                        help="extra recipe overrides, as for `megazoo train`")


def _gpu_overrides() -> list[str]:
    """On GPUs the same job runs at a larger size."""
    import torch

    if not torch.cuda.is_available():
        return []
    return ["model.num_layers=8", "model.hidden_size=512", "model.num_heads=8", "model.seq_length=512",
            "train.micro_batch=8", "train.global_batch=64", "train.steps=300", "precision.dtype=bf16"]


def export_and_check(run_dir: Path, checkpoint_root: Path) -> dict:
    """Load the trained weights in one process, export HF, reload with transformers, compare, generate."""
    import torch
    from transformers import AutoModelForCausalLM

    from megazoo.core.data.tokenizers import _gpt2_dir
    from megazoo.zoo.hf import build_model, config_from_dict, export_hf, load_full_state
    from megazoo.zoo.io import load_model

    arch, cfg_dict, state = load_model(checkpoint_root)
    cfg = config_from_dict(arch, cfg_dict)
    hf_dir = run_dir / "hf"
    export_hf(hf_dir, arch, cfg, state, tokenizer=_gpt2_dir(), overwrite=True)
    model = build_model(arch, cfg, None)
    load_full_state(model, state, model.ctx)
    model.eval()
    hf = AutoModelForCausalLM.from_pretrained(str(hf_dir), dtype=torch.float32).eval()
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(hf_dir))
    ids = torch.tensor([tok.encode(PROMPT)])
    with torch.no_grad():
        ours = model(input_ids=ids)
        theirs = hf(input_ids=ids).logits
    max_diff = (ours - theirs).abs().max().item()
    out = hf.generate(ids, max_new_tokens=24, do_sample=False, repetition_penalty=1.3, no_repeat_ngram_size=3,
                      pad_token_id=tok.eos_token_id)
    text = tok.decode(out[0, ids.shape[1]:])
    return {"hf_dir": str(hf_dir), "logits_max_abs_diff": max_diff, "sample": PROMPT + text}


def write_summary(run_dir: Path, cfg, result: dict, check: dict, wall: float) -> Path:
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    train = [m for m in metrics if m.get("split", "train") == "train" and "loss" in m]
    valid = [m for m in metrics if m.get("split") == "valid"]
    tenth = max(1, len(train) // 10)
    first = sum(m["loss"] for m in train[:tenth]) / tenth
    last = sum(m["loss"] for m in train[-tenth:]) / tenth
    lines = [
        "# megazoo quickstart",
        "",
        f"- model: GPT-2 layout, {cfg.model['num_layers']} layers, hidden {cfg.model['hidden_size']}, "
        f"{cfg.model['num_heads']} heads, seq {cfg.model['seq_length']}, GPT-2 vocabulary",
        f"- layout: tp={cfg.parallel.tp} x pp={cfg.parallel.pp} x dp=1 on {cfg.parallel.tp * cfg.parallel.pp} local ranks",
        f"- data: the embedded corpus (Python standard library documentation), {len(train)} steps of "
        f"{cfg.train.global_batch} x {cfg.model['seq_length']} tokens",
        f"- loss: first 10% of steps {first:.3f}, last 10% {last:.3f} ({100 * (1 - last / first):.1f}% lower)",
        f"- held-out: loss {valid[-1]['loss']:.3f}, perplexity {valid[-1]['ppl']:.1f}" if valid else "- held-out: n/a",
        f"- Hugging Face export: {check['hf_dir']} (transformers logits differ from megazoo's by at most "
        f"{check['logits_max_abs_diff']:.2e})",
        f"- sample (greedy with a repetition penalty, through transformers): {check['sample']!r}",
        f"- wall time: {wall:.0f} s",
        "",
        "Files: config.yaml (resolved recipe), metrics.jsonl, loss.png, checkpoints/, hf/.",
    ]
    path = run_dir / "summary.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def run(args) -> int:
    from megazoo.core.train.cli import launch
    from megazoo.core.train.config import ConfigError, RunConfig

    start = time.time()
    run_dir = Path(args.out or f"runs/quickstart-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    overrides = _gpu_overrides() + [item for group in args.overrides for item in group]
    overrides += [f"log.dir={run_dir}"] + ([f"train.steps={args.steps}"] if args.steps else [])
    try:
        cfg = RunConfig.load("quickstart", overrides)
        cfg.validate(cfg.parallel.tp * cfg.parallel.pp)
    except ConfigError as e:
        print(f"megazoo quickstart: error: {e}", file=sys.stderr)
        return 2
    nproc = cfg.parallel.tp * cfg.parallel.pp
    print(f"megazoo quickstart: pretraining a small GPT at tp={cfg.parallel.tp} x pp={cfg.parallel.pp} "
          f"on {nproc} local ranks; run directory {run_dir}", flush=True)
    code = launch(cfg, nproc)  # Ctrl-C: the launcher stops every rank and says where the run is
    if code == 130:
        return code
    if code:
        print(f"megazoo quickstart: training failed; see the messages above and {run_dir}", file=sys.stderr)
        return code
    print("megazoo quickstart: exporting to Hugging Face and reloading with transformers ...", flush=True)
    check = export_and_check(run_dir, cfg.checkpoint_dir())
    summary = write_summary(run_dir, cfg, {}, check, time.time() - start)
    print(summary.read_text())
    if check["logits_max_abs_diff"] > 1e-5:
        print("megazoo quickstart: error: the exported model's logits differ from megazoo's", file=sys.stderr)
        return 1
    return 0
