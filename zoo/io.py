"""Whole-model checkpoints for import/export and scoring.

`save_model` writes the model format of `megazoo import-hf`:

    DIR/model.yaml         arch, config (a dict), format version, optional notes (source, parallel layout)
    DIR/model.safetensors  the FULL unsharded state dict (megazoo names)
    DIR/tokenizer/         optional tokenizer files

`load_model` is the one way to open a model folder: that format, training checkpoints of
megazoo.core.checkpoint (a run's `checkpoints/` folder or one `iter_*` in it, which store the same
full tensors sharded) and, with hf=True, Hugging Face folders (config.json and weights, or a .gguf
file; converted with megazoo.zoo.hf.convert_from_hf). Commands that take a megazoo checkpoint
(export-hf, generate, eval) leave hf off, so an HF folder gets the error that says to import it.
"""

from __future__ import annotations

from pathlib import Path

import torch
import yaml

FORMAT = "megazoo-model/1"


def __getattr__(name: str):
    # CheckpointError is core's (megazoo.core.checkpoint), the one such error; importing it lazily
    # keeps torch.distributed.checkpoint out of the processes that only read model folders
    if name == "CheckpointError":
        return _checkpoint_error()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _checkpoint_error() -> type:
    from megazoo.core.checkpoint import CheckpointError

    return CheckpointError


