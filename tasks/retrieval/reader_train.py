"""Training the reader on retrieved passages: `reader` (fixed retrieval), `e2e` (end-to-end,
"individual top-k": the reader's passage posterior also trains the query encoder) and `mss`
(e2e on masked salient spans of training passages, mss.py: REALM-style pretraining of the query
tower, started from an ICT retriever).

Both stages embed the passage collection once with the retriever's context tower (the evidence
index, faiss Flat) and retrieve each question's top-k. `reader` trains the span reader (reader.py)
on those fixed passages with the retriever's fixed log p(z | q). `e2e` trains the reader and the
query tower together on the marginal likelihood (a shared-towers retriever is split into a trained
query tower and its frozen context tower, which keeps the index valid); every `refresh_steps`
steps the training questions are embedded again with the current query tower and their top-k
refreshed from the index. All report exact match of the final answers, the top-k answer recall
of the passages read and DPR top-1/5/20 of the (final) query tower on the test questions.

One process (this loop is not the core trainer: no tensor/pipeline/data parallelism here); a run
writes LOG_DIR/reader.json (metrics, the loss curve, timings), reader.predictions.json,
reader.pt (the reader's weights) and, for e2e and mss, retriever/ (both towers as a checkpoint
that index, evaluate and train.init_from read).
"""

from __future__ import annotations

import copy
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from megazoo.core.train.config import ConfigError
from megazoo.core.train.config_checks import fill_dataclass

COMPONENTS = ("reader", "e2e", "mss")
_VECTORS: dict = {}  # (retriever, passages, lengths) -> context vectors: runs in one process share them


@dataclass
class ReaderTask:
    name: str = "retrieval"
    component: str = "reader"  # reader: fixed retrieval; e2e: the query tower trains too; mss: e2e on masked spans
    retriever: str = ""  # the retriever's checkpoint (shared or separate towers)
    reader_init: str = ""  # the reader's BERT (default: train.init_from)
    passages: str = "psgs_w100.tsv"  # in data.path, or a path
    train_file: str = "nq-train.json"
    test_file: str = "nq-test.json"
    top_k: int = 4
    question_length: int = 32
    passage_length: int = 0  # the retriever's passage tokens (0: its run's own, else 256)
    reader_length: int = 160  # the reader's tokens: question, title and text
    max_answer_tokens: int = 10
    refresh_steps: int = 10  # e2e: re-retrieve the training questions every N steps
    retriever_lr: float = 1e-5  # e2e: the query tower's learning rate
    train_questions: int = 0  # 0: all of train_file
    test_questions: int = 0  # 0: all of test_file

    @classmethod
    def from_dict(cls, task: dict) -> "ReaderTask":
        out = fill_dataclass(cls, task, "task", "task retrieval reader")
        if out.component not in COMPONENTS:
            raise ConfigError(f"task.component={out.component!r}; choose one of {', '.join(COMPONENTS)}")
        if not out.retriever:
            raise ConfigError("task.retriever: give the retriever's checkpoint (a finetune run's checkpoints/)")
        if out.top_k < 1 or out.refresh_steps < 1 or out.max_answer_tokens < 1:
            raise ConfigError("task.top_k, task.refresh_steps and task.max_answer_tokens must be >= 1")
        if out.reader_length < out.question_length + 8:
            raise ConfigError("task.reader_length must leave room for a passage after the question")
        return out


def _file(data_path, name: str) -> Path:
    inside = Path(data_path) / name if data_path else None
    return inside if inside is not None and inside.exists() else Path(name)


