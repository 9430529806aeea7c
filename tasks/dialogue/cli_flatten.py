"""`megazoo task dialogue flatten FILE --out FILE.tsv`: Wizard of Wikipedia (.json), Wizard of Internet
or conversation JSONL (.jsonl) to Megatron's `topic \\t turns [SEP]-joined \\t knowledge \\t response` TSV."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.fs import input_arg, output_arg

    input_arg(parser, "data", kind="file", hf=True, help="a WoW .json, a WoI .jsonl or a conversation .jsonl")
    output_arg(parser, "--out", kind="file", required=True, help="the TSV to write")


def run(args) -> int:
    from megazoo.tasks.dialogue.data import read_any, write_tsv

    samples = read_any(args.data)
    print(f"{len(samples)} samples written to {write_tsv(samples, args.out)}")
    return 0
