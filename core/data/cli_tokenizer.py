"""`megazoo tokenizer train`: a new vocabulary from text files (core/data/tokenizer_train.py).

    megazoo tokenizer train --kind wordpiece --input docs.txt more.jsonl --vocab-size 8000 --out tok --lowercase
    megazoo train bert-tiny --set data.tokenizer=tok model.vocab_size=8000

The folder loads with transformers (`AutoTokenizer.from_pretrained("tok")`) and as megazoo's
`data.tokenizer` (the folder path, or `hf:tok`).
"""

from __future__ import annotations

import argparse

from megazoo.core.argtypes import float_in, int_in
from megazoo.core.fs import input_arg, output_arg

PROG = "megazoo tokenizer"
# --min-frequency: a count of occurrences; 2**31 - 1 is more than any corpus' word count needs
MAX_MIN_FREQUENCY = 2**31 - 1
# --time-limit: a day by default (real corpora of a few GB train in minutes to an hour), 30 days at most
DEFAULT_TIME_LIMIT = 86_400.0
MAX_TIME_LIMIT = 30 * 86_400.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.data.tokenizer_train import KINDS, MAX_VOCAB, SPM_MODEL_TYPES

    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    train = sub.add_parser("train", help="train a wordpiece, bpe or sentencepiece tokenizer on text files",
                           description=__doc__.splitlines()[0])
    train.add_argument("--kind", choices=KINDS, required=True,
                       help="wordpiece (BERT), bpe (GPT-2 byte-level) or sentencepiece")
    input_arg(train, "--input", nargs="+", required=True, metavar="FILE", kind="file",
              help=".txt (a text per non-empty line) or .jsonl (a JSON object per line) files")
    train.add_argument("--vocab-size", type=int_in(1, MAX_VOCAB), required=True,
                       help=f"tokens in the vocabulary, specials included (at most {MAX_VOCAB:,} = 2**24)")
    output_arg(train, "--out", required=True, kind="folder",
               help="the folder to create (missing or empty; an existing one only with --overwrite)")
    train.add_argument("--lowercase", action="store_true", help="lowercase text first (wordpiece, bpe)")
    train.add_argument("--min-frequency", type=int_in(0, MAX_MIN_FREQUENCY), default=2,
                       help="fewest occurrences for a merge/word to enter the vocabulary (default 2; "
                            "not sentencepiece)")
    train.add_argument("--special-tokens", nargs="+", default=[], metavar="TOKEN",
                       help="more special tokens, after the kind's own ([PAD] [UNK] [CLS] [SEP] [MASK]; "
                            "<|endoftext|>; <unk> <s> </s> <pad>)")
    train.add_argument("--model-type", choices=SPM_MODEL_TYPES, default="unigram",
                       help="sentencepiece's algorithm (default unigram)")
    train.add_argument("--field", default="text", help="the JSONL key holding the text (default `text`)")
    train.add_argument("--time-limit", type=float_in(1, MAX_TIME_LIMIT), default=DEFAULT_TIME_LIMIT,
                       metavar="SECONDS", help="stop with an error (nothing written) if reading and training take "
                                               "longer (default 86400: a day)")
    train.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args) -> int:
    """A bad input or setting is a DataError (a ValueError): one line, exit 2, at the boundary in megazoo/cli.py."""
    import sys
    import warnings

    from megazoo.core.data.tokenizer_train import VocabularyShortfall, shortfall, train_tokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabularyShortfall)  # said below, as one line
        out = train_tokenizer(args.kind, args.input, args.vocab_size, args.out, lowercase=args.lowercase,
                              min_frequency=args.min_frequency, specials=args.special_tokens,
                              model_type=args.model_type, field=args.field, progress=not args.quiet,
                              overwrite=args.overwrite, time_limit=args.time_limit)
    message = shortfall(out)
    if message:
        print(f"{PROG} train: warning: {message}", file=sys.stderr)
    from megazoo.core.data.tokenizers import build_tokenizer

    tok = build_tokenizer(str(out))  # the check that `data.tokenizer: OUT` works, and its figures
    specials = ", ".join(f"{k}={v}" for k, v in tok.special_ids().items() if v is not None)
    print(f"wrote {out}: {args.kind} tokenizer, {tok.vocab_size} tokens ({specials}); "
          f"use it with --set data.tokenizer={out}")
    return 0
