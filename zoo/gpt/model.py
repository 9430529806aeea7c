"""The GPT decoder: GPT-2 / Megatron-GPT and Llama layouts, tensor-, sequence- and pipeline-aware.

A GPTModel is one pipeline stage: `pre_process` (the embeddings) on the first stage, `post_process`
(final norm, output head, loss) on the last, and the global layer range `layers=(start, stop)`.
Layers are keyed by their global index, so parameter names (and hence initialisation and
checkpoints) do not depend on the pipeline split. Batch-first at the edges, [s, b, h] inside.
"""

from __future__ import annotations

import torch
from torch import nn

from megazoo.core.nn.attention import KVCache
from megazoo.core.nn.block import TransformerLayer
from megazoo.core.nn.decode_linear import column_linear
from megazoo.core.nn.fast_attention import causal_keep
from megazoo.core.nn.model import ParallelModel
from megazoo.core.nn.norm import build_norm
from megazoo.core.nn.recompute import checkpoint
from megazoo.core.nn.rope import rope_broadcast, rope_tables
from megazoo.core.parallel import collectives as C
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.cp_split import cp_positions
from megazoo.core.parallel.cross_entropy import vocab_parallel_cross_entropy
from megazoo.core.parallel.embedding import VocabParallelEmbedding
from megazoo.core.parallel.init import describe
from megazoo.core.parallel.layers import ColumnParallelLinear
from megazoo.core.parallel.random import RNGTracker
from megazoo.core.train.data import IGNORE
from megazoo.zoo.gpt.config import GPTConfig


