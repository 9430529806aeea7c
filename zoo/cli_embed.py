"""`megazoo embed CKPT --input FILE.jsonl|.txt --out FILE.npy`: one float32 vector per text.

    megazoo embed out/minilm --input texts.txt --out vecs.npy --pooling mean --normalize

CKPT: an `megazoo import-hf` folder, a Hugging Face BERT folder or a training checkpoint (see
zoo/embed.py). Input: .txt holds one text per non-empty line; .jsonl one JSON object per line
with the text under --field (default `text`). The .npy ([N, hidden], float32, in input order) is
written to a temporary sibling and moved into place, so a failed run leaves no partial file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from megazoo.core.argtypes import positive_int

PROG = "megazoo embed"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", metavar="CKPT",
                        help="an import-hf folder, a Hugging Face BERT folder or a training checkpoint")
    parser.add_argument("--input", required=True, help=".txt (one text per line) or .jsonl (one object per line)")
    parser.add_argument("--out", required=True, help="the .npy file to write ([N, hidden] float32)")
    parser.add_argument("--pooling", choices=("mean", "cls"), default="mean",
                        help="mean over the tokens (default), or the [CLS] token's vector")
    parser.add_argument("--normalize", action="store_true", help="scale each vector to unit length")
    parser.add_argument("--batch", type=positive_int, default=32, help="texts per forward pass (default 32)")
    parser.add_argument("--field", default="text", help="the JSONL key holding the text (default `text`)")
    parser.add_argument("--max-length", type=int, default=None,
                        help="truncate texts to this many tokens (default: the model folder's "
                             "sentence-transformers setting, else the model's positions)")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: a GPU when there is one)")
    parser.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _check(args) -> str | None:
    """What is wrong with the request before anything is loaded, or None."""
    if not Path(args.checkpoint).is_dir():
        return f"{args.checkpoint}: no such checkpoint folder"
    if not Path(args.input).is_file():
        return f"{args.input}: no such input file"
    out = Path(args.out)
    if out.suffix != ".npy":
        return f"--out {out}: give a .npy file name"
    if out.exists() and not args.overwrite:
        return f"{out} exists; pass --overwrite to replace it, or choose another --out"
    if not out.parent.is_dir():
        return f"--out {out}: the folder {out.parent} does not exist"
    if args.batch < 1:
        return f"--batch must be at least 1, got {args.batch}"
    if args.max_length is not None and args.max_length < 2:
        return f"--max-length must be at least 2, got {args.max_length}"
    if args.device and args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            return f"--device {args.device}: no CUDA device here; use --device cpu"
    return None


def save_npy_atomic(path: Path, array) -> None:
    import numpy as np

    from megazoo.core.fs import atomic_file

    with atomic_file(path) as f:
        np.save(f, array)


def run(args) -> int:
    from megazoo.core.checkpoint import CheckpointError
    from megazoo.core.data.tokenizer_train import read_texts

    problem = _check(args)
    if problem:
        print(f"{PROG}: error: {problem}", file=sys.stderr)
        return 2
    try:
        texts = list(read_texts(args.input, args.field, key_flag="--field"))
        if not texts:
            raise ValueError(f"{args.input}: holds no texts")
        from megazoo.zoo.embed import Embedder

        embedder = Embedder(args.checkpoint, max_length=args.max_length, device=args.device)
        vectors = embedder.encode(texts, batch=args.batch, pooling=args.pooling, normalize=args.normalize,
                                  progress=not args.quiet)
    except (ValueError, CheckpointError, OSError) as e:  # every reason the inputs cannot be used: one line
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    save_npy_atomic(Path(args.out), vectors)
    print(f"wrote {args.out}: {vectors.shape[0]} x {vectors.shape[1]} float32 ({embedder.arch}, "
          f"{args.pooling} pooling{', normalized' if args.normalize else ''})", file=sys.stderr)
    return 0
