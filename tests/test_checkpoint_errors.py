"""Bad input (another architecture, vocabulary or hidden size, a missing shard, a corrupted or unsafe
file: one clear error each, naming the tensor or file), and the single-process building blocks."""

import json
import math
import os
import pickle

import pytest
import torch

from megazoo.core.checkpoint import (AsyncCheckpointer, CheckpointError, PerRank, Sharded, ShardSpec, architecture,
                                     find_latest, list_checkpoints, load_checkpoint, load_full_model_state,
                                     model_state, resolve_resume, save_checkpoint, save_full_model_state)
from megazoo.core.checkpoint.spec import flat_boxes, pieces
from megazoo.core.checkpoint.storage import crc32_file
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.gather import full_state
from megazoo.zoo.gpt import TINY, GPTModel

CTX = ParallelContext(device=torch.device("cpu"))


def _model(layout="gpt-tiny", seed=1, **kw):
    return GPTModel(TINY[layout](**kw), CTX).initialize(seed)


def _save(root, layout="gpt-tiny", step=1, **kw):
    m = _model(layout, **kw)
    meta = architecture("gpt", m.cfg.to_dict())
    return save_checkpoint(root, step, {"model": model_state(m, CTX), "step": step}, CTX, meta), m


def _load(path, layout="gpt-tiny", expect=True, **kw):
    m = _model(layout, seed=2, **kw)
    exp = architecture("gpt", m.cfg.to_dict()) if expect else None
    return load_checkpoint(path, {"model": model_state(m, CTX), "step": 0}, CTX, expect=exp), m


# --- bad input --------------------------------------------------------------------------------
def test_other_architecture(tmp_path):
    path, _ = _save(tmp_path)
    with pytest.raises(CheckpointError, match=r"saved for another model: .*model\.norm='layernorm' there, model\.norm='rmsnorm' in this run"):
        _load(path, "llama-tiny")
    meta = json.loads((path / "meta.json").read_text())
    with pytest.raises(CheckpointError, match=r"arch='gpt' there, arch='bert' in this run"):
        load_checkpoint(path, {}, CTX, expect={"arch": "bert"})
    assert meta["meta"]["arch"] == "gpt"


def test_other_vocab_or_hidden_size(tmp_path):
    path, _ = _save(tmp_path)
    with pytest.raises(CheckpointError, match=r"model\.vocab_size=300 there, model\.vocab_size=320 in this run. Load a checkpoint of this model, or set model\.vocab_size to match"):
        _load(path, vocab_size=320)
    # without metadata to compare, the tensor shapes still catch it, naming the tensor
    with pytest.raises(CheckpointError, match=r"tensor 'model/embed\.weight'.*shape \[300, 64\].*expects \[320, 64\]"):
        _load(path, expect=False, vocab_size=320)
    with pytest.raises(CheckpointError, match=r"model\.hidden_size=64 there, model\.hidden_size=128 in this run"):
        _load(path, hidden_size=128)
    with pytest.raises(CheckpointError, match=r"tensor 'model/(pos_)?embed(\.weight)?': checkpoint .* holds shape \[\d+, 64\], this run expects \[\d+, 128\]"):
        _load(path, expect=False, hidden_size=128)


def test_other_depth(tmp_path):
    path, _ = _save(tmp_path, num_layers=3)
    with pytest.raises(CheckpointError, match=r"holds tensor 'model/layers\.2\..*' that this run does not have"):
        _load(path, expect=False, num_layers=2)
    with pytest.raises(CheckpointError, match=r"has no tensor 'model/layers\.3\."):
        _load(path, expect=False, num_layers=4)


def test_missing_shard(tmp_path):
    path, _ = _save(tmp_path)
    os.remove(path / "__0_0.distcp")
    with pytest.raises(CheckpointError, match=r"shard file __0_0\.distcp is missing"):
        _load(path)


def test_corrupted_and_truncated_files(tmp_path):
    path, _ = _save(tmp_path)
    shard = path / "__0_0.distcp"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"file __0_0\.distcp is corrupted \(crc32"):
        _load(path)
    shard.write_bytes(bytes(data[:100]))
    with pytest.raises(CheckpointError, match=r"file __0_0\.distcp has 100 bytes, expected \d+ \(truncated"):
        _load(path)


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_unsafe_metadata_is_refused(tmp_path):
    path, _ = _save(tmp_path)
    md = path / ".metadata"
    md.write_bytes(pickle.dumps(_Evil()))
    meta = json.loads((path / "meta.json").read_text())  # a forger who also fixes the manifest
    meta["files"][".metadata"] = {"bytes": md.stat().st_size, "crc32": crc32_file(md)}
    (path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"\.metadata cannot be read safely: refusing to unpickle (posix|os)\.system"):
        _load(path)


def test_not_a_checkpoint(tmp_path):
    with pytest.raises(CheckpointError, match="holds no complete checkpoint"):
        load_checkpoint(tmp_path, {}, CTX)
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "nope", {}, CTX)
    with pytest.raises(FileNotFoundError, match="no complete checkpoint"):
        resolve_resume(tmp_path, tmp_path)
    assert resolve_resume(tmp_path, "auto") is None and resolve_resume(tmp_path, "none") is None


