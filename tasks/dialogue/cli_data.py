"""`megazoo task dialogue data OUT_DIR [--seed N] [--wow-test handmade|generated]`: the offline sets
(generate.py; generated data). The WoW test files hold the hand-made set (handmade.py) unless
--wow-test generated asks for the template-made test dialogues."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.argtypes import int_in
    from megazoo.core.fs import output_arg
    from megazoo.tasks.dialogue.stage import MAX_SEED

    output_arg(parser, "out", kind="folder",
               help="folder for wow/, actors/, documents/, knowledge/, reddit/ and the flattened wow TSVs")
    parser.add_argument("--seed", type=int_in(0, MAX_SEED), default=0)
    parser.add_argument("--wow-test", choices=("handmade", "generated"), default="handmade",
                        help="what the two WoW test splits hold: the hand-made dialogues (default; seen topics in "
                             "the random split, unseen in the topic split) or template-made ones")


def run(args) -> int:
    from megazoo.core.fs import atomic_folder
    from megazoo.tasks.dialogue.data import WOW_FILES, read_wow, write_tsv
    from megazoo.tasks.dialogue.generate import generate_all

    # the output policy has refused an existing non-empty folder without --overwrite; everything is
    # written into a scratch folder that replaces OUT_DIR only once complete
    with atomic_folder(args.out, overwrite=args.overwrite) as tmp:
        counts = generate_all(tmp, args.seed, args.wow_test)
        wow = tmp / "wow"
        for name in WOW_FILES:
            write_tsv(read_wow(wow / name), wow / name.replace(".json", ".tsv"))
    for part, sizes in counts.items():
        print(f"{part}: " + ", ".join(f"{k} {v}" for k, v in sizes.items()))
    made = "hand-made test splits" if args.wow_test == "handmade" else "generated test splits"
    print(f"written under {args.out} (generated data, {made}; wow/*.tsv: Megatron's flattened format)")
    return 0
