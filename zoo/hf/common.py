"""What every Hugging Face adapter shares: the rule table, reading HF folders, checking tensors.

An adapter is a pure map between state dicts: a list of Rules, each naming one megazoo tensor,
the HF tensors it comes from, and the two conversions. Import and export read the same table,
so the round trip is exact by construction and checked by the tests.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch


class HFImportError(ValueError):
    """An HF model or folder that megazoo cannot import, with what to do about it."""


class HFExportError(ValueError):
    """A megazoo model that has no Hugging Face equivalent as configured."""


def _one(ts: list[torch.Tensor]) -> torch.Tensor:
    return ts[0]


def _list(t: torch.Tensor) -> list[torch.Tensor]:
    return [t]


@dataclass
class Rule:
    name: str  # megazoo parameter name (full, unsharded)
    hf: list[str]  # HF tensor names, in the order to_mz takes them
    to_mz: Callable[[list[torch.Tensor]], torch.Tensor] = _one
    to_hf: Callable[[torch.Tensor], list[torch.Tensor]] = _list


def same(name: str, hf_name: str) -> Rule:
    return Rule(name, [hf_name])


def transposed(name: str, hf_name: str) -> Rule:
    """GPT-2's Conv1D stores weights as [in, out]."""
    return Rule(name, [hf_name], lambda ts: ts[0].t().contiguous(), lambda t: [t.t().contiguous()])


def fused_qkv(name: str, q: str, k: str, v: str, heads: int, kv_heads: int, d: int) -> Rule:
    """Separate q/k/v projections <-> megazoo's fused weight laid out per KV group:
    for each group its heads/kv_heads query heads, then its key head, then its value head."""
    group = heads // kv_heads

    def to_mz(ts):
        qt, kt, vt = ts
        rest = tuple(qt.shape[1:])
        parts = [qt.reshape(kv_heads, group, d, *rest), kt.reshape(kv_heads, 1, d, *rest), vt.reshape(kv_heads, 1, d, *rest)]
        return torch.cat(parts, 1).reshape(-1, *rest).contiguous()

    def to_hf(t):
        rest = tuple(t.shape[1:])
        g = t.reshape(kv_heads, group + 2, d, *rest)
        return [g[:, :group].reshape(-1, *rest).contiguous(), g[:, group].reshape(-1, *rest).contiguous(),
                g[:, group + 1].reshape(-1, *rest).contiguous()]

    return Rule(name, [q, k, v], to_mz, to_hf)


# ---------------------------------------------------------------------------------------------
@dataclass
class HFSource:
    config: object  # transformers PretrainedConfig
    state: dict[str, torch.Tensor]
    path: Path | None = None  # the folder, for tokenizer files (a GGUF's dequantised folder in the cache)
    gguf_file: str | None = None
    extra: dict = field(default_factory=dict)


def _first_line(e: BaseException) -> str:
    return str(e).splitlines()[0] if str(e).strip() else type(e).__name__


def _load(loader, file: Path) -> dict[str, torch.Tensor]:
    """One weights file, or an HFImportError naming it (truncated, corrupted, not weights)."""
    try:
        return loader(str(file))
    except Exception as e:  # safetensors and torch.load raise their own types
        raise HFImportError(f"{file}: cannot read the weights ({_first_line(e)}); the file is truncated or "
                            f"corrupted: download or save it again") from None


def _weight_files(path: Path) -> tuple[list[Path], Callable]:
    """(the weights files of an HF folder, the loader of one): a sharded index's files, or the one file."""
    from safetensors.torch import load_file

    from megazoo.core.fs import inside

    def torch_load(f):
        return torch.load(f, map_location="cpu", weights_only=True)

    for index_name, loader in (("model.safetensors.index.json", load_file),
                               ("pytorch_model.bin.index.json", torch_load)):
        index = path / index_name
        if index.exists():
            weight_map = _json(index).get("weight_map")
            if not isinstance(weight_map, dict):
                raise HFImportError(f"{index}: no weight_map (tensor name -> file); the index is damaged")
            files = sorted(set(map(str, weight_map.values())))
            for f in files:  # a name leading out of the folder is refused before anything is opened
                if not inside(path, f):
                    raise HFImportError(f"{index} names the file {f[:120]!r}, which is not a file inside {path}; "
                                        f"refusing to read it")
            return [path / f for f in files], loader
    if (path / "model.safetensors").exists():
        return [path / "model.safetensors"], load_file
    if (path / "pytorch_model.bin").exists():
        return [path / "pytorch_model.bin"], torch_load
    raise HFImportError(f"no weights in {path}: expected model.safetensors (or a sharded index, or "
                        "pytorch_model.bin); pass gguf_file= for a GGUF file")


def _read_weights(path: Path) -> dict[str, torch.Tensor]:
    files, loader = _weight_files(path)
    out = {}
    for f in files:
        out.update(_load(loader, f))
    return out


def safetensors_files(path: Path) -> list[Path] | None:
    """The safetensors files holding an HF folder's weights (which can be read a tensor at a time),
    or None when they are in another format."""
    files, _ = _weight_files(Path(path))
    return files if all(f.suffix == ".safetensors" for f in files) else None


