"""lm-eval backend: `lm_eval --model megazoo --model_args pretrained=DIR[,dtype=..,device=..,batch_size=8]`.

The model arguments are those of lm-eval's own `hf` backend where they mean the same thing, so a
command written for `--model hf` runs with `--model megazoo` (see `BackendConfig`):
  pretrained   a megazoo model folder (import-hf, export of a training run) or a training checkpoint;
               lm-eval names its result folders after it. `checkpoint=` is an older alias.
  dtype        float32 (default) | bfloat16 | float16 | auto (the dtype model.safetensors stores);
               megazoo's fp32/bf16/fp16 spellings work too.
  device       cpu | cuda | cuda:N | mps; also lm-eval's `--device`. Unset: the GPU if there is one.
  batch_size   a number (lm-eval's `--batch_size` or the model_args form); "auto" is refused.
  max_length   the context length in tokens (default: the model's seq_length).
Model arguments win over lm-eval's `--batch_size`/`--device` (whose defaults, 1 and cuda:0, lm-eval
passes whether or not the user gave them). An unknown or malformed argument is one ValueError line.

The class registers itself under the name "megazoo" when this module is imported. The `lm_eval`
command reaches it through megazoo's start-up hook (megazoo-lm-eval.pth, installed with the wheel;
see megazoo/lm_eval_hook.py); `megazoo eval lm-eval ...` runs lm-eval's command line with the backend
registered, and `simple_evaluate(model="megazoo", ...)` works after importing this module.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import lm_eval.models  # noqa: F401  (fill lm-eval's own registry first: it only loads itself when empty)
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from megazoo.eval.scoring import generate_until, loglikelihood, loglikelihood_rolling

log = logging.getLogger(__name__)

DTYPES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
          "float16": "float16", "fp16": "float16", "half": "float16", "auto": "auto"}
SAFETENSORS_DTYPES = {"F32": "float32", "BF16": "bfloat16", "F16": "float16"}
KEYS = ("pretrained", "checkpoint", "dtype", "device", "batch_size", "max_length", "max_batch_size",
        "trust_remote_code")


class ModelArgsError(ValueError):
    """A wrong --model_args value for the megazoo backend (one line, naming the key and the fix)."""


@dataclass
class BackendConfig:
    """The backend's settings, parsed and checked from lm-eval's model arguments."""

    pretrained: str
    dtype: str = "float32"
    device: str | None = None
    batch_size: int = 8
    max_length: int | None = None

    @classmethod
    def from_args(cls, args: dict) -> "BackendConfig":
        unknown = sorted(k for k in args if k not in KEYS)
        if unknown:
            raise ModelArgsError(f"--model_args {unknown[0]}={args[unknown[0]]}: not a megazoo backend argument; "
                                 f"use pretrained, dtype, device, batch_size or max_length")
        pretrained, alias = args.get("pretrained"), args.get("checkpoint")
        if pretrained is not None and alias is not None and str(pretrained) != str(alias):
            raise ModelArgsError(f"--model_args pretrained={pretrained} and checkpoint={alias}: checkpoint= is an "
                                 "alias of pretrained=; give one of them")
        path = pretrained if pretrained is not None else alias
        if path is None or str(path) == "":
            raise ModelArgsError("the megazoo lm-eval backend needs --model_args pretrained=DIR (a megazoo model "
                                 "folder or training checkpoint)")
        return cls(pretrained=str(path), dtype=parse_dtype(args.get("dtype")), device=parse_device(args.get("device")),
                   batch_size=parse_batch_size(args.get("batch_size"), args.get("max_batch_size")),
                   max_length=parse_positive("max_length", args.get("max_length")))


def parse_dtype(value) -> str:
    if value is None:
        return "float32"
    name = str(value).removeprefix("torch.").lower()
    if name not in DTYPES:
        raise ModelArgsError(f"--model_args dtype={value}: use float32, bfloat16, float16 or auto")
    return DTYPES[name]


def parse_device(value) -> str | None:
    """The device string, checked; cuda when torch sees no GPU falls back to the CPU with a warning
    (lm-eval's command passes --device cuda:0 when the user gives none, as its hf backend does)."""
    if value is None or str(value) == "":
        return None
    import torch

    try:
        device = torch.device(str(value))
    except (RuntimeError, TypeError):
        raise ModelArgsError(f"device {value}: not a torch device; use cpu, cuda, cuda:N or mps") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        log.warning("megazoo: device %s asked for (lm-eval's --device defaults to cuda:0), but torch sees no CUDA "
                    "device: scoring on cpu; pass --device cpu to silence this", value)
        return "cpu"
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ModelArgsError(f"device {value}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    if device.type not in ("cpu", "cuda", "mps"):
        raise ModelArgsError(f"device {value}: the megazoo backend runs on cpu, cuda or mps")
    return str(device)


def parse_batch_size(value, max_batch_size=None) -> int:
    if value is None:
        return 8
    text = str(value).strip()
    if text.startswith("auto"):
        raise ModelArgsError(f"batch_size={value}: the megazoo backend does not search for a batch size (nor use "
                             f"max_batch_size); give a number, e.g. batch_size=8")
    return parse_positive("batch_size", text)


def parse_positive(key: str, value) -> int | None:
    if value is None:
        return None
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ModelArgsError(f"--model_args {key}={value}: expected a whole number, e.g. {key}=8") from None
    if number < 1:
        raise ModelArgsError(f"--model_args {key}={value}: must be at least 1")
    return number


def stored_dtype(folder: str) -> str:
    """dtype=auto: the floating dtype model.safetensors stores (float32 for a training checkpoint,
    whose tensors megazoo keeps in fp32)."""
    weights = Path(folder) / "model.safetensors"
    if not weights.is_file():
        return "float32"
    from safetensors import safe_open

    with safe_open(str(weights), framework="pt") as f:
        for key in f.keys():
            found = SAFETENSORS_DTYPES.get(f.get_slice(key).get_dtype())
            if found:
                return found
    return "float32"


def load_backend_lm(cfg: BackendConfig):
    """The megazoo LanguageModel that cfg names, in its dtype, on its device."""
    import torch

    from megazoo.core.parallel.context import ParallelContext
    from megazoo.eval.loading import load_lm

    dtype = stored_dtype(cfg.pretrained) if cfg.dtype == "auto" else cfg.dtype
    ctx = ParallelContext.single(torch.device(cfg.device) if cfg.device else None)  # unset: the GPU if any
    lm = load_lm(cfg.pretrained, max_length=cfg.max_length, ctx=ctx, dtype=getattr(torch, dtype))
    for chunk in lm.chunks:  # the weights are built on the CPU; score where ctx says
        chunk.to(ctx.device)
    lm.device = ctx.device
    return lm


def merged_args(model_args: dict, extra: dict | None) -> dict:
    """Model arguments over lm-eval's own (batch_size, max_batch_size, device): lm-eval always passes
    its defaults, so the more specific model argument wins."""
    return {**{k: v for k, v in (extra or {}).items() if v is not None}, **model_args}


@register_model("megazoo")
class MegazooLMEval(LM):
    def __init__(self, lm=None, **model_args):
        super().__init__()
        if lm is None:
            self.config = BackendConfig.from_args(model_args)
            lm = load_backend_lm(self.config)
        else:  # an already loaded LanguageModel (programmatic use)
            self.config = BackendConfig(pretrained=str(getattr(lm, "source", "")),
                                        batch_size=parse_batch_size(model_args.get("batch_size")))
        self.lm = lm
        self.batch_size = self.config.batch_size

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        from lm_eval.utils import simple_parse_args_string

        return cls(**merged_args(simple_parse_args_string(arg_string), additional_config))

    @classmethod
    def create_from_arg_obj(cls, arg_dict: dict, additional_config: dict | None = None):
        return cls(**merged_args(dict(arg_dict), additional_config))

    @property
    def device(self):
        return getattr(self.lm, "device", None)

    def get_model_info(self) -> dict:
        """Merged into lm-eval's results["config"]: what was scored, in which dtype, where."""
        from importlib.metadata import PackageNotFoundError, version

        model = getattr(self.lm, "model", None)
        try:
            megazoo_version = version("megazoo")
        except PackageNotFoundError:
            megazoo_version = None
        return {"pretrained": self.config.pretrained,
                "model_num_parameters": sum(p.numel() for p in model.parameters()) if model is not None else None,
                "model_dtype": str(getattr(self.lm, "dtype", "")), "model_device": str(self.device),
                # the batch the backend scored with: lm-eval's own "batch_size" key is its --batch_size
                # (1 unless given), which a model_args batch_size overrides
                "model_batch_size": self.batch_size, "megazoo_version": megazoo_version}

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        return loglikelihood(self.lm, [r.args for r in requests], self.batch_size, progress=not disable_tqdm)

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        return loglikelihood_rolling(self.lm, [r.args[0] for r in requests], self.batch_size, progress=not disable_tqdm)

    def generate_until(self, requests, disable_tqdm: bool = False):
        return generate_until(self.lm, [(r.args[0], dict(r.args[1])) for r in requests], progress=not disable_tqdm)
