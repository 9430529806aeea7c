"""Tiny native BERT and T5 models trained one step at a layout (shared by test_zoo_models)."""

from __future__ import annotations

import torch

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.gather import full_state
from megazoo.zoo.bert import TINY as BERT_TINY
from megazoo.zoo.bert import BertModel
from megazoo.zoo.t5 import TINY as T5_TINY
from megazoo.zoo.t5 import T5Model

LAYOUTS = ("bert-tiny", "bert-tiny-postln", "t5-tiny", "t5-tiny-geglu")


def batch(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 300, (2, 16), generator=g)
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, 12:] = 0
    labels = torch.full((2, 16), -100)
    labels[:, 2:9] = torch.randint(0, 300, (2, 7), generator=g)
    dec = torch.randint(0, 300, (2, 8), generator=g)
    return ids, mask, labels, dec


def run_model(layout: str, ctx: ParallelContext, seed: int = 1234) -> dict:
    """Forward + backward (masked-LM + binary loss for BERT, seq2seq loss for T5); gathered
    outputs and gradients."""
    ids, mask, labels, dec = batch()
    if layout.startswith("bert"):
        model = BertModel(BERT_TINY[layout](), ctx).initialize(seed)
        out = model(ids, mask, (torch.arange(16) >= 8).long().expand(2, 16), labels=labels)
        loss = out.lm_loss.sum() / (labels != -100).sum() + torch.nn.functional.cross_entropy(out.binary_logits, torch.tensor([0, 1]))
        probe = lambda: model(ids, mask).lm_logits  # noqa: E731
    else:
        cfg = T5_TINY["t5-tiny"](**({"activation": "geglu", "tie_embeddings": False, "scale_output": False}
                                     if layout.endswith("geglu") else {}))
        model = T5Model(cfg, ctx).initialize(seed)
        dec_labels = dec.roll(-1, 1)
        loss = model(ids, dec, attention_mask=mask, labels=dec_labels).mean()
        probe = lambda: model(ids, dec, attention_mask=mask)  # noqa: E731
    loss.backward()
    with torch.no_grad():
        model.eval()
        logits = probe()
    return {"loss": loss.detach(), "logits": logits, "grads": full_state(model, ctx, grads=True)}


def tp_cases(tp: int) -> dict:
    out = {}
    for layout in LAYOUTS:
        for sp in (False, True):
            out[(layout, sp)] = run_model(layout, ParallelContext.build(ParallelConfig(tp=tp, sp=sp)))
    return out