def test_unstorable_value(tmp_path):
    with pytest.raises(TypeError, match=r"checkpoint state opt/fn: cannot store a builtin_function_or_method; use tensors"):
        save_checkpoint(tmp_path, 1, {"opt": {"fn": len}}, CTX)
    assert list(tmp_path.iterdir()) == []


# --- building blocks --------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5, 7), (3, 4, 6), (10,), (2, 1, 3, 2)])
def test_flat_ranges_cut_into_boxes(shape):
    full = torch.arange(math.prod(shape)).view(shape)
    flat = full.reshape(-1)
    n = flat.numel()
    for a in range(0, n + 1, max(1, n // 7)):
        for b in range(a, n + 1, max(1, n // 5)):
            got = torch.full(shape, -1)
            for p in pieces(flat[a:b].clone(), ShardSpec(shape, (0,) * len(shape), shape, (a, b))):
                got[tuple(slice(o, o + s) for o, s in zip(p.offsets, p.sizes))] = p.view
            want = torch.full((n,), -1)
            want[a:b] = flat[a:b]
            assert torch.equal(got.reshape(-1), want), (shape, a, b)
            assert len(flat_boxes(shape, a, b)) <= 2 * len(shape) - 1


def test_padding_rows_are_not_stored():
    local = torch.arange(12.0).view(6, 2)  # rows 4.. of a 10-row table, of which 8 are real
    (p,) = pieces(local, ShardSpec((8, 2), (4, 0)))
    assert p.sizes == (4, 2) and torch.equal(p.view, local[:4])
    assert pieces(local, ShardSpec((8, 2), (8, 0))) == []  # a shard that is all padding


def test_round_trip_values_and_retention(tmp_path):
    st = {"t": torch.arange(5.0), "cfg": {"lr": 0.1, "sched": [1, 2.5, None], "empty": {}},
          "r": PerRank({"x": torch.ones(2), "n": 7})}
    for step in (1, 2, 3):
        save_checkpoint(tmp_path, step, st, CTX, {"step": step}, keep=2)
    assert [s for s, _ in list_checkpoints(tmp_path)] == [2, 3]
    tmpl = {"t": torch.zeros(5), "cfg": {"lr": 0.0, "sched": [], "empty": {}}, "r": PerRank({"x": torch.zeros(2), "n": 0})}
    out, info = load_checkpoint(tmp_path, tmpl, CTX)
    assert info["step"] == 3 and info["per_rank_restored"]
    assert out["cfg"] == {"lr": 0.1, "sched": [1, 2.5, None], "empty": {}} and out["r"].value["n"] == 7
    assert torch.equal(tmpl["t"], torch.arange(5.0)) and torch.equal(tmpl["r"].value["x"], torch.ones(2))


def test_async_save_and_full_model_state(tmp_path):
    m = _model("llama-tiny")
    saver = AsyncCheckpointer(CTX)
    saver.save(tmp_path / "a", 4, {"model": model_state(m, CTX)}, {"arch": "gpt"})
    ref = {k: v.clone() for k, v in full_state(m, CTX).items()}
    with torch.no_grad():
        for p in m.parameters():
            p.add_(1.0)  # training goes on: the save holds a snapshot
    assert saver.close() == find_latest(tmp_path / "a")
    info, full = load_full_model_state(tmp_path / "a")
    assert info["step"] == 4 and info["meta"] == {"arch": "gpt"} and set(full) == set(ref)
    assert all(torch.equal(full[k], ref[k]) for k in ref)
    # and back: full weights -> a checkpoint any layout loads
    path = save_full_model_state(tmp_path / "b", full, {"arch": "gpt"}, extra={"step": 0})
    m2 = _model("llama-tiny", seed=5)
    load_checkpoint(path, {"model": model_state(m2, CTX)}, CTX)
    assert all(torch.equal(v, ref[k]) for k, v in full_state(m2, CTX).items())


def test_sharded_leaf_checks_its_shape():
    with pytest.raises(ValueError, match="must be 1-D with 4 elements"):
        pieces(torch.zeros(2, 2), ShardSpec((4, 4), (0, 0), (4, 4), (0, 4)))
    with pytest.raises(ValueError, match="offsets"):
        Sharded(torch.zeros(2), ShardSpec((4,), (0, 0)))


def test_model_chunks_share_one_namespace(tmp_path):
    """A rank's several chunks (virtual pipeline stages) store under global names: a whole model's
    checkpoint fills two chunks that split its layers."""
    whole = _model("llama-tiny", seed=3)
    path = save_checkpoint(tmp_path, 1, {"model": model_state(whole, CTX)}, CTX)
    cfg = TINY["llama-tiny"]()
    chunks = [GPTModel(cfg, CTX, pre_process=True, post_process=False, layers=(0, 1)).initialize(9),
              GPTModel(cfg, CTX, pre_process=False, post_process=True, layers=(1, 2)).initialize(9)]
    load_checkpoint(path, {"model": model_state(chunks, CTX)}, CTX)
    want = dict(whole.named_parameters())
    got = {k: v for c in chunks for k, v in c.named_parameters()}
    assert set(got) == set(want) and all(torch.equal(got[k], want[k]) for k in want)
