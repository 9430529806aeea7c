"""Every HF architecture: a tiny random transformers model imported into megazoo gives the same
outputs (fp32, 1e-5) at TP=1, TP=2 (with and without sp) and, for decoders and BERT, PP=2; the
export loads back into transformers with the same outputs; state dicts survive bit for bit.
The fine-tuned BERTs (sequence, token, span, multiple-choice heads) reload through transformers'
Auto classes, as a user would."""

from __future__ import annotations

import pytest
import torch
import transformers

from megazoo.core.parallel.launch import spawn
from megazoo.zoo.hf import build_model, convert_from_hf, convert_to_hf, export_hf, import_hf, load_full_state
from megazoo.zoo.hf import HFExportError, HFImportError, pad_heads
from tests.zoo_hf_cases import (CASES, DECODERS, ODD, TASKS, hf_model, hf_outputs, max_err, mz_outputs,
                                pipeline_outputs, tp_rank_cases)

TOL = 1e-5


@pytest.fixture(scope="module")
def hf(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    models, refs, folders = {}, {}, {}
    for name in CASES:
        models[name] = hf_model(name)
        refs[name] = hf_outputs(name, models[name])
        folders[name] = str(root / name)
        models[name].save_pretrained(folders[name])
    return models, refs, folders


def reload(models, name, folder):
    if name in TASKS:  # the Auto class must pick the head's class from the exported config
        hf_class, auto = TASKS[name]
        model = getattr(transformers, auto).from_pretrained(folder).eval()
        assert type(model).__name__ == hf_class
        return model
    return type(models[name]).from_pretrained(folder).eval()


@pytest.mark.parametrize("name", CASES)
def test_import_matches_transformers(name, hf):
    models, refs, folders = hf
    for src in (folders[name], models[name]):  # a folder on disk, or a model in memory
        err = max_err(mz_outputs(name, import_hf(src)), refs[name])
        assert err <= TOL, f"{name}: {err:.2e}"


@pytest.mark.parametrize("name", DECODERS + ("bert", "bert-megatron") + tuple(TASKS))
def test_two_pipeline_stages_match(name, hf):
    models, refs, folders = hf
    arch, cfg, state = convert_from_hf(folders[name])
    stages = [build_model(arch, cfg, pre_process=True, post_process=False, layers=(0, 1)),
              build_model(arch, cfg, pre_process=False, post_process=True, layers=(1, 2))]
    for s in stages:
        load_full_state(s, state).eval()
    err = max_err(pipeline_outputs(name, stages), refs[name])
    assert err <= TOL, f"{name} pp=2: {err:.2e}"


@pytest.mark.parametrize("name", CASES)
def test_export_round_trip(name, hf, tmp_path):
    models, refs, folders = hf
    arch, cfg, state = convert_from_hf(folders[name])
    original = {k: v for k, v in models[name].state_dict().items()}
    _, hf_state = convert_to_hf(arch, cfg, state)
    for k, v in hf_state.items():  # HF -> megazoo -> HF: bit for bit
        key = k if k in original else (("bert." + k) if ("bert." + k) in original else k)
        assert torch.equal(v, original[key]), f"{name}: {k} changed in the round trip"
    out = export_hf(tmp_path / "out", arch, cfg, state, tokenizer=folders[name], max_shard_size="40KB")
    assert (out / "config.json").exists() and (out / "model.safetensors.index.json").exists()
    err = max_err(hf_outputs(name, reload(models, name, out)), refs[name])
    assert err <= TOL, f"{name} export -> from_pretrained: {err:.2e}"
    arch2, cfg2, state2 = convert_from_hf(out)  # megazoo -> HF -> megazoo: bit for bit
    assert (arch2, cfg2) == (arch, cfg)
    assert state2.keys() == state.keys()
    for k in state:
        assert torch.equal(state2[k], state[k]), f"{name}: {k} changed in the round trip"


def test_tp2_sp_pp2_and_export_from_those_layouts(hf, tmp_path):
    models, refs, folders = hf
    converted = {name: convert_from_hf(folders[name]) for name in CASES}
    odd = hf_model(ODD)  # tp=2 does not divide its 3 KV groups: padded to 4 with zero heads
    refs = {**refs, ODD: hf_outputs(ODD, odd)}
    arch, cfg, state = convert_from_hf(odd)
    results = spawn(tp_rank_cases, 2, {**converted, ODD: (arch, *pad_heads(arch, cfg, state, 2))}, timeout=400)
    for rank, (per_rank, _) in enumerate(results):
        for (name, layout, sp), got in per_rank.items():
            err = max_err(got, refs[name])
            assert err <= TOL, f"{name} {layout} sp={sp} rank {rank}: {err:.2e}"
    assert {(n, "pp2", False) for n in DECODERS + ("bert", "bert-base") + tuple(TASKS)} <= set(results[1][0])
    assert (ODD, "tp2", True) in results[0][0]
    for (name, layout), state in results[0][1].items():
        if name == ODD:
            continue
        arch, cfg, reference_state = converted[name]
        assert state.keys() == reference_state.keys(), f"{name} {layout}"
        assert all(torch.equal(state[k], reference_state[k]) for k in state), f"{name} gathered from {layout}"
        folder = export_hf(tmp_path / f"{name}-{layout}", arch, cfg, state)
        err = max_err(hf_outputs(name, reload(models, name, folder)), refs[name])
        assert err <= TOL, f"{name} exported from {layout}: {err:.2e}"


def test_task_head_import_and_export_errors(hf, tmp_path):
    """A classifier with a pooler whose config does not say which head it is; a task head kept
    beside the masked-LM head (no HF class has both)."""
    import json

    models, _, folders = hf
    folder = tmp_path / "seq"
    models["bert-seq"].save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    config.pop("architectures")
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(HFImportError, match="BertForSequenceClassification.*BertForMultipleChoice"):
        convert_from_hf(folder)
    arch, cfg, state = convert_from_hf(folders["bert-choice"])
    cfg.add_lm_head = True
    with pytest.raises(HFExportError, match="add_lm_head=false"):
        convert_to_hf(arch, cfg, state)
