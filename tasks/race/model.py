"""Building the RACE model at any TP/DP layout, and its checkpoints.

The encoder comes from what `megazoo import-hf` writes (megazoo.zoo.io: model.yaml + safetensors),
a megazoo training checkpoint (megazoo.core.checkpoint), or straight from a Hugging Face BERT folder; a fine-tuned RACE model is saved as a megazoo checkpoint of full (TP=1)
tensors, the encoder under `bert.*` and the head as `head_weight` / `head_bias`, with metadata
that says how its inputs were built. Either loads at any tensor-parallel degree.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch

from megazoo.core.parallel.context import ParallelContext
from megazoo.tasks.race.head import MultipleChoice

HEAD_KEYS = ("head_weight", "head_bias")


def _bert_classes():
    from megazoo.zoo.bert import BertConfig, BertModel

    return BertConfig, BertModel


def is_hf_folder(path: str | Path) -> bool:
    return (Path(path) / "config.json").is_file()


def read_encoder(init: str | Path) -> tuple[object, dict[str, torch.Tensor], dict]:
    """(BertConfig, full state dict, checkpoint metadata) from a megazoo checkpoint or an HF folder."""
    BertConfig, _ = _bert_classes()
    path = Path(init)
    if not path.exists():
        raise FileNotFoundError(f"model.init {path}: no such checkpoint or Hugging Face folder "
                                f"(import one with `megazoo import-hf HF_DIR OUT`)")
    known = {f.name for f in dataclasses.fields(BertConfig)}
    if is_hf_folder(path):
        from megazoo.zoo.hf import convert_from_hf

        arch, cfg, state = convert_from_hf(str(path))
        meta = {"arch": arch, "source": str(path)}
    elif (path / "model.yaml").is_file():  # what `megazoo import-hf` writes (megazoo.zoo.io)
        from megazoo.zoo.io import load_model, read_meta

        arch, model_dict, state = load_model(path)
        meta = read_meta(path)
        cfg = BertConfig.from_dict({k: v for k, v in model_dict.items() if k in known}) if arch == "bert" else None
    else:
        from megazoo.core.checkpoint import load_full_model_state

        info, state = load_full_model_state(path)
        meta = dict(info["meta"] or {})
        arch = meta.get("arch")
        model_dict = meta.get("model")
        if not isinstance(model_dict, dict):
            raise ValueError(f"{path}: the checkpoint records no model config; expected one saved by megazoo")
        cfg = BertConfig.from_dict({k: v for k, v in model_dict.items() if k in known}) if arch == "bert" else None
    if arch != "bert":
        raise ValueError(f"{init}: RACE fine-tunes a BERT encoder, this checkpoint holds a {arch!r} model")
    return cfg, state, meta


def build_race_model(init: str | Path, ctx: ParallelContext | None = None, head_dropout: float = 0.1,
                     dropout: float | None = None, seed: int = 1234) -> tuple[MultipleChoice, dict]:
    """This rank's RACE model: the encoder's weights from `init`; the head from a RACE checkpoint,
    else freshly drawn from `seed`. Returns (model, metadata of `init`)."""
    ctx = ctx or ParallelContext.single()
    _, BertModel = _bert_classes()
    cfg, state, meta = read_encoder(init)
    has_head = all(k in state for k in HEAD_KEYS)
    if has_head or any(k.startswith("bert.") for k in state):
        encoder_state = {k[len("bert."):]: v for k, v in state.items() if k.startswith("bert.")}
    else:
        encoder_state = state
    # the heads RACE does not use are dropped: a masked-LM head would only cost memory
    if cfg.add_lm_head or cfg.add_binary_head:
        cfg = dataclasses.replace(cfg, add_lm_head=False, add_binary_head=False)
        drop = ("lm_", "head.", "binary_head.")
        encoder_state = {k: v for k, v in encoder_state.items() if not k.startswith(drop)}
    if not cfg.add_pooler:
        raise ValueError(f"{init}: the encoder has no pooler (pooled [CLS] output), which the RACE head reads")
    if dropout is not None:
        cfg = dataclasses.replace(cfg, dropout=dropout, attention_dropout=dropout)
    bert = BertModel(cfg, ctx)
    bert.initialize(seed)  # RNG streams (and weights, replaced just below)
    from megazoo.zoo.hf import load_full_state

    load_full_state(bert, encoder_state, ctx)
    model = MultipleChoice(bert, head_dropout)
    if has_head:
        with torch.no_grad():
            model.head_weight.copy_(state["head_weight"])
            model.head_bias.copy_(state["head_bias"])
    else:
        model.initialize_head(seed)
    return model, meta


def save_race_model(model: MultipleChoice, root: str | Path, step: int, meta: dict) -> Path | None:
    """Gather the model over tp (collective) and write a checkpoint from global rank 0."""
    from megazoo.core.checkpoint import save_full_model_state
    from megazoo.zoo.hf import gather_full_state

    ctx = model.ctx
    state = {f"bert.{k}": v for k, v in gather_full_state(model.bert, ctx).items()}
    state.update(head_weight=model.head_weight.detach().cpu().clone(), head_bias=model.head_bias.detach().cpu().clone())
    if ctx.rank != 0:
        return None
    full_meta = {"arch": "bert", "model": model.bert.cfg.to_dict(), "task": "race", **meta}
    return save_full_model_state(root, state, full_meta, step=step)
