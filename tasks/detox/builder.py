"""SGEAT's domain-adaptive training on the core trainer: `task: detox` in a recipe (entry point
megazoo.tasks:detox).

Plain continued pretraining of a GPT/Llama decoder (the next-token loss of the architecture's
builder) on the filtered self-generations (data.path: a .bin/.idx prefix from the filter stage),
with the validation perplexity measured on a second corpus, the pretraining data, as Megatron's
finetune_gpt.py does with --data-path2 (split 98/2/0: its validation split). Whole model, or
adapters only with `model.adapter_size` and `train.trainable: ["*adapter*"]`; the weights come
through train.init_from. The thin task builder exists only for the second validation corpus.

Task keys (task.*):
    valid_path     the pretraining corpus, a .bin/.idx prefix (null: the embedded corpus `valid_corpus`
                   tokenised with data.tokenizer)
    valid_corpus   the embedded corpus used when valid_path is null (default stdlib)
    valid_split    train,valid,test weights of that corpus; its valid split is read (default 98,2,0)
    valid_samples  sequences of model.seq_length in each evaluation (0: the whole valid split); keep
                   it a multiple of train.global_batch
    seq_length     the training sequence length (0: the model's): a rotary-position model from
                   train.init_from keeps its weights at any length, and SmolLM2's 8192 is far more than
                   short self-generations need (model.seq_length itself is fixed by the weights)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from megazoo.core.plan.traits import arch_traits
from megazoo.core.train.builder import TaskBuilder
from megazoo.core.train.errors import ConfigError
from megazoo.core.train.rows import First
from megazoo.core.train.task_settings import TaskSettings


@dataclass
class DetoxTask(TaskSettings):
    NAME = "detox"
    BOUNDS = {"valid_samples": 0, "seq_length": 0}

    valid_path: str | None = None
    valid_corpus: str = "stdlib"
    valid_split: str = "98,2,0"
    valid_samples: int = 64
    seq_length: int = 0


class DetoxBuilder(TaskBuilder):
    whole_valid_split = True  # the fixed validation sequences, whole, at every evaluation

    def __init__(self, model_builder, task: dict):
        self.settings = DetoxTask.from_dict(task)
        super().__init__(model_builder, asdict(self.settings))

    def check_data(self, data: dict) -> None:
        if not data.get("path"):
            raise ConfigError("task detox needs data.path: the .bin/.idx prefix of the filtered self-generations "
                              "(`megazoo task detox filter` writes it)")

    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        from megazoo.core.data import build_gpt_datasets
        from megazoo.core.train.data import CoreDataSource

        self.check_data(data)
        s = self.settings
        train = build_gpt_datasets({**data, "split": "100,0,0"}, tokenizer, seq_length=self.seq_length, seed=seed,
                                   num_samples=(num_samples[0], None, None)).train
        second = {"path": s.valid_path, "split": s.valid_split, "corpus": s.valid_corpus,
                  "cache_dir": data.get("cache_dir")}
        valid = build_gpt_datasets(second, tokenizer, seq_length=self.seq_length, seed=seed,
                                   num_samples=(None, None, None)).valid
        if valid is None:
            raise ConfigError(f"task.valid_split={s.valid_split!r} leaves no validation data in the second corpus "
                              f"({s.valid_path or s.valid_corpus}); give its valid split a weight")
        return CoreDataSource(train), First(CoreDataSource(valid), s.valid_samples)


def build(task: dict, model: dict, recompute: str = "none") -> DetoxBuilder:
    from megazoo.zoo.gpt.task import decoder_arch, decoder_model

    refusal = "task detox trains decoders"
    arch = decoder_arch(model, refusal)
    settings = DetoxTask.from_dict(task)
    if settings.seq_length and settings.seq_length != model.get("seq_length"):
        if (model.get("position") or arch_traits(arch).position) == "learned":
            raise ConfigError(f"task.seq_length={settings.seq_length} needs rotary positions (model.position: rope); "
                              f"this model's learned position table fixes model.seq_length")
        model = {**model, "seq_length": settings.seq_length}
    return DetoxBuilder(decoder_model(model, recompute, refusal), task)
