"""Mixtral import and export: a tiny random MixtralForCausalLM imported into megazoo gives the same
logits (fp32, 1e-5), from memory and from a folder; the export loads back into transformers with the
same logits and the same tensors; an older per-expert folder layout is read too."""

import pytest
import torch
from transformers import MixtralConfig, MixtralForCausalLM

from megazoo.zoo.hf import HFExportError, HFImportError, convert_from_hf, export_hf, import_hf
from megazoo.zoo.hf import mixtral

TOL = 1e-5


def tiny(**kw) -> MixtralForCausalLM:
    torch.manual_seed(0)
    cfg = MixtralConfig(**{**dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                  num_attention_heads=8, num_key_value_heads=4, num_local_experts=4,
                                  num_experts_per_tok=2, max_position_embeddings=64, rope_theta=10000.0,
                                  tie_word_embeddings=False), **kw})
    model = MixtralForCausalLM(cfg).eval()
    with torch.no_grad():  # transformers initialises the experts to zeros; give them real values
        for p in model.parameters():
            p.normal_(0, 0.05)
    return model


@pytest.fixture(scope="module")
def hf():
    model = tiny()
    ids = torch.randint(0, 300, (2, 24), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = model(ids).logits
    return model, ids, ref


def test_import_and_export_round_trip(hf, tmp_path):
    model, ids, ref = hf
    model.save_pretrained(tmp_path / "hf")
    for src in (model, tmp_path / "hf"):
        mz = import_hf(src)
        assert mz.cfg.moe.num_experts == 4 and mz.cfg.moe.top_k == 2
        with torch.no_grad():
            err = (mz(ids) - ref).abs().max().item()
        assert err <= TOL, f"import from {type(src).__name__}: {err:.2e}"
    arch, cfg, state = convert_from_hf(model)
    export_hf(tmp_path / "out", arch, cfg, state)
    back = MixtralForCausalLM.from_pretrained(tmp_path / "out").eval()
    with torch.no_grad():
        assert (back(ids).logits - ref).abs().max().item() <= TOL
    original = model.state_dict()
    for key, t in back.state_dict().items():
        assert torch.equal(t, original[key]), key


def test_older_per_expert_layout_is_read(hf):
    model, ids, ref = hf
    state = {}
    for key, t in model.state_dict().items():
        if key.endswith("mlp.experts.gate_up_proj"):
            layer = key[:-len("mlp.experts.gate_up_proj")]
            gate, up = t.chunk(2, dim=1)
            for e in range(t.shape[0]):
                state[f"{layer}block_sparse_moe.experts.{e}.w1.weight"] = gate[e]
                state[f"{layer}block_sparse_moe.experts.{e}.w3.weight"] = up[e]
        elif key.endswith("mlp.experts.down_proj"):
            layer = key[:-len("mlp.experts.down_proj")]
            for e in range(t.shape[0]):
                state[f"{layer}block_sparse_moe.experts.{e}.w2.weight"] = t[e]
        else:
            state[key.replace("mlp.gate.", "block_sparse_moe.gate.")] = t
    assert mixtral.import_state(state).keys() == mixtral.import_state(model.state_dict()).keys()
    for key, t in mixtral.import_state(state).items():
        assert torch.equal(t, mixtral.import_state(model.state_dict())[key]), key


def test_unsupported_settings_are_named():
    with pytest.raises(HFImportError, match="sliding_window=16 is not supported"):
        convert_from_hf(tiny(sliding_window=16))
    arch, cfg, state = convert_from_hf(tiny())
    cfg.moe.every = 2
    with pytest.raises(HFExportError, match="model.moe.every=1"):
        mixtral.config_to_hf(cfg)