def save_model(dir, arch: str, config, state_dict: dict[str, torch.Tensor], tokenizer=None,
               extra: dict | None = None, overwrite: bool = False) -> Path:
    """Write atomically (a temporary sibling folder moved into place when complete).
    `config`: a config dataclass (with to_dict) or a dict; `tokenizer`: a folder or an object
    with save_pretrained; `extra`: more keys for model.yaml."""
    from safetensors.torch import save_file

    from megazoo.zoo.hf.writer import atomic_folder, copy_tokenizer, output_errors

    cfg = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    out = Path(dir)
    # a failure while writing (a full disk) names the output folder, never the source
    with output_errors(out, "the checkpoint"), atomic_folder(out, overwrite) as tmp:
        meta = {"format": FORMAT, "arch": arch, "config": cfg, **(extra or {})}
        (tmp / "model.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
        save_file({k: v.detach().cpu().contiguous() for k, v in state_dict.items()}, str(tmp / "model.safetensors"),
                  metadata={"format": "pt", "arch": arch})
        if tokenizer is not None:
            (tmp / "tokenizer").mkdir()
            copy_tokenizer(tokenizer, tmp / "tokenizer")
    return out


def read_meta(dir) -> dict:
    path = Path(dir)
    if not (path / "model.yaml").exists():
        raise _checkpoint_error()(f"{path} is not a megazoo model checkpoint: no model.yaml (create one "
                                  "with `megazoo import-hf` or a training run)")
    try:
        meta = yaml.safe_load((path / "model.yaml").read_text()) or {}
    except yaml.YAMLError as e:
        from megazoo.core.train.user_errors import yaml_message

        raise _checkpoint_error()(f"{yaml_message(path / 'model.yaml', e)}; fix the file or import the model "
                                  f"again") from None
    if not isinstance(meta, dict) or "arch" not in meta or not isinstance(meta.get("config"), dict):
        raise _checkpoint_error()(f"{path / 'model.yaml'} lacks 'arch' or 'config'")
    return meta


def _training_checkpoint_files(path: Path) -> bool:
    return path.is_dir() and ((path / "meta.json").exists() or (path / "latest").exists() or any(path.glob("iter_*")))


def _training_checkpoint(dir) -> tuple[dict, dict[str, torch.Tensor]] | None:
    """(meta, full state) of a megazoo.core.checkpoint checkpoint, or None if `dir` is not one."""
    path = Path(dir)
    if not _training_checkpoint_files(path):
        return None
    from megazoo.core.checkpoint import load_full_model_state

    info, state = load_full_model_state(path)
    meta = dict(info.get("meta") or {})
    if "arch" not in meta or not isinstance(meta.get("model"), dict):
        raise _checkpoint_error()(f"{path}: the training checkpoint records no architecture and model config")
    return meta, state


def is_hf_folder(dir) -> bool:
    """A Hugging Face model folder (config.json, or a .gguf file) that is not a megazoo folder."""
    path = Path(dir)
    return ((path / "config.json").is_file() or any(path.glob("*.gguf"))) and not (path / "model.yaml").exists()


def _hf_model(dir) -> tuple[str, dict, dict[str, torch.Tensor]]:
    from megazoo.zoo.hf import convert_from_hf

    arch, cfg, state = convert_from_hf(str(dir))
    return arch, _config_dict(cfg), state


def _config_dict(cfg) -> dict:
    d = cfg.to_dict()
    d.pop("recompute", None)  # a run setting, not part of the model
    return d


def load_model(dir, hf: bool = False) -> tuple[str, dict, dict[str, torch.Tensor]]:
    """(arch, config dict, full state dict) of an import-hf folder or a training checkpoint, and
    with hf=True of a Hugging Face folder too (HFImportError, a ValueError, when it cannot be
    converted)."""
    from safetensors.torch import load_file

    if hf and is_hf_folder(dir):
        return _hf_model(dir)
    if not (Path(dir) / "model.yaml").exists():
        found = _training_checkpoint(dir)
        if found is not None:
            meta, state = found
            model = {k: v for k, v in meta["model"].items() if k != "arch"}  # the recipe's model section
            return meta["arch"], model, state
    meta = read_meta(dir)
    weights = Path(dir) / "model.safetensors"
    if not weights.exists():
        raise _checkpoint_error()(f"{weights} is missing: the checkpoint is incomplete")
    try:
        state = load_file(str(weights))
    except Exception as e:  # safetensors raises its own error type
        reason = str(e).splitlines()[0] if str(e).strip() else type(e).__name__
        raise _checkpoint_error()(f"{weights}: cannot read the weights ({reason}); the file is truncated or "
                                  f"corrupted: import or export the model again") from None
    return meta["arch"], meta["config"], state


def lazy_model(dir, hf: bool = False):
    """(arch, config dict, state as meta tensors, read one tensor by name) of a model folder whose
    tensors can be read one at a time: an import-hf folder and, with hf=True, a Hugging Face folder
    with safetensors weights (its names and tensors converted as load_model converts them). None for
    the others (training checkpoints, GGUF, pytorch_model.bin), which load_model reads whole."""
    from megazoo.zoo.hf.lazy import TensorFiles, lazy_hf

    if hf and is_hf_folder(dir):
        found = lazy_hf(dir)
        if found is None:
            return None
        arch, cfg, meta, get = found
        return arch, _config_dict(cfg), meta, get
    weights = Path(dir) / "model.safetensors"
    if not (Path(dir) / "model.yaml").exists() or not weights.exists():
        return None
    meta = read_meta(dir)
    tensors = TensorFiles([weights])
    return meta["arch"], meta["config"], tensors.meta, tensors.get


def model_config(dir, hf: bool = False) -> tuple[str, dict]:
    """(arch, config dict) of a model folder as load_model opens it, without reading its weights
    (a Hugging Face folder's config depends on its tensors' names and shapes: read from the
    safetensors headers, or for other weights by converting the folder whole)."""
    if hf and is_hf_folder(dir):
        try:  # safetensors weights: their names and shapes are enough (lazy_model), no tensor is read
            found = lazy_model(dir, hf=True)
        except Exception:  # noqa: BLE001 - the whole read below says what is wrong, in its own words
            found = None
        return found[:2] if found is not None else _hf_model(dir)[:2]
    if not (Path(dir) / "model.yaml").exists() and _training_checkpoint_files(Path(dir)):
        from megazoo.core.checkpoint import open_checkpoint

        _, record = open_checkpoint(dir)
        meta = record.get("meta") or {}
        if "arch" not in meta or not isinstance(meta.get("model"), dict):
            raise _checkpoint_error()(f"{dir}: the training checkpoint records no architecture and model config")
        return meta["arch"], {k: v for k, v in meta["model"].items() if k != "arch"}
    meta = read_meta(dir)
    return meta["arch"], meta["config"]


def tokenizer_dir(dir) -> Path | None:
    """The tokenizer files of a checkpoint: its tokenizer/ folder, a Hugging Face folder itself
    when it holds tokenizer files, or for a training checkpoint the folder of the tokenizer it was
    trained with (`gpt2`, `bert-wordpiece`, `hf:DIR` or a tokenizer folder)."""
    path = Path(dir) / "tokenizer"
    if path.is_dir() and any(path.iterdir()):
        return path
    if is_hf_folder(dir):
        from megazoo.zoo.hf.writer import TOKENIZER_FILES

        return Path(dir) if any((Path(dir) / f).is_file() for f in TOKENIZER_FILES) else None
    if (Path(dir) / "model.yaml").exists():
        return None
    from megazoo.core.checkpoint import open_checkpoint

    try:
        _, meta = open_checkpoint(dir)
    except Exception:
        return None
    meta = meta.get("meta") or {}
    kind = meta.get("tokenizer") or (meta.get("data") or {}).get("tokenizer")
    if kind == "gpt2":
        from megazoo.core.data.tokenizers import _gpt2_dir

        return _gpt2_dir()
    if kind == "bert-wordpiece":  # bert-base-uncased's vocabulary, in an HF tokenizer folder
        from megazoo.core.data.tokenizers import bert_vocab_file

        return bert_vocab_file().parent
    if isinstance(kind, str) and kind.startswith("hf:"):
        return Path(kind[3:])
    if isinstance(kind, str) and Path(kind).is_dir():  # a folder `megazoo tokenizer train` wrote
        return Path(kind)
    return None
