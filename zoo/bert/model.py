"""BERT encoder on the parallel core: Megatron's pre-LN layout and the original post-LN one.

A BertModel is one pipeline stage, as GPTModel: `pre_process` (word, position and token-type
embeddings) on the first stage, `post_process` (final norm, masked-LM head, pooler, binary head,
a fine-tuning head of zoo/heads/) on the last, global layer range `layers=(start, stop)`; layers
are keyed by their global index.
Batch-first at the edges, [s, b, h] inside (s / tp under sequence parallelism).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from megazoo.core.nn.block import TransformerLayer
from megazoo.core.nn.model import ParallelModel
from megazoo.core.nn.norm import build_norm
from megazoo.core.nn.recompute import checkpoint
from megazoo.core.parallel import collectives as C
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.cross_entropy import vocab_parallel_cross_entropy
from megazoo.core.parallel.embedding import VocabParallelEmbedding
from megazoo.core.parallel.init import describe
from megazoo.core.parallel.layers import ColumnParallelLinear
from megazoo.core.parallel.random import RNGTracker
from megazoo.zoo.bert.config import BertConfig
from megazoo.zoo.heads import POOLED_HEADS, Dense, TaskHead  # Dense: re-exported here, where it lived
from megazoo.zoo.pooling import pool


@dataclass
class BertOutput:
    hidden: torch.Tensor  # [b, s, h] the encoder's last hidden states (full sequence)
    pooled: torch.Tensor | None = None  # [b, h] tanh(dense(first token))
    lm_logits: torch.Tensor | None = None  # [b, s, vocab] (without labels)
    lm_loss: torch.Tensor | None = None  # [b, s] per-token masked-LM loss (with labels; 0 where -100)
    binary_logits: torch.Tensor | None = None  # [b, 2]
    embedding: torch.Tensor | None = None  # [b, h] fp32 sentence vector when cfg.pooling is mean or cls
    logits: torch.Tensor | None = None  # the task head's (zoo/heads/): sequence [b, n], token [b, s, n],
    #                                     span [b, s, 2], choice [b*C]


class BertModel(ParallelModel):
    def __init__(self, cfg: BertConfig, ctx: ParallelContext | None = None, pre_process: bool = True,
                 post_process: bool = True, layers: tuple[int, int] | None = None, dtype=None, device=None):
        super().__init__()
        ctx = ctx or ParallelContext.single()
        cfg.check_tensor_parallel(ctx.tp)
        self.cfg, self.ctx = cfg, ctx
        self.pre_process, self.post_process = pre_process, post_process
        self.layer_range = layers or (0, cfg.num_layers)
        self.rng: RNGTracker | None = None
        kw = dict(dtype=dtype, device=device)
        h, std = cfg.hidden_size, cfg.init_std
        if pre_process:
            self.embed = VocabParallelEmbedding(cfg.vocab_size, h, ctx, std, cfg.make_vocab_size_divisible_by, **kw)
            self.pos_embed = describe(nn.Parameter(torch.empty(cfg.seq_length, h, **kw)), ("normal", std))
            if cfg.num_tokentypes:
                self.tokentype_embed = describe(nn.Parameter(torch.empty(cfg.num_tokentypes, h, **kw)), ("normal", std))
            # the first stage's table is summed with the last stage's copy by the pipeline runtime
            self.embed.weight.shared_embedding = cfg.add_lm_head and not post_process
            if cfg.post_norm:
                self.embed_norm = build_norm(cfg.norm, h, ctx, cfg.norm_eps, **kw)
        self.layers = nn.ModuleDict({str(i): TransformerLayer(cfg, ctx, i, **kw) for i in range(*self.layer_range)})
        if post_process:
            if not cfg.post_norm:
                self.final_norm = build_norm(cfg.norm, h, ctx, cfg.norm_eps, **kw)
            if cfg.add_lm_head:
                self.lm_dense = Dense(h, h, ctx, std, seq_sharded=True, **kw)
                self.lm_norm = build_norm(cfg.norm, h, ctx, cfg.norm_eps, **kw)
                padded = cfg.padded_vocab(ctx.tp)
                if pre_process:
                    self.head = ColumnParallelLinear(h, padded, ctx, bias=False, weight=self.embed.weight, **kw)
                else:  # a copy of the first stage's table (summed gradients, as GPTModel)
                    self.head = ColumnParallelLinear(h, padded, ctx, bias=False, **kw)
                    describe(self.head.weight, ("normal", std), tp_dim=0, vocab_rows=cfg.vocab_size,
                             init_name="embed.weight")
                    self.head.weight.shared_embedding = True
                self.lm_bias = describe(nn.Parameter(torch.empty(padded // ctx.tp, **kw)), ("zeros",), tp_dim=0,
                                        vocab_rows=cfg.vocab_size)
            if cfg.add_pooler:
                self.pooler = Dense(h, h, ctx, std, **kw)
            if cfg.add_binary_head:
                self.binary_head = Dense(h, 2, ctx, std, **kw)
            if cfg.task_head != "none":
                self.task_head = TaskHead(cfg.task_head, h, cfg.num_labels, ctx, std, cfg.dropout, **kw)
        # a head that reads the pooled [CLS] alone: the last layer computes that position only
        self.cls_only = (post_process and cfg.add_pooler and cfg.task_head in POOLED_HEADS and not cfg.add_lm_head
                         and not cfg.add_binary_head and cfg.pooling == "none" and not ctx.sp and ctx.cp == 1
                         and self.layer_range[1] == cfg.num_layers and self.layer_range[1] > self.layer_range[0])

    def _act(self, x):
        return F.gelu(x) if self.cfg.activation == "gelu_exact" else F.gelu(x, approximate="tanh")

    def embed_tokens(self, input_ids, position_ids, token_type_ids) -> torch.Tensor:
        x = self.embed(input_ids) + self.pos_embed[position_ids]
        if self.cfg.num_tokentypes:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(input_ids)
            x = x + self.tokentype_embed[token_type_ids]
        x = x.transpose(0, 1).contiguous()  # [s, b, h]
        if self.ctx.sp:
            x = C.scatter_to_sequence(x, self.ctx.tp_group)
        if self.cfg.post_norm:  # after the scatter: its weights see sequence-sharded input under sp
            x = self.embed_norm(x)
        return self._drop(x)

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, position_ids: torch.Tensor | None = None,
                hidden_states: torch.Tensor | None = None, labels: torch.Tensor | None = None):
        """First stage takes input_ids [b, s] (token_type_ids [b, s], optional); later stages
        hidden_states [s(/tp), b, h]. attention_mask [b, s] (1 = token, 0 = padding) on every stage.
        Under a head that reads the pooled [CLS] only (`cls_only`: sequence or choice, no LM head, no
        pooling, no sp/cp) the last layer computes position 0 alone and `hidden` is [b, 1, h].

        Returns a BertOutput on the last stage, hidden states [s(/tp), b, h] on the others.
        `labels` [b, s] are the masked-LM labels: without an LM head (a fine-tuning model, whose
        pipeline still hands the last stage the micro-batch's labels) they are ignored."""
        if self.pre_process:
            b, s = input_ids.shape
            if self.ctx.sp and s % self.ctx.tp:
                raise ValueError(f"sequence length {s} is not divisible by tp={self.ctx.tp} (sequence parallelism)")
            if s > self.cfg.seq_length:
                raise ValueError(f"sequence length {s} exceeds the model's {self.cfg.seq_length} positions")
            if position_ids is None:
                position_ids = torch.arange(s, device=input_ids.device).expand(b, s)
            x = self.embed_tokens(input_ids, position_ids, token_type_ids)
        else:
            x = hidden_states
        mask = None if attention_mask is None else attention_mask.bool()[:, None, None, :]
        full = self.cfg.recompute == "full" and self.training and torch.is_grad_enabled()
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers.values()):
            rows = slice(0, 1) if self.cls_only and i == last else None  # the head reads position 0 only
            if full:
                x = checkpoint(lambda x_, layer=layer, r=rows: layer(x_, None, mask, None, self.rng, r), x,
                               tracker=self.rng)
            else:
                x = layer(x, None, mask, None, self.rng, rows)
        if not self.post_process:
            return x
        if not self.cfg.post_norm:
            x = self.final_norm(x)
        out = BertOutput(hidden=None)
        if self.cfg.add_lm_head:
            logits = self.head(self.lm_norm(self._act(self.lm_dense(x)))) + self.lm_bias  # [s, b, V/tp]
            if labels is not None:
                out.lm_loss = vocab_parallel_cross_entropy(logits, labels.transpose(0, 1), self.cfg.vocab_size,
                                                           self.ctx.tp_group).transpose(0, 1)
            else:
                logits = C.gather_from_region(logits, self.ctx.tp_group, dim=-1)[..., : self.cfg.vocab_size]
                out.lm_logits = logits.transpose(0, 1)
        if self.ctx.sp:  # the heads below read whole sequences; their gradient is replicated
            x = C.gather_from_sequence(x, self.ctx.tp_group, grad_is_partial=False)
        out.hidden = x.transpose(0, 1)
        if self.cfg.add_pooler:
            out.pooled = torch.tanh(self.pooler(out.hidden[:, 0]))
            if self.cfg.add_binary_head:
                out.binary_logits = self.binary_head(out.pooled)
        if self.cfg.pooling != "none":  # bi-encoders: a sentence vector from the whole sequence
            out.embedding = pool(out.hidden, attention_mask, self.cfg.pooling)
        if self.cfg.task_head != "none":
            out.logits = self.task_head(out.hidden, out.pooled, self.rng)
        return out
