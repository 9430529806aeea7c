"""`megazoo task retrieval store --passages psgs_w100.tsv[.gz] --out STORE`: the passage store (store.py),
built once in one streaming pass (a progress bar with ETA on stderr), that the embed, index, evaluate
and reader stages read by row. STORE is written to a scratch folder and moved into place when
complete; an existing non-empty STORE is replaced only with --overwrite."""

from __future__ import annotations

import argparse

from megazoo.core.fs import input_arg, output_arg

PROG = "megazoo task retrieval store"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    input_arg(parser, "--passages", kind="any", required=True, hf=True,
              help="a psgs_w100.tsv-layout file (id<TAB>text<TAB>title, header), or its .gz")
    output_arg(parser, "--out", kind="folder", required=True, help="the store folder to write")


def run(args) -> int:
    import time

    from megazoo.tasks.retrieval.store import build_store

    t0 = time.perf_counter()
    meta = build_store(args.passages, args.out, overwrite=args.overwrite)
    print(f"{meta['count']:,} passages ({(meta['text_bytes'] + meta['title_bytes']) / 2**20:,.1f} MiB of text) "
          f"stored in {time.perf_counter() - t0:.1f} s: {args.out} (fingerprint {meta['fingerprint']})")
    return 0
