"""GGUF files, dequantised once.

transformers reads a GGUF file in Python: for SmolLM2-135M (Q4_1, 98 MB) it spends about 40 s, most
of it parsing the metadata and the 49k-entry vocabulary, every time the model or its tokenizer is
loaded. So megazoo dequantises a GGUF once into an ordinary Hugging Face folder in its cache
(core/fs/cache.py): config.json, model.safetensors (fp32) and the tokenizer files, exactly what
transformers makes of the file. Every later load reads that folder in about a second.

    folder = hf_folder(path)                # PATH itself, or the dequantised folder of its one GGUF
    folder = hf_folder(path, "model.gguf")  # that GGUF file of PATH

The cached folder is keyed by the file's content (SHA-256) and the transformers and gguf versions,
so a changed file or library gets a new folder; it is built in scratch and renamed into place.
"""

from __future__ import annotations

import hashlib
import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from megazoo.zoo.hf.common import _first_line

FORMAT = 1  # bump when the folder's contents change


def gguf_name(path: Path, gguf_file: str | None = None) -> str | None:
    """The GGUF file to read in `path`: `gguf_file` when given, else the folder's only .gguf file when
    it has no config.json; None for an ordinary Hugging Face folder."""
    if gguf_file is not None:
        return gguf_file
    if (path / "config.json").is_file():
        return None
    ggufs = sorted(p.name for p in path.glob("*.gguf"))
    if len(ggufs) > 1:
        raise ValueError(f"{path} holds several GGUF files ({', '.join(ggufs)}) and no config.json; choose "
                         f"one with --gguf-file or keep one in the folder")
    return ggufs[0] if ggufs else None


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "none"


def _key(file: Path) -> str:
    digest = hashlib.sha256()
    with open(file, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    digest.update(f"{FORMAT} transformers {_version('transformers')} gguf {_version('gguf')}".encode())
    return digest.hexdigest()[:20]


def _dequantise(path: Path, gguf_file: str, out: Path) -> None:
    import torch
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(path, gguf_file=gguf_file, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(path, gguf_file=gguf_file)
    save_model(model, str(out / "model.safetensors"), metadata={"format": "pt"})  # tied weights once
    config = model.config.to_dict()
    config.pop("quantization_config", None)  # the weights are plain fp32 now
    config["dtype"] = "float32"
    (out / "config.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
    tokenizer.save_pretrained(out)
    (out / "source.json").write_text(json.dumps({"gguf": str(path / gguf_file), "format": FORMAT}) + "\n")


def hf_folder(path: str | Path, gguf_file: str | None = None) -> Path:
    """A folder transformers' `from_pretrained` reads without `gguf_file`: `path` itself for an
    ordinary Hugging Face folder, else the cached dequantised folder of its GGUF file (made on the
    first call)."""
    from megazoo.core.fs import cache_root, cached_folder

    path = Path(path)
    name = gguf_name(path, gguf_file)
    if name is None:
        return path
    file = path / name
    if not file.is_file():
        raise FileNotFoundError(f"{file}: no such GGUF file in {path}")
    folder = cache_root() / "gguf" / f"{file.stem}-{_key(file)}"
    try:
        return cached_folder(folder, lambda tmp: _dequantise(path, name, tmp))
    except (ValueError, KeyError, RuntimeError) as e:  # transformers' words for a file it cannot take
        raise ValueError(f"{file}: transformers cannot read this GGUF file ({_first_line(e)})") from None
