"""The RACE fine-tuning configuration: defaults (Megatron's RACE recipe), a YAML recipe, `--set`.

Keys (dotted, usable with --set):
  model.init            the encoder to start from: a megazoo checkpoint (`megazoo import-hf` writes
                        one) or a Hugging Face BERT folder
  model.head_dropout    dropout on the pooled output before the option logit (Megatron: 0.1)
  model.dropout         the encoder's hidden and attention dropout; null keeps the checkpoint's
  data.path             a RACE folder (original layout or HF parquet/JSON)
  data.train_split, data.valid_split, data.max_seq_length (512), data.max_qa_length (128)
  data.tokenizer        a megazoo tokenizer spec (default: bert-base-uncased WordPiece)
  data.generate         write a generated set (from the embedded corpus) at data.path when missing
  train.epochs (3), train.lr (1e-5), train.warmup (0.06 of the steps), train.weight_decay (0.1),
  train.micro_batch (4 questions), train.global_batch (0: micro_batch x dp), train.seed,
  train.clip_grad (1.0), train.max_steps (0: all epochs), train.time_limit_s (wall clock, 0: none),
  train.cpu_limit_s (CPU seconds of this process, all threads; 0: none),
  train.eval_interval (0: once per epoch), train.eval_questions (0: the whole valid split)
  parallel.tp           tensor parallelism (dp = ranks / tp)
  log.dir, log.interval
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml

from megazoo.core.train.config import ConfigError, check_type, resolve_recipe, unknown_key


@dataclass
class ModelSection:
    init: str = ""
    head_dropout: float = 0.1
    dropout: float | None = None


@dataclass
class DataSection:
    path: str = ""
    train_split: str = "train"
    valid_split: str = "dev"
    max_seq_length: int = 512
    max_qa_length: int = 128
    tokenizer: str = "bert-wordpiece"  # a megazoo tokenizer spec (build_tokenizer)
    generate: bool = False
    generate_seed: int = 0
    generate_articles: int = 400  # training articles (dev/test get 15% each)
    generate_words: int = 80


@dataclass
class TrainSection:
    epochs: int = 3
    lr: float = 1e-5
    warmup: float = 0.06
    weight_decay: float = 0.1
    micro_batch: int = 4
    global_batch: int = 0
    seed: int = 1234
    clip_grad: float = 1.0
    max_steps: int = 0
    time_limit_s: float = 0.0
    cpu_limit_s: float = 0.0  # stop once this process has used this much CPU time (shared machines)
    eval_interval: int = 0
    eval_questions: int = 0


@dataclass
class ParallelSection:
    tp: int = 1


@dataclass
class LogSection:
    dir: str = "runs/race"
    interval: int = 10


@dataclass
class RaceConfig:
    task: str = "race"
    model: ModelSection = field(default_factory=ModelSection)
    data: DataSection = field(default_factory=DataSection)
    train: TrainSection = field(default_factory=TrainSection)
    parallel: ParallelSection = field(default_factory=ParallelSection)
    log: LogSection = field(default_factory=LogSection)

    @classmethod
    def load(cls, recipe: str | None = None, overrides: list[str] | None = None) -> "RaceConfig":
        cfg = cls()
        if recipe:
            path = resolve_recipe(recipe)
            try:
                data = yaml.safe_load(path.read_text()) or {}
            except yaml.YAMLError as err:
                raise ConfigError(f"{path}: not valid YAML ({err})") from None
            if not isinstance(data, dict):
                raise ConfigError(f"{path}: a recipe is a mapping of sections, got {type(data).__name__}")
            for key, value in _flatten(data):
                cfg.set(key, value, str(path))
        for item in overrides or []:
            if "=" not in item:
                raise ConfigError(f"--set {item!r}: expected key=value")
            key, text = item.split("=", 1)
            cfg.set(key.strip(), yaml.safe_load(text) if text.strip() else "", "--set")
        return cfg

    def valid_keys(self) -> list[str]:
        keys = ["task"]
        for f in fields(self):
            section = getattr(self, f.name)
            if dataclasses.is_dataclass(section):
                keys += [f"{f.name}.{g.name}" for g in fields(section)]
        return keys

    def set(self, key: str, value, where: str = "config") -> None:
        if key not in self.valid_keys():
            raise unknown_key(key, self.valid_keys(), where)
        if key == "task":
            if value != "race":
                raise ConfigError(f"{where}: task must be race for `megazoo task race`, got {value!r}")
            return
        section_name, name = key.split(".", 1)
        section = getattr(self, section_name)
        annotation = {f.name: f.type for f in fields(section)}[name]
        if isinstance(value, str) and "float" in str(annotation):
            try:  # YAML reads 1e-5 (no dot) as a string
                value = float(value)
            except ValueError:
                pass
        setattr(section, name, check_type(key, value, annotation, where))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "RaceConfig":
        cfg = cls()
        for key, value in _flatten(d):
            cfg.set(key, value)
        return cfg

    def validate(self, world_size: int = 1) -> int:
        """Check values and the layout; return dp."""
        t, d = self.train, self.data
        if not self.model.init:
            raise ConfigError("model.init is not set: give a megazoo checkpoint (from `megazoo import-hf`) or a "
                              "Hugging Face BERT folder")
        if not d.path:
            raise ConfigError("data.path is not set: give a RACE folder (or set data.generate=true to make one)")
        if self.parallel.tp < 1 or world_size % self.parallel.tp:
            raise ConfigError(f"parallel.tp={self.parallel.tp} must be >= 1 and divide the number of ranks ({world_size})")
        dp = world_size // self.parallel.tp
        for key, value in (("train.epochs", t.epochs), ("train.micro_batch", t.micro_batch)):
            if value < 1:
                raise ConfigError(f"{key} must be >= 1, got {value}")
        global_batch = t.global_batch or t.micro_batch * dp
        if global_batch % (t.micro_batch * dp):
            raise ConfigError(f"train.global_batch={global_batch} must be a multiple of train.micro_batch x dp = "
                              f"{t.micro_batch} x {dp}")
        if not 0 <= t.warmup < 1:
            raise ConfigError(f"train.warmup is a fraction of the steps in [0, 1), got {t.warmup}")
        if d.max_seq_length < 8 or d.max_qa_length < 1:
            raise ConfigError(f"data.max_seq_length ({d.max_seq_length}) must be >= 8 and data.max_qa_length "
                              f"({d.max_qa_length}) >= 1")
        return dp

    def global_batch(self, dp: int) -> int:
        return self.train.global_batch or self.train.micro_batch * dp

    def run_dir(self) -> Path:
        return Path(self.log.dir)


def _flatten(d: dict, prefix: str = ""):
    for key, value in d.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _flatten(value, name + ".")
        else:
            yield name, value
