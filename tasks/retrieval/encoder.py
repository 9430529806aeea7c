"""Question and passage vectors from a BERT checkpoint (an `import-hf` folder, a Hugging Face BERT
folder, or a retrieval training checkpoint), for indexing and evaluation in one process.

    enc = BiEncoder("runs/retrieval/finetune/checkpoints", pooling="mean")
    q = enc.questions(["who wrote frankenstein"])            # float32 [1, h]
    p = enc.passages(titles, texts, progress=True)           # float32 [N, h], a tqdm bar on stderr

The inputs are inputs.py's (the same rows training builds); the pooling is the checkpoint's
`model.pooling` unless given (mean for a plain encoder). Shared towers: one model encodes both;
a checkpoint with separate towers (query.*, context.*: task.shared_towers false) encodes questions
with its query tower and passages with its context tower. The similarity is the run's
task.similarity unless given (dot for a plain encoder): with cosine every vector is L2-normalised,
so a faiss inner-product index searches by cosine.
"""

from __future__ import annotations

import sys
from typing import Sequence

import numpy as np
import torch

from megazoo.core.plan.traits import ENCODER, kind_of
from megazoo.core.verbosity import shows_progress
from megazoo.tasks.retrieval.inputs import Row, RowEncoder, pad_rows
from megazoo.tasks.retrieval.similarity import SIMILARITIES, as_similarity
from megazoo.zoo.embed import EmbedError, Embedder, read_checkpoint
from megazoo.zoo.pooling import KINDS as POOLINGS
from megazoo.zoo.pooling import pool


class BiEncoder(Embedder):
    def __init__(self, checkpoint, pooling: str | None = None, question_length: int | None = None,
                 passage_length: int | None = None, batch: int = 32, device=None, dtype: torch.dtype = torch.float32,
                 similarity: str | None = None):
        from megazoo.core.data.tokenizers import hf_folder_tokenizer
        from megazoo.core.parallel.context import ParallelContext
        from megazoo.core.parallel.device import pick_device

        arch, cfg, state, tok_dir, _ = read_checkpoint(checkpoint)
        if kind_of(arch) != ENCODER:
            raise EmbedError(f"{checkpoint}: holds a {arch!r} model; the retriever is a BERT bi-encoder")
        self.arch, self.checkpoint = arch, str(checkpoint)
        self.ctx = ParallelContext.single(torch.device(device) if device is not None else pick_device())
        self.model, self.norm = self._build(arch, cfg, state, dtype)
        self.hidden_size = cfg.hidden_size
        own = getattr(cfg, "pooling", "none")
        self.pooling = pooling or (own if own != "none" else "mean")
        if self.pooling not in POOLINGS:
            raise EmbedError(f"unknown pooling {self.pooling!r}; choose one of {', '.join(POOLINGS)}")
        trained = trained_lengths(checkpoint)  # a retrieval run's own lengths, else DPR's 64 / 256
        self.similarity = similarity or trained.get("similarity") or "dot"
        if self.similarity not in SIMILARITIES:
            raise EmbedError(f"unknown similarity {self.similarity!r}; choose dot or cosine")
        question_length = question_length or trained.get("question_length") or min(64, cfg.seq_length)
        passage_length = passage_length or trained.get("passage_length") or min(256, cfg.seq_length)
        self.question_length, self.passage_length = question_length, passage_length
        longest = max(question_length, passage_length)
        if longest > cfg.seq_length:
            raise EmbedError(f"{longest} tokens exceed the model's {cfg.seq_length} positions; lower the lengths")
        self.rows = RowEncoder(hf_folder_tokenizer(str(tok_dir)), question_length, passage_length)
        self.batch = batch

    def _build(self, arch: str, cfg, state: dict, dtype: torch.dtype):
        """The context tower as self.model (passages), the query tower as self.query_model."""
        from megazoo.tasks.retrieval.towers import has_towers, tower_state

        if not has_towers(state):
            self.query_model = None
            return super()._build(arch, cfg, state, dtype)
        self.query_model, _ = super()._build(arch, cfg, tower_state(state, "query"), dtype)
        return super()._build(arch, cfg, tower_state(state, "context"), dtype)

    @property
    def separate(self) -> bool:
        return self.query_model is not None

    @torch.inference_mode()
    def encode_rows(self, rows: Sequence[Row], progress: bool = False, desc: str = "embed",
                    query: bool = False) -> np.ndarray:
        """float32 [len(rows), h] in the order of `rows` (batched by length, longest first);
        `query`: through the query tower (when the checkpoint has its own)."""
        from tqdm import tqdm

        model = self.query_model if query and self.query_model is not None else self.model

        out = np.empty((len(rows), self.hidden_size), dtype=np.float32)
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i].ids))
        bar = tqdm(total=len(order), unit="text", file=sys.stderr, disable=not shows_progress(progress), desc=desc)
        for start in range(0, len(order), self.batch):
            idx = order[start:start + self.batch]
            mb = pad_rows([rows[i] for i in idx], self.rows.pad, multiple=1)
            mb = {k: v.to(self.ctx.device) for k, v in mb.items()}
            mask = mb["attention_mask"] if not bool(mb["attention_mask"].all()) else None
            hidden = model(mb["input_ids"], attention_mask=mask, token_type_ids=mb["token_type_ids"]).hidden
            vecs = pool(hidden, mb["attention_mask"], self.pooling).float()
            out[idx] = as_similarity(vecs, self.similarity).cpu().numpy()
            bar.update(len(idx))
        bar.close()
        return out

    def questions(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        return self.encode_rows(self.rows.questions(texts), progress, "questions", query=True)

    def passages(self, titles: Sequence[str], texts: Sequence[str], progress: bool = False) -> np.ndarray:
        return self.encode_rows(self.rows.passages(titles, texts), progress, "passages")


def trained_lengths(checkpoint) -> dict:
    """{question_length, passage_length, similarity} of a retrieval training checkpoint (its task meta,
    read by the task-evaluation kit), else {} (a plain encoder, another task's checkpoint)."""
    from megazoo.eval.taskkit import NotTaskCheckpoint, read_task_meta

    try:
        _, meta = read_task_meta(checkpoint, "retrieval")
    except (NotTaskCheckpoint, FileNotFoundError):
        return {}
    task = meta["task"] if isinstance(meta["task"], dict) else {}  # `task: retrieval` written as a name alone
    out = {k: task[k] for k in ("question_length", "passage_length") if isinstance(task.get(k), int)}
    if task.get("similarity") in SIMILARITIES:
        out["similarity"] = task["similarity"]
    return out
