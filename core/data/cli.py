"""`megazoo preprocess`: text/JSONL -> Megatron .bin/.idx, or merge several outputs into one.

    megazoo preprocess --input a.jsonl b.jsonl --tokenizer gpt2 --output-prefix data/web \\
        --workers 2 --append-eod
    megazoo preprocess --input notes.txt --tokenizer bert-wordpiece --split-sentences --output-prefix data/notes
    megazoo preprocess --merge data/web data/notes --output-prefix data/all
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from megazoo.core.argtypes import int_in
from megazoo.core.fs import input_arg, output_arg

# --workers: more tokeniser processes than this gain nothing on any machine megazoo runs on, and each
# holds a tokenizer (hundreds of MB for large vocabularies)
MAX_WORKERS = 256
# --vocab-extra-ids: T5 uses 100 sentinels; the bound keeps ids far inside int32
MAX_EXTRA_IDS = 100_000


def _bin_idx(prefix: Path) -> list[Path]:
    """The files a prefix names: P.bin and P.idx."""
    return [prefix.with_name(prefix.name + ".bin"), prefix.with_name(prefix.name + ".idx")]


def _check_prefix(prefix: str) -> None:
    """P names P.bin and P.idx, never P itself: a P that is an existing file or folder is almost
    always a slip (the input file, the data folder), and is refused before anything is written."""
    path = Path(prefix)
    if path.is_dir():
        raise ValueError(f"--output-prefix {prefix} is a folder; give a name inside it, e.g. {path / 'data'} "
                         f"(writes data.bin and data.idx there; nothing was changed)")
    if path.exists():
        raise ValueError(f"--output-prefix {prefix} is an existing file; the prefix names the new files "
                         f"{path.name}.bin and {path.name}.idx, so give a new name, e.g. {path.with_suffix('')}-tok "
                         f"(nothing was changed)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    src = parser.add_mutually_exclusive_group(required=True)
    input_arg(src, "--input", nargs="+", metavar="FILE", kind="file",
              help="text or JSONL files (.jsonl/.json are JSON lines), processed in order")
    input_arg(src, "--merge", nargs="+", metavar="PREFIX", kind="prefix",
              help="merge these .bin/.idx prefixes (same tokenizer) into --output-prefix")
    output_arg(parser, "--output-prefix", required=True, metavar="P", kind="prefix", also=_bin_idx,
               help="writes P.bin and P.idx (existing ones only with --overwrite)")
    parser.add_argument("--tokenizer", default="gpt2",
                        help="gpt2 | bert-wordpiece[-cased][:VOCAB_TXT] | sentencepiece[:MODEL] | hf:DIR "
                             "(default: gpt2)")
    parser.add_argument("--vocab-extra-ids", type=int_in(0, MAX_EXTRA_IDS), default=0, metavar="N",
                        help="add N T5 sentinel tokens <extra_id_0..N-1> to the vocabulary")
    parser.add_argument("--workers", type=int_in(1, MAX_WORKERS), default=1, metavar="N",
                        help=f"tokeniser processes (1 to {MAX_WORKERS})")
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
    """Errors are DataError / OSError: the boundary in megazoo/cli.py prints them as one line, exit 2."""
    _check_prefix(args.output_prefix)  # before the heavy imports: a slip is refused at once
    from megazoo.core.data.preprocess import merge, preprocess
    from megazoo.core.data.tokenizers import build_tokenizer
    from megazoo.core.fs import Declared, PathRole, check_paths

    if args.merge:
        # the policy sees the prefix P only; its files P.bin and P.idx are what is read
        inputs = [Declared("--merge", str(f), PathRole("input", "file")) for p in args.merge
                  for f in _bin_idx(Path(p))]
        outputs = [Declared("--output-prefix", args.output_prefix, PathRole("output", "prefix", also=_bin_idx))]
        check_paths(inputs, outputs, overwrite=args.overwrite)
        stats = merge(args.merge, args.output_prefix)
    else:
        tokenizer = build_tokenizer(args.tokenizer, extra_ids=args.vocab_extra_ids)
        stats = preprocess(
            args.input, tokenizer, args.output_prefix, workers=args.workers,
            append_eod=args.append_eod, split_sentences_=args.split_sentences,
            json_key=args.json_key, dtype=args.dtype, fmt=args.fmt, text_mode=args.text_mode,
            progress=False if args.no_progress else None)
    print(stats.summary())
    if stats.skipped_empty:
        print(f"skipped {stats.skipped_empty} documents with no tokens", file=sys.stderr)
    return 0


if __name__ == "__main__":  # python -m megazoo.core.data.cli ...: the output policy as `megazoo preprocess`
    from megazoo.core.fs import enforce

    parser = argparse.ArgumentParser(prog="megazoo preprocess")
    add_arguments(parser)
    parsed = parser.parse_args()
    enforce(parser, parsed)
    raise SystemExit(run(parsed))