def read_hf(src, supported: list[str], gguf_file: str | None = None,
            weights: Callable[[Path], dict] | None = None) -> HFSource:
    """An HF folder (config.json + weights, or a .gguf file) or a transformers model.

    The model_type is checked before any weight is read. `weights`: what reads a folder's state
    (default: every tensor, read whole; zoo/hf/lazy.py passes one that reads only their headers)."""
    try:
        from transformers import PreTrainedModel
    except ImportError as e:  # pragma: no cover - transformers is a dependency
        raise HFImportError("importing from Hugging Face needs transformers: pip install transformers") from e
    if isinstance(src, PreTrainedModel):
        _check_type(src.config.model_type, supported, type(src).__name__)
        # a model built in memory may have no `architectures` yet (save_pretrained writes it), and
        # its class is the truth about its head (a sequence classifier vs a multiple-choice one)
        config = copy.deepcopy(src.config)
        config.architectures = [type(src).__name__]
        return HFSource(config, {k: v.detach() for k, v in src.state_dict().items()})
    path = Path(src)
    if not path.is_dir():
        raise HFImportError(f"{path} is not a folder: pass a Hugging Face model folder (config.json and weights)")
    from megazoo.zoo.hf.gguf import gguf_name, hf_folder

    try:
        gguf_file = gguf_name(path, gguf_file)  # without config.json, the folder's one .gguf file
    except ValueError as e:
        raise HFImportError(str(e)) from None
    if gguf_file is None and not (path / "config.json").exists():
        raise HFImportError(f"{path} has no config.json and no .gguf file: not a Hugging Face model folder")
    if gguf_file is not None:
        from transformers import AutoModelForCausalLM

        try:
            folder = hf_folder(path, gguf_file)  # dequantised once into megazoo's cache
        except (ValueError, FileNotFoundError) as e:
            raise HFImportError(str(e)) from None
        _check_type(_json(folder / "config.json").get("model_type"), supported, f"{path / gguf_file}")
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        return HFSource(model.config, {k: v.detach() for k, v in model.state_dict().items()}, folder, gguf_file,
                        extra={"model": model})  # callers may reuse the transformers model
    raw = _json(path / "config.json")
    _check_type(raw.get("model_type"), supported, f"{path / 'config.json'}")
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(path)
    except Exception as e:  # a value transformers cannot take: one line naming the file
        raise HFImportError(f"{path / 'config.json'}: {_first_line(e)}") from None
    return HFSource(config, (weights or _read_weights)(path), path)


def _json(file: Path) -> dict:
    """A JSON object file, or an HFImportError `file:line: problem`."""
    try:
        data = json.loads(file.read_text())
    except json.JSONDecodeError as e:
        raise HFImportError(f"{file}:{e.lineno}: not valid JSON ({e.msg}); fix the file or download it again") from None
    except (OSError, UnicodeDecodeError) as e:
        raise HFImportError(f"{file}: cannot be read ({e})") from None
    if not isinstance(data, dict):
        raise HFImportError(f"{file}:1: expected a JSON object, got {type(data).__name__}")
    return data


def _check_type(model_type, supported, where):
    if model_type not in supported:
        raise HFImportError(f"unsupported model_type {model_type!r} ({where}); megazoo imports the model types "
                            f"{', '.join(sorted(supported))}")


def apply_rules(rules: list[Rule], hf_state: dict[str, torch.Tensor], expected: dict[str, tuple],
                ignore: re.Pattern | None = None) -> dict[str, torch.Tensor]:
    """HF state -> megazoo state; every missing, unexpected or mismatched tensor is named."""
    out, missing, mismatched, used = {}, [], [], set()
    for rule in rules:
        absent = [n for n in rule.hf if n not in hf_state]
        if absent:
            missing += absent
            continue
        used.update(rule.hf)
        try:
            t = rule.to_mz([hf_state[n] for n in rule.hf])
        except RuntimeError as e:  # a reshape that cannot work: the shapes are wrong
            mismatched.append(f"{', '.join(rule.hf)} {[tuple(hf_state[n].shape) for n in rule.hf]}: {e}")
            continue
        want = expected.get(rule.name)
        if want is not None and tuple(t.shape) != tuple(want):
            mismatched.append(f"{', '.join(rule.hf)} -> {rule.name}: shape {tuple(t.shape)}, the config needs {tuple(want)}")
            continue
        out[rule.name] = t
    unexpected = sorted(k for k in hf_state if k not in used and not (ignore and ignore.search(k)))
    problems = []
    if missing:
        problems.append(f"missing tensors: {', '.join(missing)}")
    if mismatched:
        problems.append("mismatched tensors: " + "; ".join(mismatched))
    if unexpected:
        problems.append(f"unexpected tensors: {', '.join(unexpected)}")
    if problems:
        raise HFImportError("the HF weights do not match the config: " + " | ".join(problems))
    return out


def invert_rules(rules: list[Rule], state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    missing = [r.name for r in rules if r.name not in state]
    if missing:
        raise HFExportError(f"the megazoo state dict lacks tensors: {', '.join(missing)}")
    extra = sorted(set(state) - {r.name for r in rules})
    if extra:
        raise HFExportError(f"the megazoo state dict has tensors the HF layout has no place for: {', '.join(extra)}")
    out = {}
    for r in rules:
        for name, t in zip(r.hf, r.to_hf(state[r.name])):
            out[name] = t.contiguous()
    return out


def add_prefix(state: dict[str, torch.Tensor], prefix: str, head_prefixes: tuple[str, ...] = ()) -> dict:
    """A base model's keys (no `prefix`) -> the keys of the model with a head."""
    if any(k.startswith(prefix) for k in state):
        return state
    return {(k if k.startswith(head_prefixes) and head_prefixes else prefix + k): v for k, v in state.items()}
