"""The retriever on the core trainer: `task: retrieval` in a recipe (entry point megazoo.tasks:retrieval).

A BERT bi-encoder, shared towers (one encoder embeds questions and passages) or, with
task.shared_towers: false, separate query and context encoders (towers.py) (model.pooling
mean | cls gives BertOutput.embedding). A micro-batch stacks its n questions, their n positive
passages and n x h negative passages as rows of one [n (2 + h), L] input; the score of a question
and a passage is the inner product (task.similarity cosine: of the L2-normalised vectors, as
sentence-transformers train MiniLM), times task.score_scale (a temperature), divided by sqrt(hidden)
with task.score_scaling (Megatron's --retriever-score-scaling); the loss is the softmax
cross-entropy of each question over every passage of the step: in-batch negatives, gathered
across the data-parallel group (global negatives, an all-gather whose backward sums each rank's
gradient into the passages' owner), plus the hard negatives. The loss is summed over questions
and divided by the global batch's question count, so dp=2 with a micro-batch of n/2 equals dp=1
with n: the same passages, the same gradient.

Objectives (task.objective): `ict` (inverse cloze task on a sentence-split .bin/.idx dataset:
data.path, or the embedded corpus) and `supervised` (DPR nq-train.json / nq-dev.json in the folder
data.path, hard negatives from the file or mined with BM25). Validation metrics: the rank of each
validation question's positive among all validation positives (top1_acc, top5_acc, top20_acc,
avg_rank), as Megatron's supervised validation.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from megazoo.core.parallel import collectives as C
from megazoo.core.train.builder import TaskBuilder
from megazoo.core.train.config import ConfigError
from megazoo.core.train.config_checks import fill_dataclass
from megazoo.core.train.evaluation import forward_outputs
from megazoo.tasks.retrieval.inputs import RowEncoder, pad_rows
from megazoo.tasks.retrieval.similarity import SIMILARITIES, as_similarity
from megazoo.zoo.bert.builder import BertBuilder
from megazoo.zoo.bert.config import BertConfig, megatron_bert, original_bert
from megazoo.zoo.builder_base import parse_model_section
from megazoo.core.plan.traits import ENCODER, kind_of

# tensors of a pretrained BERT that the bi-encoder does not use (pretraining heads, the pooler:
# sentence vectors pool the hidden states)
UNUSED = ("lm_dense.", "lm_norm.", "lm_bias", "head.", "binary_head.", "pooler.", "task_head.")
OBJECTIVES = ("ict", "supervised")
IGNORE = -100


@dataclass
class RetrievalTask:
    objective: str = "supervised"
    train_file: str = "nq-train.json"  # supervised: in data.path (or a path)
    valid_file: str = "nq-dev.json"
    passages: str = ""  # supervised: a psgs_w100.tsv whose passages join the BM25 negative pool
    hard_negatives: int = 1  # per question (Megatron --train-hard-neg 1)
    bm25_negatives: bool = True  # mine hard negatives with BM25 where the file has too few
    question_length: int = 64
    passage_length: int = 256
    score_scaling: bool = False  # scores / sqrt(hidden)
    similarity: str = "dot"  # dot: inner product; cosine: of L2-normalised vectors (sentence-transformers')
    score_scale: float = 1.0  # scores * this (cosine wants a temperature: sentence-transformers use 20)
    global_negatives: bool = True  # gather passages across the data-parallel group
    query_in_block_prob: float = 0.1  # ict
    ict_block_length: int = 0  # ict: tokens per sentence block (0: passage_length - 3)
    titles: str = ""  # ict: a .bin/.idx prefix with one title sequence per document
    valid_examples: int = 256  # ict: validation examples from the valid split
    eval_batch: int = 32
    shared_towers: bool = True  # false: separate query and context encoders (towers.py)

    @classmethod
    def from_dict(cls, task: dict) -> "RetrievalTask":
        out = fill_dataclass(cls, task, "task", "task retrieval")
        if out.objective not in OBJECTIVES:
            raise ConfigError(f"task.objective={out.objective!r}; choose one of {', '.join(OBJECTIVES)}")
        if out.question_length < 3 or out.passage_length < 4:
            raise ConfigError("task.question_length must be >= 3 and task.passage_length >= 4")
        if out.similarity not in SIMILARITIES:
            raise ConfigError(f"task.similarity={out.similarity!r}; choose one of {', '.join(SIMILARITIES)}")
        if not out.score_scale > 0:
            raise ConfigError(f"task.score_scale must be > 0, got {out.score_scale}")
        if out.hard_negatives < 0 or not 0 <= out.query_in_block_prob <= 1:
            raise ConfigError("task.hard_negatives must be >= 0 and task.query_in_block_prob in [0, 1]")
        return out


class EncoderBuilder(BertBuilder):
    """BERT with no head at all, one tower of the bi-encoder (BertBuilder wants a masked-LM or task head)."""

    def __init__(self, model: dict, recompute: str = "none"):
        self.arch, kwargs = parse_model_section(model, BertConfig, "bert")
        make = original_bert if kwargs.get("post_norm") else megatron_bert
        try:
            self.config = make(**kwargs, recompute=recompute)
        except ValueError as e:
            raise ConfigError(f"model: {e}") from None


class TwoTowerBuilder(EncoderBuilder):
    """Separate query and context towers (towers.py): one chunk holding both encoders."""

    def check_layout(self, parallel) -> None:
        from megazoo.tasks.retrieval.towers import check_layout

        super().check_layout(parallel)
        check_layout(parallel)

    def chunks(self, ctx, seed: int, device=None) -> list:
        from megazoo.tasks.retrieval.towers import make_towers

        return [make_towers(self.config, ctx, seed, device)]

    def load_weights(self, chunks, path, ctx) -> dict:
        from megazoo.core.parallel.context import ParallelContext
        from megazoo.tasks.retrieval.towers import load_towers

        full = super().chunks(ParallelContext.single(), 0, device="meta")[0]
        return load_towers(chunks[0], path, ctx, full, self.unused_ok)

    def num_parameters(self, tp: int = 1) -> int:
        return 2 * super().num_parameters(tp)


class RetrievalBuilder(TaskBuilder):
    def __init__(self, task: dict, model: dict, recompute: str = "none"):
        self.settings = RetrievalTask.from_dict(task)
        arch = model.get("arch", "bert")
        if kind_of(arch) != ENCODER:
            raise ConfigError(f"task retrieval trains a BERT bi-encoder, got model.arch={arch!r}; start from a BERT "
                              f"(train.init_from: `megazoo import-hf` of MiniLM, an HF BERT folder, a bert run)")
        model = {**model, "arch": "bert", "add_lm_head": False, "add_binary_head": False, "add_pooler": False,
                 "task_head": "none"}
        if model.get("pooling", "none") == "none":
            model["pooling"] = "mean"
        bert = (EncoderBuilder if self.settings.shared_towers else TwoTowerBuilder)(model, recompute)
        bert.unused_ok = UNUSED
        super().__init__(bert, asdict(self.settings))
        s = self.settings
        longest = max(s.question_length, s.passage_length)
        if longest > bert.config.seq_length:
            raise ConfigError(f"task.passage_length/question_length {longest} exceed the encoder's "
                              f"{bert.config.seq_length} positions; lower them")
        self.ctx = None
        self.valid = None

    def chunks(self, ctx, seed: int, device=None) -> list:
        self.ctx = ctx  # the loss gathers passages over ctx.dp_group
        return self.model.chunks(ctx, seed, device)

    # data --------------------------------------------------------------------------------------
    def _file(self, data: dict, name: str) -> Path | str:
        """A task file: in the data.path folder when it is there, else the path as given (a Hub id
        `hf:NAME` as it is: the readers take Hugging Face datasets, data_hf.py)."""
        if name.startswith("hf:"):
            return name
        inside = Path(data["path"]) / name if data.get("path") else None
        return inside if inside is not None and inside.exists() else Path(name)

    def check_data(self, data: dict) -> None:
        s = self.settings
        if s.objective == "supervised":
            if not data.get("path"):
                raise ConfigError("task retrieval (supervised) needs data.path: a folder with DPR nq-train.json and "
                                  "nq-dev.json (`megazoo task retrieval data DIR` writes one)")
            for name in (s.train_file, s.valid_file):
                if not data_readable(self._file(data, name)):
                    raise ConfigError(f"{name}: no such DPR json file in data.path={data['path']!r} (task.train_file "
                                      f"and task.valid_file name files there, or give paths)")

    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        self.check_data(data)
        rows = RowEncoder(tokenizer, self.settings.question_length, self.settings.passage_length)
        self._pad = rows.pad
        if self.settings.objective == "ict":
            train, valid = self._ict_sources(data, tokenizer, rows, seed)
        else:
            train, valid = self._supervised_sources(data, rows, seed)
        self.valid = valid
        return train, valid

    def _ict_sources(self, data, tokenizer, rows, seed):
        from megazoo.core.fs import cache_root
        from megazoo.core.train.rows import First
        from megazoo.tasks.retrieval.sources import ICTExamples, Shuffled, ict_blocks

        s = self.settings
        prefix = data.get("path")
        if not prefix:
            from megazoo.core.data.corpus import corpus_prefix

            prefix = corpus_prefix(tokenizer, data.get("corpus") or "stdlib", split_sentences=True)
        cache = data.get("cache_dir") or str(cache_root() / "indices")
        out = []
        for split in ("train", "valid"):
            made = ict_blocks(prefix, split, data.get("split") or "949,50,1", s.passage_length, seed, cache,
                              s.titles or None, s.ict_block_length)
            if made is None:
                raise ConfigError(f"data.split={data.get('split')!r} leaves no {split} documents for ICT")
            blocks, titles, doc_index = made
            out.append(ICTExamples(blocks, rows, seed + (0 if split == "train" else 7919), s.query_in_block_prob,
                                   titles, doc_index))
        train, valid = out
        return Shuffled(train, seed), First(valid, s.valid_examples)

    def _supervised_sources(self, data, rows, seed):
        from megazoo.tasks.retrieval.data import read_dpr_json, read_passages
        from megazoo.tasks.retrieval.negatives import mine_hard_negatives
        from megazoo.tasks.retrieval.sources import Shuffled, SupervisedExamples

        s = self.settings
        train_q = read_dpr_json(self._file(data, s.train_file))
        valid_q = read_dpr_json(self._file(data, s.valid_file))
        pool, seen = [], set()
        for q in train_q:
            for c in (*q.positives, *q.hard_negatives, *q.negatives):
                if (c["title"], c["text"]) not in seen:
                    seen.add((c["title"], c["text"]))
                    pool.append(c)
        if s.passages:
            for p in read_passages(self._file(data, s.passages)):
                if (p.title, p.text) not in seen:
                    seen.add((p.title, p.text))
                    pool.append({"title": p.title, "text": p.text, "passage_id": p.id})
        sets = []
        for qs in (train_q, valid_q):
            cands = [list(q.hard_negatives) + list(q.negatives) for q in qs]
            short = [i for i, c in enumerate(cands) if len(c) < s.hard_negatives]
            if s.bm25_negatives and short and s.hard_negatives:
                mined = mine_hard_negatives([qs[i] for i in short], pool, s.hard_negatives)
                for i, m in zip(short, mined):
                    cands[i] = cands[i] + m
            sets.append(SupervisedExamples(qs, cands, rows, s.hard_negatives, pool, seed))
        return Shuffled(sets[0], seed), sets[1]

    def collate(self, samples: list) -> dict:
        """n examples -> rows [questions; positives; negatives] and labels (the positive's row
        among the passages for a question row, -100 for passage rows)."""
        n = len(samples)
        q = [x[0] for x in samples]
        per = len(samples[0][1])
        passages = [x[1][j] for j in range(per) for x in samples]  # positives first, then negatives
        mb = pad_rows(q + passages, self.pad_id, multiple=8)
        mb["labels"] = torch.cat([torch.arange(n), torch.full((n * per,), IGNORE)])
        return mb

    @property
    def pad_id(self) -> int:
        return getattr(self, "_pad", 0)

    # objective and metrics -----------------------------------------------------------------------
    def loss_counts(self, micro_batches: list[dict]) -> dict:
        return {"questions": sum((mb["labels"] != IGNORE).sum() for mb in micro_batches)}

    def scores(self, q: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        return similarity_scores(q, p, self.settings)

    def loss(self, out, mb: dict, counts: dict) -> torch.Tensor:
        emb = out.embedding.float()
        labels = mb["labels"].to(emb.device)
        n = int((labels != IGNORE).sum())
        q, p = emb[:n], emb[n:]
        target = labels[:n].long()
        ctx = self.ctx
        if self.settings.global_negatives and ctx is not None and ctx.dp > 1:
            # [dp * rows, h]: every rank's passages; the backward reduce-scatters (sums) the
            # gradients all ranks' questions put on a passage into the rank that owns it
            p = C.gather_from_sequence(p.contiguous(), ctx.dp_group, grad_is_partial=True)
            target = target + ctx.dp_rank * (emb.shape[0] - n)
        return F.cross_entropy(self.scores(q, p), target, reduction="sum") / counts["questions"]

    def embed(self, chunks, ctx, examples, dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """(question vectors, positive vectors) of every example, on every rank (collective)."""
        b = self.settings.eval_batch
        items = [examples.get(i) for i in range(len(examples))]
        mbs = []
        for rows, label in (([x[0] for x in items], 0), ([x[1][0] for x in items], IGNORE)):
            for i in range(0, len(rows), b):
                mb = pad_rows(rows[i:i + b], self.pad_id, multiple=8)
                mb["labels"] = torch.full((mb["input_ids"].shape[0],), label)  # 0: a question (the query tower)
                mbs.append({k: v.to(ctx.device) for k, v in mb.items()})
        outs = forward_outputs(chunks, ctx, mbs, lambda out, mb: out.embedding.float().cpu(), self.hidden_size, dtype)
        vecs = torch.cat(outs)
        return vecs[:len(items)], vecs[len(items):]

    def evaluate(self, chunks, ctx, dtype) -> dict:
        if self.valid is None or len(self.valid) == 0:
            return {}
        q, p = self.embed(chunks, ctx, self.valid, dtype)
        return rank_metrics(self.scores(q.double(), p.double()))


def similarity_scores(q: torch.Tensor, p: torch.Tensor, s: RetrievalTask) -> torch.Tensor:
    """[q, p] scores: inner products (of unit vectors with similarity cosine), times score_scale,
    divided by sqrt(hidden) with score_scaling."""
    out = (as_similarity(q, s.similarity) @ as_similarity(p, s.similarity).t()) * s.score_scale
    return out / math.sqrt(q.shape[-1]) if s.score_scaling else out


def rank_metrics(scores: torch.Tensor) -> dict:
    """Each question i's positive is passage i: top-k accuracy (%) and the mean rank (1 = first)."""
    own = scores.diagonal().unsqueeze(1)
    rank = (scores > own).sum(1) + 1
    out = {f"top{k}_acc": float((rank <= k).double().mean()) for k in (1, 5, 20)}  # fractions, as every metric
    out["avg_rank"] = float(rank.double().mean())
    return out


def build(task: dict, model: dict, recompute: str = "none") -> TaskBuilder:
    """The retriever (task.objective), or the reader stages when the recipe names task.component."""
    if "component" in task:
        from megazoo.tasks.retrieval.reader.builder import ReaderBuilder

        return ReaderBuilder(task, model, recompute)
    return RetrievalBuilder(task, model, recompute)


def data_readable(path) -> bool:
    """A data file, or a Hugging Face dataset (a save_to_disk folder, parquet/arrow, `hf:NAME`)."""
    from megazoo.eval.readers.hf_source import is_hf_source

    return is_hf_source(path) or Path(path).is_file()
