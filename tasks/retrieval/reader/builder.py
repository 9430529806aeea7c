"""The reader stages on the core trainer (`task.component: reader | e2e | mss` in a retrieval
recipe; ../builder.py's `build` hands such a recipe here): the extractive span reader over each
question's top-k retrieved passages, trained by the answer's marginal likelihood (span.py,
loss.py), and end to end the retriever's query tower with it (Sachan et al. 2021,
"individual top-k"; `task.top_k_mode: joint`, joint.py, normalises the spans of the k passages
together). Every trainer feature applies: tensor and data parallelism, precision,
checkpoints and resume, logging, progress, MFU.

The evidence (every passage's vector from the retriever's context tower, a faiss Flat index) is
embedded once, before the first step with each rank its share (or read from task.vectors), and
stays fixed. `reader`: the training and test questions are retrieved once with
the retriever's query tower, whose log p(z | q) is a constant prior. `e2e` / `mss`: the query
tower (from the retriever: its query.* tensors, or the shared encoder) is part of the model; the
questions are re-retrieved with it before steps 0, N, 2N, ... (`before_step`, N =
task.refresh_steps; a run resumed between two refreshes re-retrieves at its first step with the
resumed tower). `mss` trains on masked salient spans of the training questions' positive passages
(mss.py). Validation: the marginal-likelihood loss on task.test_file, and `evaluate` gives the exact
match of the best span, the top-k answer recall and DPR top-1/5/20 of the current question vectors.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

import torch

from megazoo.core.train.builder import TaskBuilder
from megazoo.core.train.config import ConfigError
from megazoo.tasks.retrieval.builder import UNUSED, EncoderBuilder, data_readable
from megazoo.tasks.retrieval.inputs import pad_rows
from megazoo.tasks.retrieval.reader.model import QUESTION
from megazoo.tasks.retrieval.reader.task import ReaderTask
from megazoo.core.plan.traits import ENCODER, kind_of

HEADLESS = {"add_lm_head": False, "add_binary_head": False, "add_pooler": False}


def _query_model(retriever: str, model: dict) -> dict:
    """The query tower's model section: the retriever's config (pooling mean unless it has one),
    the run's dropout."""
    from megazoo.core.train.models import read_pretrained

    try:
        arch, saved = read_pretrained(retriever)
    except ConfigError as e:
        raise ConfigError(str(e).replace("train.init_from", "task.retriever")) from None
    if kind_of(arch) != ENCODER:
        raise ConfigError(f"task.retriever={retriever!r} holds a {arch!r} model; the retriever is a BERT bi-encoder")
    out = {**saved, **HEADLESS, "arch": "bert", "task_head": "none"}
    if out.get("pooling", "none") == "none":
        out["pooling"] = "mean"
    for key in ("dropout", "attention_dropout"):
        if key in model:
            out[key] = model[key]
    return out


