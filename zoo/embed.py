"""Sentence embeddings from an encoder checkpoint (`megazoo embed`, and this API).

    emb = Embedder("out/minilm")            # import-hf folder, HF BERT folder or training checkpoint
    vecs = emb.encode(["a sentence", "another"], pooling="mean", normalize=True)   # float32 [N, h]

BERT encoders pool their last hidden states (zoo/pooling.py: mean over the tokens, or the [CLS]
vector); GPT/Llama decoders take the mean of their final-norm hidden states (this API only: the
`megazoo embed` command takes encoders, `decoders=False`). Texts are tokenised
once, sorted by length and batched so that a batch pads only to its own longest text (most
batches then need no padding mask at all), and the vectors come back in the input order. Token
ids are checked against the model's vocabulary before the first forward pass, so a tokenizer
that does not belong to the checkpoint is one error naming both, not an IndexError.
The tokenizer is the checkpoint's own (its tokenizer/ folder, the HF folder, or the tokenizer a
training run used), loaded offline.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from megazoo.core.plan.traits import DECODER, ENCODER, kind_of
from megazoo.core.verbosity import shows_progress
from megazoo.zoo.pooling import KINDS as POOLINGS
from megazoo.zoo.pooling import pool


class EmbedError(ValueError):
    """A checkpoint or request that cannot give embeddings; the message says what to do."""


def _wrong_arch(path, arch: str) -> str:
    return (f"{path}: holds a {arch!r} model; megazoo embed takes a BERT encoder (or a GPT/Llama decoder "
            f"with mean pooling)")


def read_checkpoint(path, decoders: bool = True) -> tuple[str, object, dict[str, torch.Tensor], Path, int | None]:
    """(arch, config, full state dict, tokenizer folder, max tokens the folder asks for) of an
    import-hf folder, a Hugging Face folder or a training checkpoint. decoders=False: refuse
    GPT/Llama decoders (the command's contract: sentence embeddings come from encoders)."""
    from megazoo.zoo.hf.models import config_from_dict
    from megazoo.zoo.io import load_model, tokenizer_dir
    from megazoo.zoo.registry import builder_class

    path = Path(path)
    if not path.is_dir():
        raise EmbedError(f"{path}: no such checkpoint folder (give an `megazoo import-hf` folder, a Hugging Face "
                         f"BERT folder or a training checkpoint)")
    arch, cfg_dict, state = load_model(path, hf=True)
    kind = kind_of(arch)
    if kind not in (ENCODER, DECODER):
        raise EmbedError(_wrong_arch(path, arch))
    if kind == DECODER and not decoders:
        raise EmbedError(f"{path}: holds a {arch!r} decoder; megazoo embed takes a BERT encoder checkpoint (a "
                         f"sentence-transformers or `megazoo import-hf` BERT folder, or a BERT training run)")
    known = {f.name for f in dataclasses.fields(builder_class(arch).config_class)}  # task checkpoints carry extra keys
    cfg = config_from_dict(arch, {k: v for k, v in cfg_dict.items() if k in known})
    tokenizer = tokenizer_dir(path)
    if tokenizer is None:
        raise EmbedError(f"{path}: no tokenizer found (expected a tokenizer/ folder, or a training run whose "
                         f"data.tokenizer names one)")
    # sentence-transformers folders say how many tokens the model was trained to embed
    st_config = Path(tokenizer) / "sentence_bert_config.json"
    max_len = _st_max_length(st_config) if st_config.is_file() else None
    return arch, cfg, state, Path(tokenizer), max_len


def _st_max_length(path: Path) -> int | None:
    """sentence_bert_config.json's max_seq_length (None when absent); a damaged file names itself."""
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("max_seq_length")
    except (UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
        line = getattr(exc, "lineno", 1)
        raise EmbedError(f"{path}:{line}: not a JSON object with max_seq_length ({exc}); fix or remove the file") \
            from None
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 2):
        raise EmbedError(f"{path}: max_seq_length must be an integer of at least 2, got {value!r}")
    return value


def check_device(device: str | None) -> torch.device | None:
    """The device a user named (--device), refused with one line when this machine has no such
    device; checked before anything is loaded or written."""
    if device is None:
        return None
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise EmbedError(f"--device {device}: not a device; use cpu, cuda or cuda:N") from None
    if dev.type == "cpu":
        return dev
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise EmbedError(f"--device {device}: no CUDA device here; use --device cpu")
        if dev.index is not None and dev.index >= count:
            raise EmbedError(f"--device {device}: this machine has {count} CUDA device(s) (cuda:0 .. "
                             f"cuda:{count - 1})")
        return dev
    if dev.type == "mps" and torch.backends.mps.is_available():
        return dev
    raise EmbedError(f"--device {device}: not available here; use cpu or cuda")


class Embedder:
    """Loads a checkpoint once; `encode` turns texts into float32 vectors [N, hidden]."""

    def __init__(self, checkpoint, max_length: int | None = None, device: str | torch.device | None = None,
                 dtype: torch.dtype = torch.float32, decoders: bool = True):
        from megazoo.core.parallel.context import ParallelContext
        from megazoo.core.parallel.device import pick_device

        if isinstance(device, str):
            device = check_device(device)
        arch, cfg, state, tok_dir, st_max = read_checkpoint(checkpoint, decoders)
        self.arch = arch
        self.source, self.tok_dir, self.vocab_size = str(checkpoint), tok_dir, cfg.vocab_size
        self.ctx = ParallelContext.single(torch.device(device) if device is not None else pick_device())
        self.model, self.norm = self._build(arch, cfg, state, dtype)
        self.hidden_size = cfg.hidden_size
        limit = cfg.seq_length if kind_of(arch) == ENCODER or cfg.position == "learned" else None
        self.max_length = max_length or st_max or limit or 512
        if limit is not None and self.max_length > limit:
            raise EmbedError(f"max length {self.max_length} exceeds the model's {limit} positions")
        self.tokenizer, self.pad_id = _load_tokenizer(tok_dir, self.max_length)

    def _build(self, arch: str, cfg, state: dict, dtype: torch.dtype):
        from megazoo.zoo.hf.models import build_model
        from megazoo.zoo.hf.shard import load_full_state

        kw = dict(dtype=dtype, device=self.ctx.device)
        if kind_of(arch) == ENCODER:
            if "embed.weight" not in state and "bert.embed.weight" in state:  # a task model's encoder
                state = {k[5:]: v for k, v in state.items() if k.startswith("bert.")}
            # embeddings need the encoder only: the pretraining and task heads would cost time
            drop = dict(add_lm_head=False, add_binary_head=False, add_pooler=False, task_head="none")
            cfg = dataclasses.replace(cfg, **{k: v for k, v in drop.items() if hasattr(cfg, k)})
            model = build_model(arch, cfg, self.ctx, **kw)
            norm = None
        else:
            from megazoo.core.nn.norm import build_norm

            # the stack without its LM head (a [tokens, vocab] product per batch), then the final norm
            model = build_model(arch, cfg, self.ctx, pre_process=True, post_process=False, **kw)
            norm = build_norm(cfg.norm, cfg.hidden_size, self.ctx, cfg.norm_eps, **kw)
            norm.load_state_dict({k[len("final_norm."):]: v for k, v in state.items() if k.startswith("final_norm.")})
            norm.eval()
        with torch.no_grad():
            load_full_state(model, state, self.ctx)
        return model.eval(), norm

    def _hidden(self, ids: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        if self.norm is None:
            return self.model(ids, attention_mask=mask).hidden
        # causal: with right padding no real token attends to a pad, so no mask is needed
        return self.norm(self.model(ids)).transpose(0, 1)

    @torch.inference_mode()
    def encode(self, texts: Sequence[str], batch: int = 32, pooling: str = "mean", normalize: bool = False,
               progress: bool = False, names: Sequence[str] | None = None) -> np.ndarray:
        """float32 [len(texts), hidden] in the order of `texts`. `names`: how errors call each text
        (e.g. `FILE:LINE`; default `text I`)."""
        if pooling not in POOLINGS:
            raise EmbedError(f"unknown pooling {pooling!r}; choose one of {', '.join(POOLINGS)}")
        if pooling == "cls" and kind_of(self.arch) != ENCODER:
            raise EmbedError(f"--pooling cls needs a bidirectional encoder; a {self.arch} decoder has no [CLS] "
                             f"token: use --pooling mean")
        if batch < 1:
            raise EmbedError(f"batch size must be at least 1, got {batch}")
        from tqdm import tqdm

        encodings = _encode(self.tokenizer, list(texts))

        def name(i: int) -> str:
            return names[i] if names is not None else f"text {i}"

        empty = next((i for i, e in enumerate(encodings) if not e), None)
        if empty is not None:
            raise EmbedError(f"{name(empty)} has no tokens to embed (an empty text, and the tokenizer adds no "
                             f"[CLS]/[SEP])")
        # a tokenizer of another model gives ids past the embedding table: say so before any forward pass
        for i, e in enumerate(encodings):
            if max(e) >= self.vocab_size:
                raise EmbedError(f"{self.source}: {name(i)} has token id {max(e)}, but the model's vocabulary has "
                                 f"{self.vocab_size} tokens; its tokenizer ({self.tok_dir}) is not the one the "
                                 f"checkpoint was trained with (or it was trained on synthetic data)")
        from megazoo.core.argtypes import check_fits

        check_fits(len(encodings) * self.hidden_size * 4, f"{len(encodings)} embeddings of {self.hidden_size} floats",
                   "embed the input in parts")
        out = np.empty((len(encodings), self.hidden_size), dtype=np.float32)
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i]))  # longest first: OOM shows early
        bar = tqdm(total=len(order), unit="text", file=sys.stderr, disable=not shows_progress(progress), desc="embed")
        for start in range(0, len(order), batch):
            rows = order[start:start + batch]
            ids, mask = _pad([encodings[i] for i in rows], self.pad_id, self.ctx.device)
            hidden = self._hidden(ids, mask)
            vecs = pool(hidden, mask, pooling)
            if normalize:
                vecs = torch.nn.functional.normalize(vecs, p=2, dim=1)
            out[rows] = vecs.cpu().numpy()
            bar.update(len(rows))
        bar.close()
        return out


