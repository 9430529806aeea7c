"""The settings of the reader stages (`task.component: reader | e2e | mss` in a retrieval recipe),
checked before any rank starts.

    reader   the span reader on fixed retrieval (the retriever's log p(z | q) is a constant)
    e2e      the reader and the query tower trained together ("individual top-k"), the training
             questions re-retrieved every `refresh_steps` steps with the current query tower
    mss      e2e on masked salient spans of the training passages (REALM-style pretraining of the
             query tower, started from an ICT retriever; mss.py)

`top_k_mode` says how the k passages are read: `individual` (each passage's spans normalised on
their own, the answer marginalised over the passages; span.py, loss.py) or `joint` (one
normalisation over every candidate span of the k passages, log p(z | q) added to each; joint.py).
Both apply to every component: on fixed retrieval (`reader`) joint is the reader's shared
normalisation across passages (Clark & Gardner 2018) with the constant prior as a passage bias, a
reader objective in its own right, so it is accepted there too; end to end it also trains the
query tower.
"""

from __future__ import annotations

from dataclasses import dataclass

from megazoo.core.train.config import ConfigError
from megazoo.core.train.config_checks import fill_dataclass

COMPONENTS = ("reader", "e2e", "mss")
TOP_K_MODES = ("individual", "joint")


@dataclass
class ReaderTask:
    component: str = "reader"  # reader: fixed retrieval; e2e: the query tower trains too; mss: e2e on masked spans
    retriever: str = ""  # the retriever's checkpoint (shared or separate towers)
    reader_init: str = ""  # the reader's BERT: must be train.init_from (kept for old recipes)
    passages: str = "psgs_w100.tsv"  # in data.path, or a path: a psgs_w100.tsv, or a passage store folder
    vectors: str = ""  # the passages' context vectors (`megazoo task retrieval embed` with task.retriever); "": here
    index: str = ""  # an index of those vectors (`megazoo task retrieval index --vectors`); "": a Flat made here
    train_file: str = "nq-train.json"
    test_file: str = "nq-test.json"
    top_k: int = 4
    top_k_mode: str = "individual"  # individual: each passage on its own; joint: one normalisation over all k
    question_length: int = 32
    passage_length: int = 0  # the retriever's passage tokens (0: its run's own, else 256)
    reader_length: int = 160  # the reader's tokens: question, title and text
    max_answer_tokens: int = 10
    refresh_steps: int = 10  # e2e: re-retrieve the training questions every N steps
    retriever_lr_scale: float = 1.0  # e2e/mss: the query tower's learning rate as a multiple of train.lr's schedule
    retriever_lr: float = 0.0  # refused: use retriever_lr_scale (kept so old recipes get a clear error)
    train_questions: int = 0  # 0: all of train_file
    test_questions: int = 0  # 0: all of test_file
    eval_batch: int = 8  # questions per evaluation micro-batch (x top_k reader rows)

    @property
    def end_to_end(self) -> bool:
        return self.component in ("e2e", "mss")

    @classmethod
    def from_dict(cls, task: dict) -> "ReaderTask":
        task = {k: v for k, v in task.items() if k != "name"}
        out = fill_dataclass(cls, task, "task", "task retrieval reader")
        if out.component not in COMPONENTS:
            raise ConfigError(f"task.component={out.component!r}; choose one of {', '.join(COMPONENTS)}")
        if out.top_k_mode not in TOP_K_MODES:
            raise ConfigError(f"task.top_k_mode={out.top_k_mode!r}; choose one of {', '.join(TOP_K_MODES)}")
        if not out.retriever:
            raise ConfigError("task.retriever: give the retriever's checkpoint (a retriever run's checkpoints/)")
        if out.top_k < 1 or out.refresh_steps < 1 or out.max_answer_tokens < 1 or out.eval_batch < 1:
            raise ConfigError("task.top_k, task.refresh_steps and task.max_answer_tokens must be >= 1")
        if out.reader_length < out.question_length + 8:
            raise ConfigError("task.reader_length must leave room for a passage after the question")
        if out.retriever_lr:
            raise ConfigError(f"task.retriever_lr={out.retriever_lr:g}: the query tower follows train.lr's schedule; "
                              f"give its rate as a multiple of train.lr, task.retriever_lr_scale (e.g. 0.2)")
        if not out.retriever_lr_scale >= 0:
            raise ConfigError(f"task.retriever_lr_scale={out.retriever_lr_scale:g}: must be >= 0 (0 freezes the "
                              f"query tower's weights; 1 is train.lr)")
        if out.reader_init:
            raise ConfigError("task.reader_init: give the reader's BERT as train.init_from (the trainer loads it)")
        return out