class Retrieval:
    """The evidence index (context vectors of every passage) and a query tower to search it."""

    def __init__(self, s: ReaderTask, passages, trainable: bool):
        from megazoo.tasks.retrieval.encoder import BiEncoder
        from megazoo.tasks.retrieval.index import build_index

        self.enc = BiEncoder(s.retriever, None, s.question_length, s.passage_length or None, batch=32)
        key = (str(Path(s.retriever).resolve()), tuple(p.id for p in passages), self.enc.passage_length,
               self.enc.pooling)
        if key not in _VECTORS:
            _VECTORS.clear()
            _VECTORS[key] = self.enc.passages([p.title for p in passages], [p.text for p in passages], progress=True)
        self.vectors = _VECTORS[key]
        self.index = build_index(self.vectors, "flat")
        query = self.enc.query_model if self.enc.separate else self.enc.model
        self.query = copy.deepcopy(query) if trainable and not self.enc.separate else query
        self.query.requires_grad_(trainable)
        self.table = torch.from_numpy(self.vectors)

    def embed(self, texts: list[str], grad: bool = False) -> torch.Tensor:
        from megazoo.tasks.retrieval.inputs import pad_rows
        from megazoo.zoo.pooling import pool

        rows = self.enc.rows.questions(texts)
        out = []
        with torch.set_grad_enabled(grad):
            for i in range(0, len(rows), 32):
                mb = pad_rows(rows[i:i + 32], self.enc.rows.pad, multiple=1)
                mask = mb["attention_mask"] if not bool(mb["attention_mask"].all()) else None
                hidden = self.query(mb["input_ids"], attention_mask=mask, token_type_ids=mb["token_type_ids"]).hidden
                out.append(pool(hidden, mb["attention_mask"], self.enc.pooling).float())
        return torch.cat(out)

    def top_k(self, texts: list[str], k: int) -> np.ndarray:
        from megazoo.tasks.retrieval.index import search

        was = self.query.training
        self.query.eval()
        q = self.embed(texts).numpy()
        self.query.train(was)
        return search(self.index, q, k)[1]

    def log_probs(self, q: torch.Tensor, found) -> torch.Tensor:
        """[n, k] log p(z | q) over each question's k passages (the inner products' softmax)."""
        idx = torch.as_tensor(np.asarray(found), dtype=torch.long)
        return torch.log_softmax(torch.einsum("nh,nkh->nk", q, self.table[idx]), -1)


class ReaderData:
    """Reader rows of (question, passage) pairs, tokenised once per passage."""

    def __init__(self, tok, passages, s: ReaderTask):
        self.tok, self.s, self.passages = tok, s, passages
        self.titles = tok.encode_batch([p.title for p in passages])
        self.texts = tok.encode_batch([p.text for p in passages])

    def rows(self, question: str, answers: list[str], found) -> list:
        from megazoo.tasks.retrieval.reader import reader_row

        q = self.tok.encode(question)
        a = [self.tok.encode(x) for x in answers]
        return [reader_row(q, self.titles[int(j)], self.texts[int(j)], a, self.tok.cls, self.tok.sep,
                           self.s.reader_length, self.s.question_length) for j in found]


def read_batch(reader, rows):
    """(start log-probs, end log-probs) [len(rows), L] of a list of ReaderRows."""
    from megazoo.tasks.retrieval.inputs import pad_rows
    from megazoo.tasks.retrieval.reader import span_log_probs, text_mask

    mb = pad_rows([r.row for r in rows], 0, multiple=8)
    start, end = reader(mb["input_ids"], mb["attention_mask"], mb["token_type_ids"])
    return span_log_probs(start, end, text_mask(rows, start.shape[1]))


def evaluate_reader(reader, retrieval: Retrieval, data: ReaderData, questions, s: ReaderTask) -> dict:
    """EM of the best span over each question's top-k, and the top-k answer recall (DPR has_answer)."""
    from megazoo.tasks.retrieval.evaluate import has_answer
    from megazoo.tasks.retrieval.reader import best_span, exact_match

    reader.eval()
    texts = [x.question for x in questions]
    found = retrieval.top_k(texts, s.top_k)
    em, recall, preds = 0, 0, []
    with torch.no_grad():
        lp = retrieval.log_probs(retrieval.embed(texts), found)
        for i, x in enumerate(questions):
            rows = data.rows(x.question, x.answers, found[i])
            ls, le = read_batch(reader, rows)
            z, a, b = best_span(ls, le, lp[i], s.max_answer_tokens)
            answer = data.tok.decode(rows[z].row.ids[a:b + 1])
            hit = exact_match(answer, x.answers)
            em += hit
            recall += any(has_answer(x.answers, data.passages[int(j)].text) for j in found[i])
            preds.append({"question": x.question, "answers": x.answers, "prediction": answer, "em": bool(hit),
                          "ids": [int(j) for j in found[i]]})
    reader.train()
    n = len(questions)
    return {"em": 100.0 * em / n, f"top{s.top_k}_recall": 100.0 * recall / n, "n": n, "predictions": preds}