def _load_tokenizer(folder: Path, max_length: int):
    """The folder's Rust tokenizer, truncating to max_length (special tokens included)."""
    from transformers import AutoTokenizer

    try:
        hf = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except Exception as exc:
        raise EmbedError(f"{folder}: transformers could not load its tokenizer ({exc})") from None
    backend = getattr(hf, "backend_tokenizer", None)
    if backend is None:
        raise EmbedError(f"{folder}: has no fast tokenizer (tokenizer.json); megazoo embed needs one")
    backend.no_padding()  # batches are padded here, each only to its own longest text
    backend.enable_truncation(max_length)
    return backend, hf.pad_token_id if hf.pad_token_id is not None else 0


def _encode(tokenizer, texts: list[str]) -> list[list[int]]:
    # encode_batch_fast skips character offsets (unused here); the Rust side runs in parallel
    encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
    return [e.ids for e in encode(texts, add_special_tokens=True)]


def _pad(rows: list[list[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor | None]:
    """ids [b, longest] and the mask (None when no row is padded: attention takes its fast path)."""
    longest = max(len(r) for r in rows)
    ids = np.full((len(rows), longest), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), longest), dtype=np.int64)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = r
        mask[i, :len(r)] = 1
    padded = any(len(r) < longest for r in rows)
    return torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device) if padded else None


