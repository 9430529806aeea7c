"""`megazoo task dialogue generate OUT_DIR [--seed N]`: the offline sets (generate.py; generated data)."""

from __future__ import annotations

import argparse

PROG = "megazoo task dialogue generate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="folder for wow/, actors/, documents/, knowledge/ and the flattened wow TSVs")
    parser.add_argument("--seed", type=int, default=0)


def run(args) -> int:
    from pathlib import Path

    from megazoo.tasks.dialogue.data import WOW_FILES, read_wow, write_tsv
    from megazoo.tasks.dialogue.generate import generate_all

    counts = generate_all(args.out, args.seed)
    wow = Path(args.out) / "wow"
    for name in WOW_FILES:
        write_tsv(read_wow(wow / name), wow / name.replace(".json", ".tsv"))
    for part, sizes in counts.items():
        print(f"{part}: " + ", ".join(f"{k} {v}" for k, v in sizes.items()))
    print(f"written under {args.out} (generated data; wow/*.tsv: Megatron's flattened format)")
    return 0
