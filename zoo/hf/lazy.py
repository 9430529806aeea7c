"""A model folder's megazoo tensors read one at a time, by name (ZeRO-3's import: no rank reads
the whole file, see zoo/pretrained.UnitReader).

`TensorFiles` opens safetensors files by their headers and reads a tensor when asked for it
(`safe_open(...).get_tensor(name)`). `lazy_hf` gives a Hugging Face folder's megazoo state as
meta tensors (names and shapes: the conversion of zoo/hf run on the headers, with every check it
makes) and a function that reads and converts one megazoo tensor: the same adapter rules
(`add_prefix`, `import_state`, each Rule's `to_mz`), applied to just the HF tensors that tensor
comes from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch

DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
          "BOOL": torch.bool}


class TensorFiles:
    """The tensors of some safetensors files: their shapes and dtypes from the headers (`meta`,
    meta tensors), a tensor's data read when `get(name)` asks for it."""

    def __init__(self, files: list[Path]):
        from safetensors import safe_open

        self.open = safe_open
        self.where: dict[str, Path] = {}
        self.meta: dict[str, torch.Tensor] = {}
        for f in files:
            with safe_open(str(f), framework="pt") as h:
                for k in h.keys():
                    part = h.get_slice(k)
                    self.where[k] = f
                    self.meta[k] = torch.empty(part.get_shape(), dtype=DTYPES[part.get_dtype()], device="meta")

    def get(self, name: str) -> torch.Tensor:
        # opened for each tensor: the file's pages read so far leave the process with its mapping
        with self.open(str(self.where[name]), framework="pt") as h:
            return h.get_tensor(name)


def lazy_hf(path) -> tuple[str, object, dict[str, torch.Tensor], Callable[[str], torch.Tensor]] | None:
    """(arch, megazoo config, megazoo state as meta tensors, read one megazoo tensor) of an HF
    folder whose weights are safetensors; None for other weights (pytorch_model.bin, GGUF). Raises
    what convert_from_hf raises for a folder it cannot convert."""
    from megazoo.zoo.hf import ADAPTERS, SUPPORTED_MODEL_TYPES, convert_from_hf
    from megazoo.zoo.hf.common import add_prefix, read_hf, safetensors_files

    path = Path(path)
    if not (path / "config.json").is_file():
        return None  # a GGUF folder: transformers dequantises it whole
    files = safetensors_files(path)
    if files is None:
        return None
    tensors = TensorFiles(files)
    source = read_hf(path, SUPPORTED_MODEL_TYPES, weights=lambda _: dict(tensors.meta))
    arch, cfg, meta_state = convert_from_hf(path, source=source)
    ad = ADAPTERS[source.config.model_type]
    # the file name of each name convert_from_hf gives the HF tensors (add_prefix), and which of
    # those each tensor after `import_state` is made of (Mixtral's fused or per-expert weights)
    file_name = {k: k for k in tensors.meta}
    if ad.PREFIX:
        file_name = add_prefix(file_name, ad.PREFIX, getattr(ad, "HEADS", ("lm_head.",)))
    made_of: dict[str, set] = {}
    for k in file_name:
        out = ad.import_state({k: tensors.meta[file_name[k]]}) if hasattr(ad, "import_state") else {k: None}
        for o in out:
            made_of.setdefault(o, set()).add(k)
    rules = {r.name: r for r in ad.rules(cfg)}

    def get(name: str) -> torch.Tensor:
        rule = rules[name]
        keys = set().union(*(made_of[h] for h in rule.hf))
        hf = {k: tensors.get(file_name[k]) for k in sorted(keys)}
        if hasattr(ad, "import_state"):
            hf = ad.import_state(hf)
        return rule.to_mz([hf[h] for h in rule.hf])

    return arch, cfg, meta_state, get
