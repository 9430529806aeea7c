"""Writing HF folders: safetensors (sharded with an index when large), tokenizer files, atomically."""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import shutil
from contextlib import contextmanager
from pathlib import Path

import torch

from megazoo.core.fs import atomic_folder  # noqa: F401 (the one helper, re-exported for zoo's writers)

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "vocab.txt", "vocab.json", "merges.txt", "spiece.model", "tokenizer.model", "chat_template.jinja")


def parse_size(size) -> int:
    """5000000, "5MB", "2GB", "500KiB" -> bytes."""
    if isinstance(size, int):
        return size
    m = re.fullmatch(r"\s*([\d.]+)\s*([KMG]i?B|B)?\s*", str(size), re.I)
    if not m:
        raise ValueError(f"cannot read the size {size!r}; write e.g. 2GB or 500MB")
    unit = (m.group(2) or "B").upper()
    mult = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}[unit]
    return int(float(m.group(1)) * mult)


MIN_SHARD, MAX_SHARD = 1000, 10**13  # 1 KB .. 10 TB: a shard per tensor at most, one file at least


def shard_size(text: str) -> int:
    """An argparse type: --max-shard-size (2GB, 500MB, 50KB, bytes), bounded."""
    try:
        value = parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not MIN_SHARD <= value <= MAX_SHARD:
        raise argparse.ArgumentTypeError(f"must be between 1KB and 10TB, got {text!r} ({value} bytes)")
    return value


def _is_output(name, out: Path) -> bool:
    """`name` (an OSError's file) is the output folder, in it, or the scratch folder beside it."""
    path = Path(os.path.abspath(os.fspath(name)))
    out = Path(os.path.abspath(out))
    scratch = f".{out.name}.tmp-"
    return path == out or out in path.parents or any(
        p.parent == out.parent and p.name.startswith(scratch) for p in (path, *path.parents))


@contextmanager
def output_errors(out, what: str):
    """Name the output folder `out` in a failure to write it (a full disk, an I/O error): the
    OSError gets `out` as its file and says what was being written, so the line never blames an
    input. safetensors reports a failed write as its own error type: it becomes an OSError too
    (its errno kept: ENOSPC stays a runtime failure, exit 1). Errors about other files pass."""
    out = Path(out)
    try:
        yield
    except OSError as err:
        if err.errno is None or (err.filename is not None and not _is_output(err.filename, out)):
            raise  # a refusal with its own message, or a file that is not the output
        code = err.errno
        raise OSError(code, f"{os.strerror(code)} while writing {what}; nothing was replaced (an old {out.name} "
                            f"is intact)", str(out)) from err
    except Exception as err:
        if type(err).__name__ != "SafetensorError":
            raise
        found = re.search(r"code: (\d+)", str(err))
        code = int(found.group(1)) if found else errno.EIO
        raise OSError(code, f"{os.strerror(code)} while writing {what}; nothing was replaced (an old {out.name} "
                            f"is intact)", str(out)) from err


def write_weights(folder: Path, state: dict[str, torch.Tensor], max_shard_size="2GB") -> list[str]:
    """model.safetensors, or model-0000k-of-0000n.safetensors + model.safetensors.index.json."""
    from safetensors.torch import save_file

    limit = parse_size(max_shard_size)
    shards, current, size = [], {}, 0
    for name, t in state.items():
        nbytes = t.numel() * t.element_size()
        if current and size + nbytes > limit:
            shards.append(current)
            current, size = {}, 0
        current[name] = t.detach().cpu().contiguous()
        size += nbytes
    shards.append(current)
    meta = {"format": "pt"}
    if len(shards) == 1:
        save_file(shards[0], str(folder / "model.safetensors"), metadata=meta)
        return ["model.safetensors"]
    names, weight_map = [], {}
    for i, shard in enumerate(shards, 1):
        fname = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(folder / fname), metadata=meta)
        names.append(fname)
        weight_map.update({k: fname for k in shard})
    total = sum(t.numel() * t.element_size() for t in state.values())
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))
    return names


def copy_tokenizer(src, folder: Path) -> list[str]:
    """Tokenizer files from a folder, or from a tokenizer object (save_pretrained)."""
    if src is None:
        return []
    if hasattr(src, "save_pretrained"):
        src.save_pretrained(str(folder))
        return sorted(p.name for p in folder.iterdir() if p.name in TOKENIZER_FILES)
    src = Path(src)
    copied = []
    for name in TOKENIZER_FILES:
        if (src / name).exists():
            shutil.copy2(src / name, folder / name)
            copied.append(name)
    return copied