class ReaderBuilder(TaskBuilder):
    def __init__(self, task: dict, model: dict, recompute: str = "none"):
        self.settings = s = ReaderTask.from_dict(task)
        arch = model.get("arch", "bert")
        if kind_of(arch) != ENCODER:
            raise ConfigError(f"the retrieval reader is a BERT span reader, got model.arch={arch!r}; start from a BERT "
                              f"(train.init_from: `megazoo import-hf` of MiniLM, an HF BERT folder)")
        reader = EncoderBuilder({**model, **HEADLESS, "arch": "bert", "task_head": "span", "pooling": "none"}, recompute)
        reader.unused_ok = UNUSED
        super().__init__(reader, asdict(s))
        if s.reader_length > reader.config.seq_length:
            raise ConfigError(f"task.reader_length={s.reader_length} exceeds the reader's {reader.config.seq_length} "
                              f"positions; lower it")
        self.query = EncoderBuilder(_query_model(s.retriever, model), recompute) if s.end_to_end else None
        self.evidence = self.rows = self.train = self.test = None
        self.found_at = None  # the step of the last retrieval with the query tower (end to end)
        self.predictions: list = []
        self.eval_seconds = 0.0
        self._pad = 0

    # the model ---------------------------------------------------------------------------------
    def check_layout(self, parallel) -> None:
        from megazoo.tasks.retrieval.reader.model import check_layout

        super().check_layout(parallel)
        if self.query is not None:
            self.query.check_layout(parallel)
        check_layout(parallel)

    def chunks(self, ctx, seed: int, device=None) -> list:
        from megazoo.tasks.retrieval.reader.model import make_reader_model

        model = make_reader_model(self.model.config, self.query.config if self.query else None, ctx, seed, device)
        if model.query is not None:  # the optimizer scales the schedule's rate for these (core/optim)
            for p in model.query.parameters():
                p.lr_scale = self.settings.retriever_lr_scale
        return [model]

    def load_weights(self, chunks, path, ctx) -> dict:
        """The reader from train.init_from (a two-tower retriever: its context tower, which reads
        passages), the query tower from task.retriever (its query tower, or the shared encoder)."""
        from megazoo.core.parallel.context import ParallelContext
        from megazoo.tasks.retrieval.reader.model import load_tower

        single = ParallelContext.single()
        report = load_tower(chunks[0].reader, path, ctx, self.model.chunks(single, 0, device="meta")[0], UNUSED,
                            "context", "reader", "train.init_from")
        if self.query is not None:
            q = load_tower(chunks[0].query, self.settings.retriever, ctx, self.query.chunks(single, 0, device="meta")[0],
                           UNUSED, "query", "query", "task.retriever")
            report = {k: report[k] + q[k] for k in report}
        return report

    def num_parameters(self, tp: int = 1) -> int:
        return self.model.num_parameters(tp) + (self.query.num_parameters(tp) if self.query else 0)

    # data --------------------------------------------------------------------------------------
    def _file(self, data: dict, name: str) -> Path | str:
        if name.startswith("hf:"):  # a Hub id: the readers take Hugging Face datasets (data_hf.py)
            return name
        inside = Path(data["path"]) / name if data.get("path") else None
        return inside if inside is not None and inside.exists() else Path(name)

    def check_data(self, data: dict) -> None:
        s = self.settings
        for key in ("passages", "train_file", "test_file"):
            name = getattr(s, key)
            path = self._file(data, name)
            if key == "passages" and Path(path).is_dir():  # a passage store (`megazoo task retrieval store`)
                continue
            if not data_readable(path):
                raise ConfigError(f"task.{key}={name!r}: no such file in data.path={data.get('path')!r} or as a path "
                                  f"(`megazoo task retrieval data DIR` writes a set)")

    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        from megazoo.tasks.retrieval.data import read_dpr_json, read_qas
        from megazoo.tasks.retrieval.store import open_store
        from megazoo.tasks.retrieval.reader.data import Evidence, ReaderExamples, ReaderRows, Retrieved

        s = self.settings
        self.check_data(data)
        try:
            passages = open_store(self._file(data, s.passages))  # a store folder read by row, or a small .tsv
        except ValueError as e:
            raise ConfigError(f"task.passages: {e}") from None
        train_q = read_dpr_json(self._file(data, s.train_file), need_positive=False)
        test_q = read_qas(self._file(data, s.test_file))
        if s.component == "mss":  # masked salient spans of the training questions' positive passages
            from megazoo.tasks.retrieval.reader.mss import mss_examples

            train_q = mss_examples(list(dict.fromkeys(c["text"] for q in train_q for c in q.positives)), seed=seed)
        train_q = train_q[:s.train_questions] if s.train_questions else train_q
        test_q = test_q[:s.test_questions] if s.test_questions else test_q
        if tokenizer.cls is None or tokenizer.sep is None:
            raise ConfigError(f"data.tokenizer={tokenizer.name!r} has no [CLS]/[SEP]; the BERT reader needs its "
                              f"WordPiece tokenizer (data.tokenizer: bert-wordpiece)")
        self._pad = tokenizer.pad if tokenizer.pad is not None else 0
        from megazoo.zoo.embed import EmbedError

        try:
            self.evidence = ev = Evidence(s.retriever, passages, s.question_length, s.passage_length, s.vectors,
                                          s.index)
        except EmbedError as e:
            raise ConfigError(f"task.retriever: {e}") from None
        self.rows = ReaderRows(tokenizer, passages, s.reader_length, s.question_length)
        qrows = ev.enc.rows
        self.train, self.test = (Retrieved(qs, qrows.questions([x.question for x in qs])) for qs in (train_q, test_q))
        # the ranks read their data one after another here; the evidence is embedded and the questions
        # retrieved in before_step, where every rank takes part
        return (ReaderExamples(self.train, self.rows, ev, s.end_to_end, seed),
                ReaderExamples(self.test, self.rows, ev, s.end_to_end, None))

    @property
    def pad_id(self) -> int:
        return self._pad

    def collate(self, samples: list) -> dict:
        from megazoo.tasks.retrieval.reader.data import collate

        return collate(samples, self.pad_id, self.settings.end_to_end)

    # end to end: re-retrieval with the current query tower ---------------------------------------
    def question_vectors(self, chunks, ctx, dtype, rows) -> torch.Tensor:
        """[n, h] the model's query tower over question rows (collective)."""
        from megazoo.core.train.evaluation import forward_outputs

        mbs = []
        for i in range(0, len(rows), 32):
            mb = pad_rows(rows[i:i + 32], self.evidence.enc.rows.pad, multiple=8)
            mb["labels"] = torch.full((mb["input_ids"].shape[0],), QUESTION)
            mbs.append({k: v.to(ctx.device) for k, v in mb.items()})
        return torch.cat(forward_outputs(chunks, ctx, mbs, lambda out, mb: out.query.cpu(), self.hidden_size, dtype))

    def before_step(self, step: int, chunks, ctx, dtype) -> None:
        """The trainer's hook before each step (every rank): the first call embeds the evidence, each
        rank its share (Evidence.embed), and with fixed retrieval retrieves the questions once with the
        retriever's own question vectors; end to end, re-retrieve every task.refresh_steps steps."""
        s = self.settings
        self.evidence.embed(ctx)
        if not s.end_to_end:
            for r in (self.train, self.test):
                if r.found is None:
                    r.vectors = torch.from_numpy(self.evidence.enc.questions([x.question for x in r.questions]))
                    r.found = self.evidence.search(r.vectors.numpy(), s.top_k)
                    r.prior = self.evidence.prior(r.vectors, r.found)
            return
        if self.found_at is not None and (step == self.found_at or step % s.refresh_steps):
            return
        for r in (self.train, self.test):
            r.found = self.evidence.search(self.question_vectors(chunks, ctx, dtype, r.query_rows).numpy(), s.top_k)
        self.found_at = step

    # objective and metrics -----------------------------------------------------------------------
    def loss_counts(self, micro_batches: list[dict]) -> dict:
        """The questions with a loss: an answer in a passage (joint: as a span of at most max_answer_tokens)."""
        s = self.settings
        if s.top_k_mode == "joint":
            from megazoo.tasks.retrieval.reader.joint import answerable
            from megazoo.tasks.retrieval.reader.loss import text_mask

            return {"questions": sum(answerable(mb["spans"], text_mask(mb["text"], mb["input_ids"].shape[1]),
                                                len(mb["answerable"]), s.max_answer_tokens).sum()
                                     for mb in micro_batches)}
        return {"questions": sum(mb["answerable"].sum() for mb in micro_batches)}

    def loss(self, out, mb: dict, counts: dict) -> torch.Tensor:
        from megazoo.tasks.retrieval.reader.loss import question_losses

        s = self.settings
        return question_losses(out, mb, s.top_k_mode, s.max_answer_tokens).sum() / counts["questions"]

    def evaluate(self, chunks, ctx, dtype) -> dict:
        from megazoo.tasks.retrieval.reader.evaluate import predict

        if self.test is None or not len(self.test):
            return {}
        t0 = time.perf_counter()
        r = self.test
        q = self.question_vectors(chunks, ctx, dtype, r.query_rows) if self.settings.end_to_end else r.vectors
        metrics, self.predictions = predict(chunks, ctx, self, r, q, dtype)
        self.eval_seconds = time.perf_counter() - t0
        return metrics
