"""`megazoo preprocess`: text/JSONL -> Megatron .bin/.idx, or merge several outputs into one.

    megazoo preprocess --input a.jsonl b.jsonl --tokenizer gpt2 --output-prefix data/web \\
        --workers 2 --append-eod
    megazoo preprocess --input notes.txt --tokenizer bert-wordpiece --split-sentences --output-prefix data/notes
    megazoo preprocess --merge data/web data/notes --output-prefix data/all
"""

from __future__ import annotations

import argparse
import sys

from megazoo.core.argtypes import nonnegative_int, positive_int
from megazoo.core.data.errors import DataError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--input", nargs="+", metavar="FILE",
                     help="text or JSONL files (.jsonl/.json are JSON lines), processed in order")
    src.add_argument("--merge", nargs="+", metavar="PREFIX",
                     help="merge these .bin/.idx prefixes (same tokenizer) into --output-prefix")
    parser.add_argument("--output-prefix", required=True, metavar="P", help="writes P.bin and P.idx")
    parser.add_argument("--tokenizer", default="gpt2",
                        help="gpt2 | bert-wordpiece[-cased][:VOCAB_TXT] | sentencepiece[:MODEL] | hf:DIR "
                             "(default: gpt2)")
    parser.add_argument("--vocab-extra-ids", type=nonnegative_int, default=0, metavar="N",
                        help="add N T5 sentinel tokens <extra_id_0..N-1> to the vocabulary")
    parser.add_argument("--workers", type=positive_int, default=1, metavar="N", help="tokeniser processes")
    parser.add_argument("--append-eod", action="store_true", help="end every document with the EOD token")
    parser.add_argument("--split-sentences", action="store_true",
                        help="store each sentence as its own sequence (needed for BERT/T5 samples)")
    parser.add_argument("--json-key", default="text", help="the JSON key holding the text (default: text)")
    parser.add_argument("--format", dest="fmt", choices=("auto", "jsonl", "text"), default="auto",
                        help="input format; auto: .jsonl/.json are JSON lines, others plain text")
    parser.add_argument("--text-mode", choices=("line", "blank", "file"), default="line",
                        help="plain text: one document per line, per blank-line-separated block, or per file")
    parser.add_argument("--dtype", choices=("auto", "uint16", "int32"), default="auto",
                        help="token dtype; auto: uint16 below 65,500 tokens of vocabulary, else int32")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from megazoo.core.data.preprocess import merge, preprocess
    from megazoo.core.data.tokenizers import build_tokenizer

    try:
        if args.merge:
            stats = merge(args.merge, args.output_prefix)
        else:
            if args.workers < 1:
                raise DataError(f"--workers {args.workers}: needs at least 1")
            tokenizer = build_tokenizer(args.tokenizer, extra_ids=args.vocab_extra_ids)
            stats = preprocess(
                args.input, tokenizer, args.output_prefix, workers=args.workers,
                append_eod=args.append_eod, split_sentences_=args.split_sentences,
                json_key=args.json_key, dtype=args.dtype, fmt=args.fmt, text_mode=args.text_mode,
                progress=False if args.no_progress else None)
    except DataError as exc:
        print(f"megazoo preprocess: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("megazoo preprocess: interrupted; nothing was written", file=sys.stderr)
        return 130
    print(stats.summary())
    if stats.skipped_empty:
        print(f"skipped {stats.skipped_empty} documents with no tokens", file=sys.stderr)
    return 0


if __name__ == "__main__":  # python -m megazoo.core.data.cli ...
    p = argparse.ArgumentParser(prog="megazoo preprocess")
    add_arguments(p)
    raise SystemExit(run(p.parse_args()))
