"""What a user watches (rank 0 only): progress bar, metrics.jsonl, TensorBoard, loss plot, summary."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

from megazoo.core.train.flops import percent
from megazoo.core.verbosity import quiet, shows_progress, verbose


class Monitor:
    def __init__(self, run_dir: Path, total_steps: int, first_step: int = 0, progress: bool = True,
                 log=None, enabled: bool = True, config: dict | None = None):
        self.enabled, self.run_dir = enabled, Path(run_dir)
        self.total, self.first = total_steps, first_step
        self.history: list[dict] = []
        self.valid: list[dict] = []
        self.bar = None
        self.trackers: list = []
        self.started = time.perf_counter()
        if not enabled:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.metrics = open(self.run_dir / "metrics.jsonl", "a")  # a resumed run appends
        if shows_progress(progress):  # not under -q
            from tqdm import tqdm

            self.bar = tqdm(total=total_steps, initial=first_step, desc="train", unit="step", dynamic_ncols=True,
                            file=sys.stderr)
        if log is not None:
            from megazoo.core.train.loggers import open_trackers

            self.trackers = open_trackers(log, self.run_dir, config or {})  # TensorBoard, W&B

    def write(self, record: dict) -> None:
        if not self.enabled:
            return
        self.metrics.write(json.dumps(record) + "\n")  # json writes floats exactly (repr)
        self.metrics.flush()
        for tracker in self.trackers:
            tracker.scalars(record)

    def train_step(self, record: dict) -> None:
        self.history.append(record)
        self.write(record)
        if self.bar is not None:
            post = {"loss": f"{record['loss']:.4f}", "tok/s": f"{record['tokens_per_s']:.0f}",
                    "TFLOP/s": f"{record['tflops']:.3f}", "MFU": percent(record["mfu"])}
            if "loss_scale" in record:
                post["scale"] = f"{record['loss_scale']:.0f}"
            self.bar.set_postfix(post, refresh=False)
        if verbose():  # -v: a line per logged step, also where the bar is off (log.progress=false)
            self.message(f"step {record['step']}/{self.total}: loss {record['loss']:.4f}, lr {record['lr']:.3g}, "
                         f"grad norm {record['grad_norm']:.3g}, {record['tokens_per_s']:.0f} tokens/s, "
                         f"{record['tflops']:.3f} TFLOP/s, MFU {percent(record['mfu'])}, {record['step_time']:.3f} s")

    def advance(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def validation(self, record: dict) -> None:
        self.valid.append(record)
        self.write(record)

    def message(self, text: str, warning: bool = False) -> None:
        """An information line (left out under -q) or, with `warning`, a line that is always shown."""
        if not self.enabled or (quiet() and not warning):
            return
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)
        else:
            print(text, file=sys.stderr)

    def close(self) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.close()
        for tracker in self.trackers:
            tracker.close()
        self.metrics.close()

    # end-of-run artefacts --------------------------------------------------------------------
    def plot(self) -> Path | None:
        if not self.enabled:
            return None
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        records = [json.loads(line) for line in (self.run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
        train = [r for r in records if r.get("split", "train") == "train" and math.isfinite(r["loss"])]
        valid = [r for r in records if r.get("split") == "valid"]
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot([r["step"] for r in train], [r["loss"] for r in train], label="train")
        if valid:
            ax.plot([r["step"] for r in valid], [r["loss"] for r in valid], "o-", label="valid")
        ax.set_xlabel("step")
        ax.set_ylabel("loss")
        ax.set_title(self.run_dir.name)
        ax.grid(alpha=0.3)
        ax.legend()
        path = self.run_dir / "loss.png"
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path

    @staticmethod
    def _steps_line(info: dict) -> str:
        """The steps the run is at, and how many of them this invocation trained (a resumed run)."""
        steps, first = info.get("steps"), info.get("first_step", 0)
        done = f"{steps}" if not first else f"{steps}  (resumed at step {first}: {steps - first} trained now)"
        return f"{done}  ({info.get('skipped', 0)} skipped)  in {info.get('wall_s', 0):.1f} s"

    def summary(self, info: dict) -> str:
        """A one-screen summary; written to summary.txt and returned."""
        h = [r for r in self.history if math.isfinite(r["loss"])]
        lines = [f"run          {info.get('name')}  ({info.get('layout')})",
                 f"model        {info.get('model')}",
                 f"data         {info.get('data')}",
                 f"steps        {self._steps_line(info)}"]
        if h:
            tail = h[-min(len(h), 5):]
            tps = sum(r["tokens_per_s"] for r in tail) / len(tail)
            mfu = min(sum(r["mfu"] for r in tail) / len(tail), 1.0)
            tfl = sum(r["tflops"] for r in tail) / len(tail)
            lines += [f"loss         {h[0]['loss']:.4f} -> {h[-1]['loss']:.4f}",
                      f"throughput   {tps:,.0f} tokens/s, {tfl:.3f} TFLOP/s, MFU {percent(mfu)} of {info.get('peak')}",
                      f"tokens       {h[-1]['consumed_tokens']:,}"]
            if info.get("mfu_note"):
                lines.append(f"note         {info['mfu_note']}")
        if info.get("precision"):  # what precision.dtype=auto chose and why, or why bf16 is slow here
            lines.append(f"precision    {info['precision']}")
        if self.valid:
            v = self.valid[-1]
            lines.append(f"validation   loss {v['loss']:.4f}, perplexity {v['ppl']:.2f}")
        lines += [f"run dir      {self.run_dir}", "files        config.yaml, metrics.jsonl, loss.png, summary.txt"
                  + (", checkpoints/" if info.get("checkpoints") else "")]
        text = "\n".join(lines)
        if self.enabled:
            (self.run_dir / "summary.txt").write_text(text + "\n")
        return text
