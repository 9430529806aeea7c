"""`megazoo import-hf` / `export-hf` and their bad input: unsupported model types, missing,
mismatched and unexpected tensors, layouts that do not divide the model, head padding."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from megazoo.cli import main
from megazoo.zoo.bert import TINY as BERT_TINY
from megazoo.zoo.hf import (HFExportError, HFImportError, LayoutError, check_layout, convert_from_hf, export_hf,
                            import_hf, pad_heads, unpad_heads)
from megazoo.zoo.io import CheckpointError, load_model
from tests.zoo_hf_cases import ODD, hf_model, hf_outputs, max_err, mz_outputs


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("llama")
    hf_model("llama").save_pretrained(d)
    return d


def edited_copy(src, dst, edit):
    dst.mkdir()
    (dst / "config.json").write_text((src / "config.json").read_text())
    state = load_file(str(src / "model.safetensors"))
    edit(state)
    save_file(state, str(dst / "model.safetensors"))
    return dst


def test_unsupported_model_type_lists_supported(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt_neox", "hidden_size": 8}))
    with pytest.raises(HFImportError, match=r"unsupported model_type 'gpt_neox'.*bert, gpt2, llama, megatron-bert, mixtral, t5"):
        convert_from_hf(tmp_path)
    # the output beside the input folder: inside it is refused by the output policy (core/fs/policy.py)
    assert main(["import-hf", str(tmp_path), str(tmp_path.parent / f"{tmp_path.name}-out")]) == 2
    assert "unsupported model_type 'gpt_neox'" in capsys.readouterr().err
    assert not (tmp_path.parent / f"{tmp_path.name}-out").exists()


def test_missing_mismatched_and_unexpected_tensors_are_named(llama_dir, tmp_path):
    missing = edited_copy(llama_dir, tmp_path / "missing", lambda s: s.pop("model.layers.1.mlp.up_proj.weight"))
    with pytest.raises(HFImportError, match=r"missing tensors: model\.layers\.1\.mlp\.up_proj\.weight"):
        convert_from_hf(missing)

    def shrink(s):
        s["model.layers.0.mlp.down_proj.weight"] = s["model.layers.0.mlp.down_proj.weight"][:, :90].contiguous()
    bad = edited_copy(llama_dir, tmp_path / "mismatched", shrink)
    with pytest.raises(HFImportError, match=r"mismatched tensors: model\.layers\.0\.mlp\.down_proj\.weight .*\(64, 90\).*\(64, 96\)"):
        convert_from_hf(bad)

    def extra(s):
        s["model.layers.0.self_attn.extra.weight"] = torch.zeros(2)
    with pytest.raises(HFImportError, match=r"unexpected tensors: model\.layers\.0\.self_attn\.extra\.weight"):
        convert_from_hf(edited_copy(llama_dir, tmp_path / "extra", extra))


def test_layouts_that_do_not_divide_the_model(llama_dir, tmp_path, capsys):
    assert main(["import-hf", str(llama_dir), str(tmp_path / "a"), "--set", "parallel.tp=3"]) == 2
    assert "tensor parallelism tp=3 must divide num_heads=8, num_kv_heads=4" in capsys.readouterr().err
    assert main(["import-hf", str(llama_dir), str(tmp_path / "b"), "--set", "parallel.pp=3"]) == 2
    assert "pipeline parallelism pp=3 must divide num_layers=2" in capsys.readouterr().err
    assert main(["import-hf", str(llama_dir), str(tmp_path / "c"), "--set", "parallel.tpp=2"]) == 2
    assert "unknown key 'parallel.tpp' for import-hf; did you mean parallel.tp?" in capsys.readouterr().err
    assert not any((tmp_path / n).exists() for n in "abc")
    with pytest.raises(LayoutError, match="T5 does not support pipeline parallelism"):
        from megazoo.zoo.t5 import TINY
        check_layout("t5", TINY["t5-tiny"](), 1, 2)


def test_import_export_commands_round_trip(llama_dir, tmp_path, capsys):
    assert main(["import-hf", str(llama_dir), str(tmp_path / "ckpt"), "--set", "parallel.tp=2", "parallel.pp=2"]) == 0
    arch, cfg, state = load_model(tmp_path / "ckpt")
    assert arch == "llama" and cfg["num_kv_heads"] == 4
    _, _, direct = convert_from_hf(llama_dir)
    assert all(torch.equal(state[k], direct[k]) for k in direct) and state.keys() == direct.keys()
    assert main(["export-hf", str(tmp_path / "ckpt"), str(tmp_path / "hf"), "--max-shard-size", "50KB"]) == 0
    assert (tmp_path / "hf" / "model.safetensors.index.json").exists()
    from transformers import AutoModelForCausalLM

    ref = hf_outputs("llama", hf_model("llama"))
    assert max_err(hf_outputs("llama", AutoModelForCausalLM.from_pretrained(tmp_path / "hf")), ref) <= 1e-5
    # an existing folder is never half-overwritten
    assert main(["export-hf", str(tmp_path / "ckpt"), str(tmp_path / "hf")]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert main(["export-hf", str(tmp_path / "nothing"), str(tmp_path / "x")]) == 2
    assert "not a megazoo model checkpoint" in capsys.readouterr().err
    with pytest.raises(CheckpointError):
        load_model(tmp_path / "hf")


def test_head_padding_keeps_outputs_and_round_trips(tmp_path, capsys):
    hf = hf_model(ODD)
    hf.save_pretrained(tmp_path / "odd")
    ref = hf_outputs(ODD, hf)
    assert max_err(mz_outputs(ODD, import_hf(hf, pad_heads=True)), ref) <= 1e-5  # tp=1: nothing to pad
    arch, cfg, state = convert_from_hf(hf)
    pcfg, pstate = pad_heads(arch, cfg, state, 2)
    assert (pcfg.num_heads, pcfg.num_kv_heads) == (8, 4)
    from megazoo.zoo.hf import build_model, load_full_state

    assert max_err(mz_outputs(ODD, load_full_state(build_model(arch, pcfg), pstate).eval()), ref) <= 1e-6
    ucfg, ustate = unpad_heads(arch, pcfg, pstate, 3)
    assert ucfg == cfg and all(torch.equal(ustate[k], state[k]) for k in state)
    assert main(["import-hf", str(tmp_path / "odd"), str(tmp_path / "x"), "--set", "parallel.tp=2"]) == 2
    assert "--pad-heads" in capsys.readouterr().err
    assert main(["import-hf", str(tmp_path / "odd"), str(tmp_path / "ckpt"), "--set", "parallel.tp=2", "--pad-heads"]) == 0
    assert main(["export-hf", str(tmp_path / "ckpt"), str(tmp_path / "hf")]) == 0
    from transformers import AutoModelForCausalLM

    back = AutoModelForCausalLM.from_pretrained(tmp_path / "hf")
    assert back.config.num_attention_heads == 6 and max_err(hf_outputs(ODD, back), ref) <= 1e-5


def test_megatron_pre_ln_bert_exports_as_megatron_bert(tmp_path):
    """Megatron's pre-LN BERT becomes HF's MegatronBertForPreTraining (AutoModelForPreTraining
    loads it with the same outputs); a BERT neither HF class can express is refused, naming why."""
    import transformers as T

    from megazoo.core.parallel.context import ParallelContext
    from megazoo.core.parallel.gather import full_state
    from megazoo.zoo.bert import BertModel

    cfg = BERT_TINY["bert-tiny"]()
    model = BertModel(cfg).initialize(0).eval()
    state = full_state(model, ParallelContext.single())
    out = export_hf(tmp_path / "out", "bert", cfg, state)
    back = T.AutoModelForPreTraining.from_pretrained(out).eval()
    assert type(back).__name__ == "MegatronBertForPreTraining"
    ids = torch.randint(3, cfg.vocab_size, (2, 10), generator=torch.Generator().manual_seed(1))
    types = (torch.arange(10) >= 5).long().expand(2, 10)
    with torch.no_grad():
        mine, theirs = model(ids, None, types), back(input_ids=ids, token_type_ids=types)
    torch.testing.assert_close(theirs.prediction_logits, mine.lm_logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(theirs.seq_relationship_logits, mine.binary_logits, rtol=0, atol=1e-5)
    rms = BERT_TINY["bert-tiny"](norm="rmsnorm")
    rms_state = full_state(BertModel(rms).initialize(0), ParallelContext.single())
    with pytest.raises(HFExportError, match=r"no Hugging Face MegatronBertModel equivalent.*pre-LN.*LayerNorm"):
        export_hf(tmp_path / "rms", "bert", rms, rms_state)
    assert not (tmp_path / "rms").exists()