def retrieval_top_k(retrieval: Retrieval, data: "ReaderData", questions, ks=(1, 5, 20)) -> dict:
    """DPR top-k accuracy (has_answer) of the current query tower on `questions`."""
    from megazoo.tasks.retrieval.evaluate import has_answer, top_k_accuracy

    found = retrieval.top_k([x.question for x in questions], max(ks))
    hit_lists = [[has_answer(x.answers, data.passages[int(j)].text) for j in row] for x, row in zip(questions, found)]
    return {f"retrieval_{k}": v for k, v in top_k_accuracy(hit_lists, ks).items()}


def save_retriever(retrieval: Retrieval, s: ReaderTask, out: Path) -> Path:
    """The trained query tower and the (fixed) context tower as a two-tower checkpoint that index,
    evaluate and `train.init_from` (task.shared_towers false) read; the tokenizer copied beside it."""
    import shutil

    from megazoo.core.checkpoint import save_full_model_state
    from megazoo.zoo.embed import read_checkpoint
    from megazoo.zoo.hf.shard import gather_full_state

    _, cfg, _, tok_dir, _ = read_checkpoint(s.retriever)
    # full states: the real vocabulary, without the padding rows the model holds
    state = {f"query.{k}": v for k, v in gather_full_state(retrieval.query).items()}
    state |= {f"context.{k}": v for k, v in gather_full_state(retrieval.enc.model).items()}
    folder = out / "retriever"
    if folder.exists():
        shutil.rmtree(folder)
    task = {"name": "retrieval", "question_length": retrieval.enc.question_length,
            "passage_length": retrieval.enc.passage_length, "shared_towers": False}
    save_full_model_state(folder, state, {"arch": "bert", "model": cfg.to_dict(), "task": task})
    shutil.copytree(tok_dir, folder / "tokenizer")
    return folder