def read_lines(path, field: str = "text") -> tuple[list[str], list[str]]:
    """(texts, names) of an embed input: row i is line i. A .txt file's every line is a text (a
    blank line is the empty text, embedded as sentence-transformers embeds ""); a .jsonl line is an
    object with the text under `field`, and a blank .jsonl line is refused (`FILE:LINE`), since it
    holds no object and skipping it would shift every later row. Not UTF-8: `FILE:LINE`."""
    from megazoo.core.data.text import RawDoc, document_text, is_json_file
    from megazoo.core.fs import utf8_lines

    path = str(path)
    as_json = is_json_file(path)
    texts, names = [], []
    # decoded one line at a time, so an undecodable byte is named with its line (core/fs/text.py)
    lines = utf8_lines(path, lambda p, line, problem: EmbedError(f"{p}:{line}: {problem}"))
    for number, line in enumerate(lines, 1):
        line = line[:-1] if line.endswith("\n") else line
        line = line[:-1] if line.endswith("\r") else line
        if as_json:
            if not line.strip():
                raise EmbedError(f"{path}:{number}: a blank line; every line of a .jsonl input is one object "
                                 f"(row i of the output is line i): remove it or write {{\"{field}\": \"\"}}")
            try:
                line = document_text(RawDoc(path, number, line, True), field)
            except ValueError as exc:  # its hint names preprocess's flag; point at this command's
                raise EmbedError(str(exc).replace("--json-key", "--field")) from None
        texts.append(line)
        names.append(f"{path}:{number}")
    return texts, names
