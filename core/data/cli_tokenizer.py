"""`megazoo tokenizer train`: a new vocabulary from text files (core/data/tokenizer_train.py).

    megazoo tokenizer train --kind wordpiece --input docs.txt more.jsonl --vocab-size 8000 --out tok --lowercase
    megazoo train bert-tiny --set data.tokenizer=tok model.vocab_size=8000

The folder loads with transformers (`AutoTokenizer.from_pretrained("tok")`) and as megazoo's
`data.tokenizer` (the folder path, or `hf:tok`).
"""

from __future__ import annotations

import argparse
import sys

from megazoo.core.argtypes import nonnegative_int, positive_int

PROG = "megazoo tokenizer"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.data.tokenizer_train import KINDS, SPM_MODEL_TYPES

    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    train = sub.add_parser("train", help="train a wordpiece, bpe or sentencepiece tokenizer on text files",
                           description=__doc__.splitlines()[0])
    train.add_argument("--kind", choices=KINDS, required=True,
                       help="wordpiece (BERT), bpe (GPT-2 byte-level) or sentencepiece")
    train.add_argument("--input", nargs="+", required=True, metavar="FILE",
                       help=".txt (a text per non-empty line) or .jsonl (a JSON object per line) files")
    train.add_argument("--vocab-size", type=positive_int, required=True, help="tokens in the vocabulary, specials included")
    train.add_argument("--out", required=True, help="the folder to create (must not exist, or be empty)")
    train.add_argument("--lowercase", action="store_true", help="lowercase text first (wordpiece, bpe)")
    train.add_argument("--min-frequency", type=nonnegative_int, default=2,
                       help="fewest occurrences for a merge/word to enter the vocabulary (default 2; "
                            "not sentencepiece)")
    train.add_argument("--special-tokens", nargs="+", default=[], metavar="TOKEN",
                       help="more special tokens, after the kind's own ([PAD] [UNK] [CLS] [SEP] [MASK]; "
                            "<|endoftext|>; <unk> <s> </s> <pad>)")
    train.add_argument("--model-type", choices=SPM_MODEL_TYPES, default="unigram",
                       help="sentencepiece's algorithm (default unigram)")
    train.add_argument("--field", default="text", help="the JSONL key holding the text (default `text`)")
    train.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args) -> int:
    from megazoo.core.data.errors import DataError
    from megazoo.core.data.tokenizer_train import train_tokenizer

    try:
        out = train_tokenizer(args.kind, args.input, args.vocab_size, args.out, lowercase=args.lowercase,
                              min_frequency=args.min_frequency, specials=args.special_tokens,
                              model_type=args.model_type, field=args.field, progress=not args.quiet)
    except DataError as e:
        print(f"{PROG} train: error: {e}", file=sys.stderr)
        return 2
    from megazoo.core.data.tokenizers import build_tokenizer

    tok = build_tokenizer(str(out))  # the check that `data.tokenizer: OUT` works, and its figures
    specials = ", ".join(f"{k}={v}" for k, v in tok.special_ids().items() if v is not None)
    print(f"wrote {out}: {args.kind} tokenizer, {tok.vocab_size} tokens ({specials}); "
          f"use it with --set data.tokenizer={out}")
    return 0