def train_reader(cfg, progress: bool = True) -> dict:
    """Train (component reader, e2e or mss) and evaluate; writes the run folder; returns the record."""
    from megazoo.tasks.retrieval.data import read_dpr_json, read_passages, read_qas
    from megazoo.tasks.retrieval.encoder import BiEncoder
    from megazoo.tasks.retrieval.reader import SpanReader, answer_log_likelihood, marginal_loss

    s = ReaderTask.from_dict(cfg.task)
    t = cfg.train
    e2e = s.component in ("e2e", "mss")
    init = s.reader_init or t.init_from
    if not init:
        raise ConfigError("the reader needs a BERT to start from: train.init_from or task.reader_init")
    torch.manual_seed(t.seed)
    rng = np.random.RandomState(t.seed)
    passages = read_passages(_file(cfg.data.path, s.passages))
    train_q = read_dpr_json(_file(cfg.data.path, s.train_file), need_positive=False)
    test_q = read_qas(_file(cfg.data.path, s.test_file))
    if s.component == "mss":  # masked salient spans of the training questions' positive passages
        from megazoo.tasks.retrieval.mss import mss_examples

        texts = list(dict.fromkeys(c["text"] for q in train_q for c in q.positives))
        train_q = mss_examples(texts, seed=t.seed)
    train_q = train_q[:s.train_questions] if s.train_questions else train_q
    test_q = test_q[:s.test_questions] if s.test_questions else test_q
    start = time.perf_counter()
    retrieval = Retrieval(s, passages, trainable=e2e)
    base = BiEncoder(init, None, s.question_length, s.reader_length)
    reader = SpanReader(base.model, base.hidden_size)
    reader.encoder.requires_grad_(True)
    reader.train()
    data = ReaderData(base.rows.tok, passages, s)
    groups = [{"params": list(reader.parameters()), "lr": t.lr}]
    if e2e:
        retrieval.query.train()
        groups.append({"params": list(retrieval.query.parameters()), "lr": s.retriever_lr})
    opt = torch.optim.AdamW(groups, weight_decay=t.weight_decay)
    base_lrs = [g["lr"] for g in groups]
    steps, batch = t.steps, t.micro_batch
    warmup = int(t.warmup_fraction * steps) if t.warmup_fraction else t.warmup
    order, pos = rng.permutation(len(train_q)), 0
    texts = [x.question for x in train_q]
    found = retrieval.top_k(texts, s.top_k)
    losses, refreshes = [], 0
    for step in range(steps):
        if e2e and step and step % s.refresh_steps == 0:
            found = retrieval.top_k(texts, s.top_k)
            refreshes += 1
        scale = (step + 1) / warmup if step < warmup else max(0.0, (steps - step) / max(1, steps - warmup))
        for g, lr in zip(groups, base_lrs):
            g["lr"] = lr * scale
        pick = []
        for _ in range(batch):
            if pos == len(order):
                order, pos = rng.permutation(len(train_q)), 0
            pick.append(int(order[pos]))
            pos += 1
        q = retrieval.embed([texts[i] for i in pick], grad=e2e)
        lp = retrieval.log_probs(q, [found[i] for i in pick])
        if not e2e:
            lp = lp.detach()
        rows = [data.rows(train_q[i].question, train_q[i].answers, found[i]) for i in pick]
        ls, le = read_batch(reader, [r for rs in rows for r in rs])
        k = s.top_k
        terms = [marginal_loss(lp[j], answer_log_likelihood(ls[j * k:(j + 1) * k], le[j * k:(j + 1) * k], rows[j]))
                 for j in range(len(pick))]
        terms = [x for x in terms if x is not None]
        if not terms:  # no answer in any passage read this step: nothing to learn from
            losses.append(None)
            continue
        loss = torch.stack(terms).mean()
        opt.zero_grad()
        loss.backward()
        if t.clip_grad:
            torch.nn.utils.clip_grad_norm_([p for g in groups for p in g["params"]], t.clip_grad)
        opt.step()
        losses.append(float(loss.detach()))
        if progress and (step + 1) % max(1, t.log_interval) == 0:
            print(f"step {step + 1}/{steps} loss {losses[-1]:.4f} ({len(terms)}/{len(pick)} questions with an "
                  f"answer in their top-{k})", file=sys.stderr)
    train_s = time.perf_counter() - start
    result = evaluate_reader(reader, retrieval, data, test_q, s)
    preds = result.pop("predictions")
    result |= retrieval_top_k(retrieval, data, test_q)
    record = {"task": "retrieval", "component": s.component, "n": result.pop("n"), "metrics": result,
              "steps": steps, "questions_per_step": batch, "top_k": s.top_k, "refreshes": refreshes,
              "losses": losses, "train_s": train_s, "eval_s": time.perf_counter() - start - train_s,
              "retriever": s.retriever, "reader_init": str(init), "test_file": s.test_file}
    out = Path(cfg.run_dir())
    out.mkdir(parents=True, exist_ok=True)
    (out / "reader.json").write_text(json.dumps(record, indent=1))
    (out / "reader.predictions.json").write_text(json.dumps({"predictions": preds}, indent=0))
    torch.save(reader.state_dict(), out / "reader.pt")
    if e2e:
        record["retriever_out"] = str(save_retriever(retrieval, s, out))
        (out / "reader.json").write_text(json.dumps(record, indent=1))
    if not all(math.isfinite(x) for x in losses if x is not None):
        raise ValueError("the reader's loss is not finite; lower train.lr")
    return record
