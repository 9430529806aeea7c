"""`megazoo embed CKPT --input FILE.jsonl|.txt --out FILE.npy`: one float32 vector per line.

    megazoo embed out/minilm --input texts.txt --out vecs.npy --pooling mean --normalize

CKPT: an encoder checkpoint (BERT): an `megazoo import-hf` folder, a Hugging Face or
sentence-transformers BERT folder, or a BERT training checkpoint (see zoo/embed.py). A GPT/Llama
decoder is refused: its causal states are not sentence embeddings.

Row i of the .npy is line i of the input, always. In a .txt file every line is a text, and a blank
line is the empty text, embedded as sentence-transformers' `model.encode(lines)` embeds "" (the
[CLS] [SEP] pair alone). A .jsonl file holds one JSON object per line with the text under --field
(default `text`); a blank line there is refused with its `FILE:LINE` (it holds no object). The
.npy ([N, hidden], float32, in input order) is written to a temporary sibling and moved into place,
so a failed run leaves no partial file, and an existing --out is replaced only with --overwrite.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from megazoo.core.argtypes import int_in
from megazoo.core.fs import input_arg, output_arg

PROG = "megazoo embed"
MAX_BATCH = 65536  # texts per forward pass: far above any useful batch, far below the allocator's reach
MAX_LENGTH = 131072  # tokens per text: above every encoder's positions (the model's own limit is checked too)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    input_arg(parser, "checkpoint", kind="folder", metavar="CKPT",
              help="an encoder checkpoint: an import-hf folder, a Hugging Face BERT folder or a training checkpoint")
    input_arg(parser, "--input", kind="file", required=True,
              help=".txt (one text per line; a blank line is the empty text) or .jsonl (one object per line)")
    output_arg(parser, "--out", kind="file", required=True, help="the .npy file to write ([N, hidden] float32)")
    parser.add_argument("--pooling", choices=("mean", "cls"), default="mean",
                        help="mean over the tokens (default), or the [CLS] token's vector")
    parser.add_argument("--normalize", action="store_true", help="scale each vector to unit length")
    parser.add_argument("--batch", type=int_in(1, MAX_BATCH), default=32,
                        help=f"texts per forward pass, 1 to {MAX_BATCH} (default 32)")
    parser.add_argument("--field", default="text", help="the JSONL key holding the text (default `text`)")
    parser.add_argument("--max-length", type=int_in(2, MAX_LENGTH), default=None,
                        help="truncate texts to this many tokens (default: the model folder's "
                             "sentence-transformers setting, else the model's positions)")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: a GPU when there is one)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def check(args) -> None:
    """Refuse (ValueError, one line) what is wrong with the request before anything is loaded."""
    from megazoo.zoo.embed import check_device

    if not Path(args.checkpoint).is_dir():
        raise ValueError(f"{args.checkpoint}: no such checkpoint folder")
    if not Path(args.input).is_file():
        raise ValueError(f"{args.input}: no such input file")
    out = Path(args.out)
    if out.suffix != ".npy":
        raise ValueError(f"--out {out}: give a .npy file name")
    if not out.parent.is_dir():
        raise ValueError(f"--out {out}: the folder {out.parent} does not exist")
    check_device(args.device)  # a bogus device is one line, before the model is read


def save_npy_atomic(path: Path, array) -> None:
    import numpy as np

    from megazoo.core.fs import atomic_file

    with atomic_file(path) as f:
        np.save(f, array)


def run(args) -> int:
    check(args)
    from megazoo.zoo.embed import Embedder, read_lines

    texts, names = read_lines(args.input, args.field)
    if not texts:
        raise ValueError(f"{args.input}: holds no texts")
    embedder = Embedder(args.checkpoint, max_length=args.max_length, device=args.device, decoders=False)
    vectors = embedder.encode(texts, batch=args.batch, pooling=args.pooling, normalize=args.normalize,
                              progress=not args.quiet, names=names)
    save_npy_atomic(Path(args.out), vectors)
    print(f"wrote {args.out}: {vectors.shape[0]} x {vectors.shape[1]} float32 ({embedder.arch}, "
          f"{args.pooling} pooling{', normalized' if args.normalize else ''})", file=sys.stderr)
    return 0
