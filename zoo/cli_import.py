"""`megazoo import-hf HF_DIR OUT [--set parallel.tp=.. parallel.pp=..]`: a Hugging Face folder
(config.json + safetensors/bin, or a .gguf file) -> a megazoo model checkpoint.

The checkpoint holds the full state dict; the layout given with --set is checked against the model
here (so a layout that does not divide it fails before anything is written) and recorded for
training, which slices the weights per rank when it loads them.
"""

from __future__ import annotations

import argparse
import difflib

from megazoo.core.fs import input_arg, output_arg

SET_KEYS = {"parallel.tp": int, "parallel.pp": int, "parallel.sp": lambda v: v.lower() in ("1", "true", "yes")}
MAX_DEGREE = 1024  # tensor or pipeline ranks: beyond any model's heads or layers


def add_arguments(parser: argparse.ArgumentParser) -> None:
    input_arg(parser, "hf_dir", kind="folder",
              help="a Hugging Face model folder (config.json and weights, or a .gguf file)")
    output_arg(parser, "out", kind="folder", help="the megazoo checkpoint folder to create")
    parser.add_argument("--set", nargs="+", action="append", default=[], metavar="KEY=VALUE",
                        help="layout to check and record: parallel.tp=N parallel.pp=N parallel.sp=BOOL")
    parser.add_argument("--gguf-file", default=None, help="the .gguf file in HF_DIR (found by itself when it is the only one)")
    parser.add_argument("--pad-heads", action="store_true",
                        help="when parallel.tp does not divide the attention heads, add zero heads (outputs unchanged; "
                             "export-hf removes them again)")


def parse_sets(groups) -> dict:
    out = {"parallel.tp": 1, "parallel.pp": 1, "parallel.sp": False}
    for word in (w for g in groups for w in g):
        if "=" not in word:
            raise ValueError(f"--set takes key=value words, got {word!r}")
        key, value = word.split("=", 1)
        if key not in SET_KEYS:
            close = difflib.get_close_matches(key, SET_KEYS, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ValueError(f"unknown key {key!r} for import-hf{hint} (valid: {', '.join(SET_KEYS)})")
        try:
            out[key] = SET_KEYS[key](value)
        except ValueError:
            raise ValueError(f"{key} needs an integer, got {value!r}") from None
        if key != "parallel.sp" and not 1 <= out[key] <= MAX_DEGREE:
            raise ValueError(f"{key} must be an integer from 1 to {MAX_DEGREE}, got {value!r}")
    return out


def import_checkpoint(hf_dir, out, tp: int = 1, pp: int = 1, sp: bool = False, gguf_file: str | None = None,
                      pad_heads: bool = False, overwrite: bool = False):
    """What the command does, callable from Python: read, convert, check the layout, write the
    checkpoint (with the tokenizer files). Returns (source, arch, config, state)."""
    from megazoo.zoo.hf import SUPPORTED_MODEL_TYPES, check_layout, convert_from_hf
    from megazoo.zoo.hf.common import read_hf
    from megazoo.core.fs import Declared, PathRole, check_paths
    from megazoo.zoo.io import save_model

    # the output policy's rules for callers from Python too (the CLI has checked them already), before
    # anything is read or replaced
    check_paths([Declared("HF_DIR", str(hf_dir), PathRole("input", "folder"))],
                [Declared("OUT", str(out), PathRole("output", "folder"))], overwrite)
    source = read_hf(hf_dir, SUPPORTED_MODEL_TYPES, gguf_file)
    arch, cfg, state = convert_from_hf(None, source=source)
    extra = {}
    if pad_heads:
        from megazoo.zoo.hf import pad_heads as pad

        original = {"num_heads": cfg.num_heads, "num_kv_heads": cfg.num_kv_heads}
        cfg, state = pad(arch, cfg, state, tp)
        if cfg.num_kv_heads != original["num_kv_heads"]:
            extra["heads_padded_from"] = original
    check_layout(arch, cfg, tp, pp)
    tokenizer = source.path
    if source.gguf_file is not None:  # saved whole, as transformers writes it (its folder is megazoo's cache)
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(source.path)
    save_model(out, arch, cfg, state, tokenizer=tokenizer, overwrite=overwrite,
               extra={"source": str(hf_dir), "model_type": source.config.model_type,
                      "parallel": {"tp": tp, "pp": pp, "sp": sp}, **extra})
    return source, arch, cfg, state


def run(args) -> int:
    # errors are ValueErrors (HFImportError, LayoutError: exit 2) or OSErrors, one line at the boundary;
    # a failure while writing (a full disk) names OUT (zoo/io.py save_model)
    sets = parse_sets(args.set)
    tp, pp = sets["parallel.tp"], sets["parallel.pp"]
    source, arch, cfg, state = import_checkpoint(args.hf_dir, args.out, tp, pp, sets["parallel.sp"], args.gguf_file,
                                                 args.pad_heads, args.overwrite)
    n = sum(t.numel() for t in state.values())
    print(f"imported {source.config.model_type} -> megazoo {arch}: {n / 1e6:.2f}M parameters, "
          f"{len(state)} tensors, layout tp={tp} pp={pp}; wrote {args.out}")
    return 0
