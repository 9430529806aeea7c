"""The pieces the task packages share instead of writing them again (issue #37): a task's settings
checked from declared bounds and choices (core/train/task_settings.py), a BERT with a zoo head and
its task builder (zoo/bert/task.py), a decoder task's model (zoo/gpt/task.py), the first n samples
of a source (core/train/rows.py First), and a rank's one-line user errors (eval/taskkit.on_rank)."""

from dataclasses import asdict, dataclass
from types import SimpleNamespace

import pytest
import torch

from megazoo.core.train.errors import ConfigError
from megazoo.core.train.rows import First
from megazoo.core.train.task_settings import TaskSettings
from megazoo.zoo.bert.heads import POOLER, PRETRAINING_HEADS
from megazoo.zoo.bert.task import HeadTaskBuilder, SpanWindows, encoder_with_head
from megazoo.zoo.gpt.task import decoder_arch, decoder_model

TINY_BERT = {"num_layers": 1, "hidden_size": 16, "num_heads": 2, "vocab_size": 64, "seq_length": 16}


@dataclass
class Toy(TaskSettings):
    NAME = "toy"
    CHOICES = {"kind": ("a", "b")}
    BOUNDS = {"size": 8, "share": 0.0}

    kind: str = "a"
    size: int = 16
    share: float = 0.5
    derived: int = 0

    def check(self) -> None:
        if self.share > 1:
            raise ConfigError(f"task.share must be at most 1, got {self.share}")
        if not self.derived:
            self.derived = self.size * 2


@dataclass
class ToySpan(SpanWindows, TaskSettings):
    NAME = "toyspan"
    BOUNDS = {"n_best": 5}  # the nearest class wins a key

    eval_batch: int = 4


def test_settings_fill_check_and_derive():
    t = Toy.from_dict({"kind": "b", "size": 8})
    assert (t.kind, t.size, t.share, t.derived) == ("b", 8, 0.5, 16)
    assert Toy.from_dict({"size": "12"}).size == 12  # YAML's numbers as strings, as fill_dataclass takes them


@pytest.mark.parametrize("task, message", [
    ({"kind": "c"}, "task.kind must be one of a, b (task toy), got 'c'"),
    ({"size": 7}, "task.size must be >= 8 (task toy), got 7"),
    ({"share": -0.5}, "task.share must be >= 0.0 (task toy), got -0.5"),
    ({"share": 2}, "task.share must be at most 1, got 2.0"),
    ({"sise": 9}, "did you mean `task.size`"),
    ({"size": "many"}, "task.size must be int"),
])
def test_settings_errors_name_the_key(task, message):
    with pytest.raises(ConfigError) as e:
        Toy.from_dict(task)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_shared_key_groups_bring_their_bounds():
    s = ToySpan.from_dict({"doc_stride": 64})
    assert asdict(s) == {"doc_stride": 64, "max_query_length": 64, "max_answer_length": 30, "n_best": 20,
                         "eval_batch": 4}
    with pytest.raises(ConfigError, match=r"task.doc_stride must be >= 1 \(task toyspan\), got 0"):
        ToySpan.from_dict({"doc_stride": 0})
    with pytest.raises(ConfigError, match="task.n_best must be >= 5"):
        ToySpan.from_dict({"n_best": 3})


def test_encoder_with_head_drops_what_the_head_does_not_read():
    span = encoder_with_head(TINY_BERT, "none", "task t needs a BERT", "span", num_labels=2, add_pooler=False)
    assert span.to_dict()["task_head"] == "span" and not span.to_dict()["add_pooler"]
    assert span.unused_ok == PRETRAINING_HEADS + POOLER
    choice = encoder_with_head(TINY_BERT, "none", "task t needs a BERT", "choice")
    assert choice.to_dict()["add_pooler"] and choice.unused_ok == PRETRAINING_HEADS
    assert not choice.to_dict()["add_lm_head"] and not choice.to_dict()["add_binary_head"]
    with pytest.raises(ConfigError, match="task t needs a BERT, got model.arch='gpt'; start from a BERT"):
        encoder_with_head({**TINY_BERT, "arch": "gpt"}, "none", "task t needs a BERT", "span")


def test_decoder_model_refuses_other_kinds():
    assert decoder_arch({}, "task t trains decoders") == "gpt"
    with pytest.raises(ConfigError, match="task t trains decoders: model.arch='bert' is not one of gpt, llama"):
        decoder_model({"arch": "bert"}, "none", "task t trains decoders")


@dataclass
class SpanSettings:
    max_seq_length: int = 8
    eval_batch: int = 2


class SpanTask(HeadTaskBuilder):
    def __init__(self, model: dict, max_seq_length: int = 8):
        self.settings = SpanSettings(max_seq_length)
        super().__init__(model, "none", "task t needs a BERT", "span", num_labels=2, add_pooler=False)


def test_head_task_builder_batches_and_checks_length():
    task = SpanTask(TINY_BERT)
    task.check_length()
    with pytest.raises(ConfigError, match="task.max_seq_length=32 exceeds the encoder's 16 positions"):
        SpanTask(TINY_BERT, 32).check_length()
    row = {"input_ids": torch.tensor([2, 5, 3] + [0] * 7), "token_type_ids": torch.zeros(10, dtype=torch.long),
           "attention_mask": torch.tensor([1, 1, 1] + [0] * 7), "start_positions": torch.tensor(1),
           "end_positions": torch.tensor(1)}
    batch = task.collate([row, row])
    assert batch["input_ids"].shape == (2, 8)  # padding columns cut to a multiple of 8
    assert batch["labels"].tolist() == [-100, -100]  # span targets are start/end; labels only pass the pipeline
    assert float(task.loss_counts([batch, batch])["n"]) == 4.0


class Tens:
    """A source of five samples: sample i is i * 10."""

    def __len__(self) -> int:
        return 5

    def get(self, i: int) -> int:
        return i * 10


def test_first_n_samples_wrap():
    first = First(Tens(), 3)
    assert len(first) == 3 and [first.get(i) for i in range(4)] == [0, 10, 20, 0]
    assert len(First(Tens(), 0)) == 5 and len(First(Tens(), 9)) == 5


def test_a_rank_reports_a_known_error_once():
    from megazoo.eval.taskkit import on_rank

    def bad():
        raise ValueError("--data x: no such file")

    assert on_rank("megazoo task t evaluate", SimpleNamespace(rank=1), bad) == 2
    with pytest.raises(ValueError):
        on_rank("megazoo task t evaluate", None, bad)
