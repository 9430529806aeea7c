"""The run configuration: one dataclass per component, composed into a RunConfig.

Sources, in order: the dataclass defaults, a YAML recipe, then dotted `--set key=value` overrides.
Every key is checked: an unknown key names the nearest valid one, a value of the wrong type says
which type was expected, and `validate(world_size)` checks the layout (batch divisibility, degrees,
model shape against tp/pp) before any rank starts.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from megazoo.core.parallel.context import ParallelConfig, ParallelConfigError
from megazoo.core.train import models  # the entry-point lookup; models.py never imports this module
# the shared pieces live in their own modules (models.py, builders and tasks use them without this
# one); they stay importable from here as before
from megazoo.core.train.config_checks import check_context_parallel, check_type, unknown_key
from megazoo.core.train.errors import ConfigError
from megazoo.core.train.recipes import recipe_dir, resolve_recipe  # noqa: F401  (recipe_dir: re-exported)
from megazoo.core.train.user_errors import yaml_message


@dataclass
class TrainConfig:
    micro_batch: int = 2
    global_batch: int = 8
    steps: int = 10
    seed: int = 1234
    lr: float = 3e-4
    min_lr: float = 3e-5
    warmup: int = 0
    decay: str = "cosine"  # cosine | linear | constant
    weight_decay: float = 0.1
    clip_grad: float = 1.0  # 0: no clipping
    betas: list = field(default_factory=lambda: [0.9, 0.95])
    eps: float = 1e-8
    eval_interval: int = 0  # 0: evaluate only at the end
    eval_iters: int = 2
    log_interval: int = 1
    trainable: Any = "all"  # "all", or a list of parameter-name patterns (fnmatch; e.g. ["*adapter*"])
    init_from: Any = None  # start from these weights (HF folder, import-hf folder, training checkpoint)
    epochs: int = 0  # > 0: train.steps = epochs x training samples / global_batch
    warmup_fraction: float = 0.0  # > 0: train.warmup = this fraction of the steps
    # [start, increment, samples]: Megatron's --rampup-batch-size (core/train/rampup.py)
    rampup_batch_size: Any = None
    # schedules in samples or tokens (tokens = samples x model.seq_length), counted from the run's start;
    # 0: unset (a decay end of 0 is the run's end)
    lr_warmup_samples: int = 0
    lr_decay_samples: int = 0
    lr_warmup_tokens: int = 0
    lr_decay_tokens: int = 0
    compile: bool = False  # torch.compile of each model chunk; off by default (2-9% a step on CPU, minutes to compile)
    compile_backend: str = "inductor"  # the torch.compile backend (aot_eager: no C++ compiler needed)
    allocator: str = "keep"  # keep: on a CPU, freed memory stays mapped (no page faults); system: libc's default
    optimizer_offload: str = "none"  # cpu: fp32 main weights and Adam state in host memory, stepped there


@dataclass
class PrecisionConfig:
    dtype: str = "fp32"  # fp32 | bf16 | fp16 | auto (bf16 where its GEMMs are faster here: train/precision_probe.py)
    initial_scale: float = 2.0**32
    min_scale: float = 1.0
    growth_interval: int = 1000
    hysteresis: int = 2


@dataclass
class OptimConfig:
    distributed: bool = False  # ZeRO-1: main params and Adam state sharded across data parallelism
    bucket_size: int = 10_000_000  # elements per gradient bucket
    overlap_grad_reduce: bool = True  # start bucket reductions during backward


@dataclass
class DataConfig:
    path: Any = None  # a .bin/.idx prefix, or [weight, prefix, weight, prefix, ...]; None: embedded corpus
    synthetic: bool = False  # deterministic synthetic token sequences (tests, benchmarks)
    split: str = "949,50,1"  # train,valid,test weights
    tokenizer: str = "gpt2"
    corpus: str = "stdlib"  # the embedded corpus used when path is unset
    cache_dir: Any = None  # sample-index cache; None: $MEGAZOO_CACHE/indices


@dataclass
class CheckpointConfig:
    dir: Any = None  # None: <log.dir>/checkpoints
    interval: int = 0  # 0: only at the end
    keep: int = 2
    resume: str = "auto"  # auto | a path | none
    save: bool = True
    async_save: bool = False  # write in a background thread; training waits only for the CPU copy
    best_metric: Any = None  # keep the best checkpoint (under <dir>/best) by this validation metric
    best_mode: str = "auto"  # max | min | auto (min for loss and ppl, max otherwise)
    # a rerun into a run's folder with changed training settings (train.lr, ...): refused unless true;
    # then it trains with them and config.yaml records each change (core/train/history.py)
    allow_changes: bool = False


@dataclass
class LogConfig:
    dir: Any = None  # None: runs/<recipe name>
    tensorboard: bool = False  # needs the tensorboard extra: pip install 'megazoo[tensorboard]'
    wandb: bool = False  # needs the wandb extra; WANDB_MODE=offline keeps the run local
    wandb_project: Any = None  # None: megazoo
    progress: bool = True
    plot: bool = True


SECTIONS = {"parallel": ParallelConfig, "train": TrainConfig, "precision": PrecisionConfig, "optim": OptimConfig,
            "data": DataConfig, "checkpoint": CheckpointConfig, "log": LogConfig}
RECOMPUTE = ("none", "selective", "full")
# model keys that fix a weight's shape: a run from train.init_from takes them from the weights
SHAPE_KEYS = ("num_layers", "hidden_size", "num_heads", "num_kv_heads", "ffn_hidden_size", "kv_channels",
              "vocab_size", "seq_length", "num_tokentypes", "activation", "norm", "position", "bias",
              "post_norm", "tie_embeddings", "make_vocab_size_divisible_by")
DTYPES = ("fp32", "bf16", "fp16", "auto")
ZERO_NAMES = {"none": "", "optimizer": ", ZeRO-1", "grads": ", ZeRO-2", "full": ", ZeRO-3"}  # in the run's layout line


@dataclass
class RunConfig:
    model: dict = field(default_factory=dict)  # model.arch (default gpt) and the model's keys
    task: dict = field(default_factory=dict)  # task.name and the task's keys; empty: pretraining
    parallel: ParallelConfig = field(default_factory=ParallelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    precision: PrecisionConfig = field(default_factory=PrecisionConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    data: DataConfig = field(default_factory=DataConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    log: LogConfig = field(default_factory=LogConfig)
    recompute: str = "none"
    name: str = "run"

    # construction -------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict, where: str = "config") -> "RunConfig":
        if not isinstance(d, dict):
            raise ConfigError(f"{where}: expected a mapping of sections (model, parallel, train, ...), got {type(d).__name__}")
        if "history" in d:  # a run's config.yaml as a recipe: the values it trains with now
            from megazoo.core.train.history import apply_history

            d = apply_history(d)
        cfg = cls()
        for key, value in d.items():
            cfg.set(key, value, where)
        cfg.resolve_data()
        return cfg

    @classmethod
    def load(cls, recipe: str | os.PathLike | None = None, overrides: list[str] | None = None) -> "RunConfig":
        """A recipe (YAML path or shipped recipe name) plus `key=value` overrides."""
        cfg = cls()
        if recipe is not None:
            path = resolve_recipe(recipe)
            try:
                data = yaml.safe_load(path.read_text()) or {}
            except yaml.YAMLError as e:
                raise ConfigError(yaml_message(path, e)) from None
            cfg = cls.from_dict(data, where=str(path))
            if isinstance(data, dict) and "name" not in data:
                cfg.name = path.stem
        for item in overrides or []:
            cfg.apply_override(item)
        cfg.resolve_data()
        return cfg

    def resolve_data(self) -> None:
        """A given data.path wins over data.synthetic (a recipe like gpt-tiny sets synthetic: true;
        `--set data.path=...` on it means: train on that data, not on random tokens)."""
        if self.data.synthetic and self.data.path not in (None, "", []):
            self.data.synthetic = False

    def describe_data(self) -> str:
        """What the run trains on, for the summary: synthetic tokens, the given path(s), or the corpus."""
        if self.data.synthetic:
            return "synthetic random tokens (data.synthetic=true)"
        if self.data.path not in (None, "", []):
            return f"{self.data.path} (tokenizer {self.data.tokenizer})"
        return f"the embedded {self.data.corpus!r} corpus (tokenizer {self.data.tokenizer}; set data.path for yours)"

    def apply_override(self, item: str) -> None:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected key=value, e.g. train.steps=20")
        key, raw = item.split("=", 1)
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            value = raw
        self.set(key.strip(), value, "--set")

    def set(self, key: str, value: Any, where: str = "config") -> None:
        """Set a dotted key (or a whole section given as a mapping), type-checked."""
        head, _, rest = key.partition(".")
        top = [f.name for f in fields(self)]
        if head not in top:
            raise unknown_key(key, self.valid_keys(), where)
        if head == "task":
            if rest:
                self.task[rest] = value
            elif isinstance(value, dict):
                for k, v in value.items():
                    self.set(f"task.{k}", v, where)
            elif isinstance(value, str):  # `task: race` names the task
                self.task["name"] = value
            else:
                raise ConfigError(f"{where}: task must be a task name or a mapping (task.name and its keys), got {value!r}")
            return
        if head == "model":
            if rest:
                if rest == "recompute":
                    raise ConfigError(f"{where}: model.recompute: set the top-level key `recompute` (none | selective | full)")
                self.model[rest] = value
            elif isinstance(value, dict):
                for k, v in value.items():
                    self.set(f"model.{k}", v, where)
            else:
                raise ConfigError(f"{where}: model must be a mapping of model settings, got {value!r}")
            return
        if head in SECTIONS:
            section = getattr(self, head)
            if not rest:
                if not isinstance(value, dict):
                    raise ConfigError(f"{where}: `{head}` must be a mapping, got {value!r}")
                for k, v in value.items():
                    self.set(f"{head}.{k}", v, where)
                return
            names = {f.name: f for f in fields(section)}
            if rest not in names:
                raise unknown_key(key, self.valid_keys(), where)
            setattr(section, rest, check_type(key, value, names[rest].type, where))
            return
        if rest:
            raise unknown_key(key, self.valid_keys(), where)
        setattr(self, head, check_type(key, value, "str", where))

    def valid_keys(self) -> list[str]:
        keys = ["model", "model.arch", "recompute", "name", "task", "task.name"]
        keys += [f"model.{k}" for k in self.model] + [f"task.{k}" for k in self.task]
        for name, cls in SECTIONS.items():
            keys += [name] + [f"{name}.{f.name}" for f in fields(cls)]
        return keys

    def to_dict(self) -> dict:
        out = {"name": self.name, "model": dict(self.model), "recompute": self.recompute}
        if self.task:
            out["task"] = dict(self.task)
        for name in SECTIONS:
            out[name] = dataclasses.asdict(getattr(self, name))
        return out

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    # derived ----------------------------------------------------------------------------------
    def shard_mode(self) -> str:
        """What data parallelism shards: parallel.shard, where optim.distributed=true means at least
        the optimizer (ZeRO-1)."""
        shard = self.parallel.shard
        return "optimizer" if shard == "none" and self.optim.distributed else shard

    @property
    def compute_dtype(self):
        import torch

        name = self.precision.dtype
        if name == "auto":  # the trainer settles it once before the model is built; elsewhere: this device's pick
            from megazoo.core.parallel.device import pick_device
            from megazoo.core.train.precision_probe import resolve_dtype

            name = resolve_dtype(name, pick_device())[0]
        return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]

    def run_dir(self) -> Path:
        if self.log.dir:
            return Path(self.log.dir)
        from megazoo.core.train.rundir import check_name

        return Path("runs") / check_name(self.name)  # a name like ../x cannot leave runs/

    def checkpoint_dir(self) -> Path:
        return Path(self.checkpoint.dir) if self.checkpoint.dir else self.run_dir() / "checkpoints"

    def micro_batches_per_step(self, dp: int) -> int:
        return self.train.global_batch // (self.train.micro_batch * dp)

    # validation -------------------------------------------------------------------------------
    def validate(self, world_size: int = 1):
        """Check everything that can be checked before a rank starts; return the model builder."""
        from megazoo.core.train.config_checks import check_int_bounds, check_memory, check_takes_effect
        from megazoo.core.train.rundir import check_outputs

        self.run_dir()  # a run name that would place the run outside runs/ fails here
        check_outputs(self)  # log.dir / checkpoint.dir apart from what the run reads
        try:
            dp = self.parallel.validate(world_size)
        except ParallelConfigError as e:
            raise ConfigError(str(e)) from None
        t = self.train
        for key in ("micro_batch", "global_batch", "steps", "log_interval", "eval_iters"):
            if getattr(t, key) < 1:
                raise ConfigError(f"train.{key} must be >= 1, got {getattr(t, key)}")
        if t.global_batch % (t.micro_batch * dp):
            raise ConfigError(
                f"train.global_batch={t.global_batch} is not divisible by train.micro_batch x data-parallel size "
                f"= {t.micro_batch} x {dp} = {t.micro_batch * dp} (world {world_size} = tp {self.parallel.tp} x "
                f"pp {self.parallel.pp} x dp {dp}); choose a global batch that is a multiple of {t.micro_batch * dp}")
        if t.allocator not in ("keep", "system"):
            raise ConfigError(f"train.allocator must be keep or system, got {t.allocator!r}")
        if t.optimizer_offload not in ("none", "cpu"):
            raise ConfigError(f"train.optimizer_offload must be none or cpu, got {t.optimizer_offload!r}")
        if t.decay not in ("cosine", "linear", "constant"):
            raise ConfigError(f"train.decay must be cosine, linear or constant, got {t.decay!r}")
        if t.lr < 0 or t.min_lr < 0 or t.min_lr > t.lr:
            raise ConfigError(f"need 0 <= train.min_lr <= train.lr, got min_lr={t.min_lr}, lr={t.lr}")
        if not (isinstance(t.betas, (list, tuple)) and len(t.betas) == 2 and all(0 <= b < 1 for b in t.betas)):
            raise ConfigError(f"train.betas must be two numbers in [0, 1), got {t.betas!r}")
        if self.precision.dtype not in DTYPES:
            raise ConfigError(f"precision.dtype must be one of {', '.join(DTYPES)}, got {self.precision.dtype!r}")
        if self.precision.dtype in ("auto", "bf16"):
            from megazoo.core.train.precision_probe import check_injected

            check_injected()  # a malformed MEGAZOO_BF16_PROBE fails before any rank starts
        if self.recompute not in RECOMPUTE:
            raise ConfigError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {self.recompute!r}")
        if self.checkpoint.keep < 1:
            raise ConfigError(f"checkpoint.keep must be >= 1, got {self.checkpoint.keep}")
        if t.epochs < 0 or not 0 <= t.warmup_fraction < 1:
            raise ConfigError(f"need train.epochs >= 0 and 0 <= train.warmup_fraction < 1, got {t.epochs} and "
                              f"{t.warmup_fraction}")
        check_int_bounds(self)
        from megazoo.core.train.loggers import check_trackers
        from megazoo.core.train.rampup import check_ramp, check_schedule

        check_trackers(self.log)  # log.tensorboard / log.wandb without their package: before any rank starts

        check_ramp(t, dp)  # one line each before any rank starts; the schedule once the model is known
        if self.checkpoint.best_mode not in ("auto", "max", "min"):
            raise ConfigError(f"checkpoint.best_mode must be auto, max or min, got {self.checkpoint.best_mode!r}")
        from megazoo.core.train.trainable import parse_patterns

        parse_patterns(t.trainable)  # a malformed value fails here; the names are matched in the ranks
        key = (world_size, self.to_yaml())
        cached = getattr(self, "_validated", None)
        if cached is not None and cached[0] == key:
            return cached[1]  # validated once per process: the builder made here is the one used
        model = self.pretrained_model() if t.init_from else dict(self.model)
        model.setdefault("arch", "gpt")
        builder = models.load_builder(model, self.recompute, self.task)
        builder.check_layout(self.parallel)
        check_context_parallel(self, builder)  # one line before any rank starts
        check_takes_effect(self, builder.to_dict())  # experts on no layer, ep without experts
        check_memory(self, builder, world_size)  # sizes that cannot fit, before anything is allocated
        if not t.epochs:  # with train.epochs the steps follow the data: the trainer checks it then
            check_schedule(t, builder.seq_length)
        if not self.data.synthetic:
            from megazoo.core.train.data import data_settings

            builder.check_data(data_settings(self))
        self._validated = (key, builder)
        return builder

    def pretrained_model(self) -> dict:
        """The model section of a run that starts from train.init_from: the pretrained folder's
        architecture and config, with the recipe's settings that do not change a weight's shape
        (dropout, recompute-free keys, heads, adapters) on top."""
        path = Path(str(self.train.init_from))
        arch, saved = models.read_pretrained(path)  # a missing folder is a ConfigError that says so
        mine = dict(self.model)
        if mine.get("arch", arch) != arch:
            raise ConfigError(f"train.init_from={str(path)!r} holds a {arch!r} model but model.arch="
                              f"{mine['arch']!r}; drop model.arch (it comes from the weights) or start from a "
                              f"{mine['arch']} checkpoint")
        for key in SHAPE_KEYS:
            if key in mine and key in saved and mine[key] != saved[key]:
                raise ConfigError(f"model.{key}={mine[key]!r} but train.init_from={str(path)!r} has {key}="
                                  f"{saved[key]!r}; the weights fix it: remove model.{key} from the recipe")
        return {**saved, **mine, "arch": arch}
