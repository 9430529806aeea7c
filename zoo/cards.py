"""Named model cards: one YAML file per model in zoo/cards/, loaded by name.

A card has the top-level keys name, arch (gpt | llama | bert | t5), description, paper, tokenizer
and model (num_layers, hidden_size, num_heads, num_kv_heads, ffn_hidden_size, vocab_size,
seq_length, position, norm, activation, tie_embeddings, bias, rope_theta, norm_eps; t5 adds
num_decoder_layers; bert cards may say post_norm).
"""

from __future__ import annotations

import difflib
from pathlib import Path

import yaml

from megazoo.core.plan.shapes import ModelShape
from megazoo.core.plan.traits import TRAITS, arch_traits

CARDS_DIR = Path(__file__).with_name("cards")
TOP_KEYS = ("name", "arch", "description", "paper", "tokenizer", "model")
MODEL_KEYS = ("num_layers", "hidden_size", "num_heads", "num_kv_heads", "ffn_hidden_size", "vocab_size",
              "seq_length", "position", "norm", "activation", "tie_embeddings", "bias", "rope_theta", "norm_eps")
OPTIONAL_MODEL_KEYS = ("num_decoder_layers", "post_norm", "kv_channels")


class CardError(ValueError):
    """An unknown or malformed model card."""


def list_cards() -> list[str]:
    """Names of the cards shipped with megazoo, sorted."""
    return sorted(p.stem for p in CARDS_DIR.glob("*.yaml"))


def _unknown(name: str) -> CardError:
    known = list_cards()
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return CardError(f"unknown model card {name!r}.{hint} Known cards: {', '.join(known)} "
                     "(or give the path of a card YAML file)")


def load_card(name: str) -> dict:
    """The card called `name` (or the card at a YAML path), checked against the schema."""
    path = Path(name)
    if not (path.suffix in (".yaml", ".yml") and path.is_file()):
        path = CARDS_DIR / f"{name}.yaml"
        if not path.is_file():
            raise _unknown(str(name))
    try:
        with open(path, encoding="utf-8") as f:
            card = yaml.safe_load(f)
    except yaml.YAMLError as e:
        from megazoo.core.train.user_errors import yaml_message

        raise CardError(yaml_message(path, e)) from None
    except UnicodeDecodeError:
        raise CardError(f"{path}: not a text file (a card is UTF-8 YAML)") from None
    validate_card(card, str(path))
    return card


def validate_card(card: dict, where: str = "card") -> None:
    if not isinstance(card, dict):
        raise CardError(f"{where}: a card is a mapping with keys {', '.join(TOP_KEYS)}")
    missing = [k for k in TOP_KEYS if k not in card]
    extra = [k for k in card if k not in TOP_KEYS]
    if missing or extra:
        raise CardError(f"{where}: missing keys {missing}, unexpected keys {extra}; a card has exactly "
                        f"{', '.join(TOP_KEYS)}")
    if not isinstance(card["arch"], str) or card["arch"] not in TRAITS:
        raise CardError(f"{where}: arch {card['arch']!r} is not one of {', '.join(TRAITS)}")
    model = card["model"]
    if not isinstance(model, dict):
        raise CardError(f"{where}: model must be a mapping")
    missing = [k for k in MODEL_KEYS if k not in model]
    extra = [k for k in model if k not in MODEL_KEYS + OPTIONAL_MODEL_KEYS]
    if missing or extra:
        raise CardError(f"{where}: model is missing {missing} / has unexpected {extra}")
    if arch_traits(card["arch"]).encoder_decoder and "num_decoder_layers" not in model:
        raise CardError(f"{where}: a {card['arch']} card needs model.num_decoder_layers")


def card_shape(card: dict | str) -> ModelShape:
    """The planner's view of a card (name or loaded dict)."""
    if isinstance(card, str):
        card = load_card(card)
    m = card["model"]
    shape = ModelShape(
        num_layers=int(m["num_layers"]), hidden_size=int(m["hidden_size"]), num_heads=int(m["num_heads"]),
        ffn_hidden_size=int(m["ffn_hidden_size"]), vocab_size=int(m["vocab_size"]),
        seq_length=int(m["seq_length"]), num_kv_heads=int(m["num_kv_heads"] or m["num_heads"]),
        kv_channels=m.get("kv_channels"), activation=m["activation"], tie_embeddings=bool(m["tie_embeddings"]),
        arch=card["arch"], position=m["position"], norm=m["norm"], bias=bool(m["bias"]),
        num_decoder_layers=int(m.get("num_decoder_layers") or 0),
        dropout=arch_traits(card["arch"]).dropout,  # Llama-style models train without dropout
        name=card["name"],
    )
    shape.validate()
    return shape
