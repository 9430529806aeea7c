"""`megazoo zoo list` and `megazoo zoo show NAME`: the named model cards, their parameter counts,
training FLOPs per token and the memory their model states need."""

from __future__ import annotations

import argparse
import json
import sys

from megazoo.core.fs import input_arg

GIB = float(2**30)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    lst = sub.add_parser("list", help="one line per model card")
    lst.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    show = sub.add_parser("show", help="a card's sizes, parameters, FLOPs per token and state memory")
    input_arg(show, "name", help="card name (see `megazoo zoo list`) or a card YAML path")
    show.add_argument("--json", action="store_true", help="print one JSON object")


def summary(name: str) -> dict:
    """The figures `zoo show` prints, as a dict."""
    from megazoo.core.plan.flops import flops_per_token
    from megazoo.core.plan.memory import state_bytes
    from megazoo.core.plan.params import padded_vocab, total_params
    from megazoo.zoo.cards import card_shape, load_card

    card = load_card(name)
    shape = card_shape(card)
    params = total_params(shape)
    vocab = padded_vocab(shape.vocab_size, 1)
    embedding = vocab * shape.hidden_size * (1 if shape.tie_embeddings else 2)
    w16, g16, o16 = state_bytes(params, "bf16", False, 1)
    w32, g32, o32 = state_bytes(params, "fp32", False, 1)
    return dict(
        name=card["name"], arch=card["arch"], description=" ".join(str(card["description"]).split()),
        paper=card["paper"], tokenizer=card["tokenizer"], model=card["model"],
        parameters=params, embedding_parameters=embedding, non_embedding_parameters=params - embedding,
        padded_vocab_size=vocab, flops_per_token=flops_per_token(shape),
        memory_gib={
            "bf16 mixed precision (2 + 4 + 12 bytes/param)": dict(weights=w16 / GIB, grads=g16 / GIB,
                                                                optimizer_states=o16 / GIB,
                                                                total=(w16 + g16 + o16) / GIB),
            "fp32 (4 + 4 + 8 bytes/param)": dict(weights=w32 / GIB, grads=g32 / GIB, optimizer_states=o32 / GIB,
                                               total=(w32 + g32 + o32) / GIB),
        },
    )


def human(n: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:.0f}"


def run(args: argparse.Namespace) -> int:
    from megazoo.zoo.cards import CardError, card_shape, list_cards, load_card
    from megazoo.core.plan.params import total_params

    try:
        if args.action == "list":
            rows = []
            for name in list_cards():
                card = load_card(name)
                m = card["model"]
                rows.append(dict(name=name, arch=card["arch"], parameters=total_params(card_shape(card)),
                                 layers=m["num_layers"], hidden=m["hidden_size"], heads=m["num_heads"],
                                 seq=m["seq_length"], vocab=m["vocab_size"]))
            if args.json:
                print(json.dumps(rows, indent=1))
                return 0
            print(f"{'name':<18} {'arch':<6} {'params':>8} {'layers':>6} {'hidden':>6} {'heads':>5} {'seq':>5} {'vocab':>6}")
            for r in rows:
                print(f"{r['name']:<18} {r['arch']:<6} {human(r['parameters']):>8} {r['layers']:>6} {r['hidden']:>6} "
                      f"{r['heads']:>5} {r['seq']:>5} {r['vocab']:>6}")
            return 0
        info = summary(args.name)
    except CardError as e:
        from megazoo.core.train.user_errors import debug

        if debug():
            raise  # MEGAZOO_DEBUG=1: the traceback behind the line
        print(f"megazoo zoo: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    print(f"{info['name']} ({info['arch']}): {info['description']}")
    print(f"paper: {info['paper']}")
    print(f"tokenizer: {info['tokenizer']} (vocabulary {info['model']['vocab_size']}, padded to {info['padded_vocab_size']})")
    print("model: " + ", ".join(f"{k}={v}" for k, v in info["model"].items()))
    print(f"parameters: {info['parameters']:,} ({human(info['parameters'])}; "
          f"{human(info['non_embedding_parameters'])} outside the embeddings)")
    print(f"training FLOPs per token (forward + backward, seq {info['model']['seq_length']}): "
          f"{info['flops_per_token']:.4g}")
    for regime, m in info["memory_gib"].items():
        print(f"model-state memory, {regime}: weights {m['weights']:.2f} GiB, grads {m['grads']:.2f} GiB, "
              f"optimizer states {m['optimizer_states']:.2f} GiB, total {m['total']:.2f} GiB")
    return 0