class GPTModel(ParallelModel):
    context_parallel = True  # takes a sequence split over parallel.cp (ring attention, global positions)

    def __init__(self, cfg: GPTConfig, ctx: ParallelContext | None = None, pre_process: bool = True,
                 post_process: bool = True, layers: tuple[int, int] | None = None, dtype=None, device=None):
        super().__init__()
        ctx = ctx or ParallelContext.single()
        cfg.check_tensor_parallel(ctx.tp)
        self.cfg, self.ctx = cfg, ctx
        self.pre_process, self.post_process = pre_process, post_process
        self.layer_range = layers or (0, cfg.num_layers)
        self.rng: RNGTracker | None = None
        kw = dict(dtype=dtype, device=device)
        if pre_process:
            self.embed = VocabParallelEmbedding(cfg.vocab_size, cfg.hidden_size, ctx, cfg.init_std,
                                                cfg.make_vocab_size_divisible_by, **kw)
            # the first-stage half of a tied pair whose head lives on another pipeline stage
            self.embed.weight.shared_embedding = cfg.tie_embeddings and not post_process
            if cfg.position == "learned":
                self.pos_embed = describe(nn.Parameter(torch.empty(cfg.seq_length, cfg.hidden_size, **kw)),
                                          ("normal", cfg.init_std))
        self.layers = nn.ModuleDict({str(i): TransformerLayer(cfg, ctx, i, **kw) for i in range(*self.layer_range)})
        if post_process:
            self.final_norm = build_norm(cfg.norm, cfg.hidden_size, ctx, cfg.norm_eps, **kw)
            padded = cfg.padded_vocab(ctx.tp)
            if cfg.tie_embeddings and pre_process:
                self.head = ColumnParallelLinear(cfg.hidden_size, padded, ctx, bias=False, weight=self.embed.weight, **kw)
            else:
                self.head = ColumnParallelLinear(cfg.hidden_size, padded, ctx, bias=False, init_std=cfg.init_std, **kw)
                # a tied head on the last stage is a copy of the first stage's table: same init,
                # gradients summed over the embedding group by the pipeline runtime
                describe(self.head.weight, ("normal", cfg.init_std), tp_dim=0, vocab_rows=cfg.vocab_size,
                         init_name="embed.weight" if cfg.tie_embeddings else None)
                self.head.weight.shared_embedding = cfg.tie_embeddings
        self._rope_cache: tuple[torch.Tensor, torch.Tensor] | None = None

    # --------------------------------------------------------------------------------------------
    def _rope(self, positions: torch.Tensor, device) -> tuple[torch.Tensor, torch.Tensor]:
        need = int(positions.max()) + 1
        if self._rope_cache is None or self._rope_cache[0].shape[0] < need or self._rope_cache[0].device != device:
            n = max(need, self.cfg.seq_length)
            self._rope_cache = rope_tables(n, self.cfg.kv_channels, self.cfg.rope_theta, device=device)
        cos, sin = self._rope_cache
        return cos[positions], sin[positions]

    def _positions(self, past: int, s: int, b: int, device) -> torch.Tensor:
        """Default position ids [b, s]: past..past+s-1, or under context parallelism the global
        positions of this cp rank's two chunks (megazoo.core.parallel.cp_split)."""
        if self.ctx.cp > 1:
            return cp_positions(s, self.ctx.cp, self.ctx.cp_rank, device).expand(b, s)
        return torch.arange(past, past + s, device=device).expand(b, s)

    def _mask(self, attention_mask: torch.Tensor | None, s: int, t: int, device) -> torch.Tensor | None:
        """Boolean [b, 1, s, t] mask (True = attend) from a [b, t] padding mask; None = plain causal."""
        if attention_mask is None:
            return None
        keep = attention_mask.bool()[:, None, None, :]
        if self.cfg.causal:
            keep = keep & causal_keep(s, t, device)
        # a fully masked row (left padding) would give NaN; let it attend to itself instead
        return keep | _diag(s, t, device)

    # --------------------------------------------------------------------------------------------
    def embed_tokens(self, input_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        x = self.embed(input_ids)
        if self.cfg.position == "learned":
            x = x + self.pos_embed[positions]
        x = x.transpose(0, 1).contiguous()  # [s, b, h]
        if self.ctx.sp:
            x = C.scatter_to_sequence(x, self.ctx.tp_group)
        return self._drop(x)

    def forward(self, input_ids: torch.Tensor | None = None, hidden_states: torch.Tensor | None = None,
                labels: torch.Tensor | None = None, position_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, cache: KVCache | None = None,
                logits_to_keep: int = 0) -> torch.Tensor:
        """First stage takes input_ids [b, s]; later stages hidden_states [s(/tp), b, h].
        logits_to_keep > 0: the head runs on the last that many positions only (generation's
        prefill needs one; not with sequence parallelism).

        Returns: the per-token loss [b, s] (fp32, 0 where labels == -100) when the stage has the
        head and labels are given; logits [b, s, vocab] (real vocabulary, gathered) without labels;
        hidden states [s(/tp), b, h] on stages without the head.
        """
        past = cache.length() if cache is not None else 0
        if self.pre_process:
            b, s = input_ids.shape
            if self.ctx.sp and s % self.ctx.tp:
                raise ValueError(f"sequence length {s} is not divisible by tp={self.ctx.tp} (sequence parallelism)")
            if position_ids is None:
                position_ids = self._positions(past, s, b, input_ids.device)
            x = self.embed_tokens(input_ids, position_ids)
        else:
            x = hidden_states
            s = x.shape[0] * (self.ctx.tp if self.ctx.sp else 1)
            b = x.shape[1]
            if position_ids is None:
                position_ids = self._positions(past, s, b, x.device)
        rope = None
        if self.cfg.position == "rope":
            cos, sin = self._rope(position_ids, x.device)  # [b, s, d]
            rope = rope_broadcast(cos.transpose(0, 1), sin.transpose(0, 1), x.dtype)  # shaped once for every layer
        mask = self._mask(attention_mask, s, past + s, x.device)
        target = keep = None
        if self.post_process and labels is not None and not self.ctx.sp and not logits_to_keep:
            target = labels.transpose(0, 1)  # [s, b]
            keep = target != IGNORE
            if bool(keep.all()):
                keep = None
        # fine-tuning on responses: the last layer runs its queries, its MLP and the head from the first target on
        first = self._first_target(keep, cache)
        full = self.cfg.recompute == "full" and self.training and torch.is_grad_enabled()
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers.values()):
            rows = slice(first, None) if first and i == last else None
            if full:
                x = checkpoint(lambda x_, layer=layer, r=rows: layer(x_, rope, mask, cache, self.rng, r), x,
                               tracker=self.rng)
            else:
                x = layer(x, rope, mask, cache, self.rng, rows)
        if not self.post_process:
            return x
        if logits_to_keep:
            if self.ctx.sp:
                raise ValueError("logits_to_keep needs sequence parallelism off (the sequence is split across tp ranks)")
            x = x[-logits_to_keep:]
        if keep is not None:  # the head runs where there is a target
            return self._loss_at(x, target, keep, first).transpose(0, 1)
        x = self.final_norm(x)
        logits = column_linear(self.head, x)  # [s, b, V/tp]; decoding: a packed product
        if labels is not None:
            loss = vocab_parallel_cross_entropy(logits, labels.transpose(0, 1), self.cfg.vocab_size, self.ctx.tp_group)
            return loss.transpose(0, 1)
        logits = C.gather_from_region(logits, self.ctx.tp_group, dim=-1)[..., : self.cfg.vocab_size]
        return logits.transpose(0, 1)

    def _first_target(self, keep: torch.Tensor | None, cache: KVCache | None) -> int:
        """The first position with a target when the labels ignore a prefix of every sequence (a
        prompt in SFT), else 0. The model's last layer then computes its queries, its MLP and its
        residual from there on only: every earlier position still gives its key and value, and no
        later layer reads the rest. Not for mixture-of-experts layers (their router's auxiliary loss
        counts every token) nor with a KV cache or context parallelism."""
        if keep is None or cache is not None or self.ctx.cp > 1 or self.cfg.moe is not None or not self.layers:
            return 0
        targets = keep.any(dim=1).nonzero()
        return int(targets[0]) if len(targets) else 0

    def _loss_at(self, x: torch.Tensor, target: torch.Tensor, keep: torch.Tensor, first: int = 0) -> torch.Tensor:
        """Per-token loss [s, b] with the final norm, the output head and the cross-entropy computed
        at the positions that have a target only (0 elsewhere, as the full head gives): where most
        labels are ignored (a prompt's tokens in SFT) this skips their share of the head's product
        and of the vocabulary-wide softmax. x holds positions first.. (the last layer computed those
        alone). Each position's loss is the same computation as in the full head; only the matrix
        products' row blocking differs (rounding-level differences)."""
        rows = keep[first:].nonzero(as_tuple=True)
        logits = column_linear(self.head, self.final_norm(x[rows]))  # [n, V/tp]
        picked = vocab_parallel_cross_entropy(logits, target[first:][rows], self.cfg.vocab_size, self.ctx.tp_group)
        return picked.new_zeros(target.shape).index_put((rows[0] + first, rows[1]), picked)


def _diag(s: int, t: int, device) -> torch.Tensor:
    """[s, t] with True where query i meets key t - s + i (its own position)."""
    return torch.eye(s, t, dtype=torch.bool, device=device).roll(t - s, dims=1) if t > s else torch.eye(s, t, dtype=torch.bool, device=device)


def token_loss(per_token: torch.Tensor, loss_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Mean loss over the tokens that count."""
    if loss_mask is None:
        return per_token.mean()
    return (per_token * loss_mask).sum() / loss_mask.sum().clamp(min=1)
