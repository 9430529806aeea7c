"""Parameter-efficient training: bottleneck adapters (identity at init, tp/sp parity) and
`train.trainable` (frozen weights bit-equal after training at dp2 ZeRO in fp32 and bf16, at tp2 and
at pp2), adapter checkpoints resharded to one process, export-hf with adapters.safetensors, and
the error for patterns that match nothing. One two-rank spawn runs every multi-process case."""

from __future__ import annotations

import pytest
import torch

from megazoo.core.checkpoint import named_parameters
from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.core.parallel.gather import full_state
from megazoo.core.parallel.init import local_slice, master_shape, master_tensor
from megazoo.core.parallel.launch import spawn
from megazoo.core.train import Trainer
from megazoo.core.train.config import ConfigError
from megazoo.zoo.gpt import TINY, GPTModel
from tests.parity import batch
from tests.train_cases import one_thread, tiny

ADAPTER = ["model.adapter_size=16", "train.trainable=*adapter*", "train.steps=3"]
SEED = 1234


def _ids() -> torch.Tensor:
    return batch(seed=3, b=2, s=32)[0]


@torch.no_grad()
def _perturb_adapters(model, ctx: ParallelContext) -> None:
    """Give the adapters non-zero weights, drawn in full and sliced (so every layout agrees)."""
    for name, p in model.named_parameters():
        if "adapter" in name:
            full = master_tensor(name, master_shape(p, ctx.tp), ("normal", 0.05), SEED)
            p.copy_(local_slice(full, p, ctx.tp, ctx.tp_rank))


def _forward_backward(ctx: ParallelContext) -> dict:
    model = GPTModel(TINY["gpt-tiny"](adapter_size=16), ctx).initialize(SEED)
    _perturb_adapters(model, ctx)
    ids, labels = batch()
    per_token = model(ids, labels=labels)
    (per_token.sum() / (labels != -100).sum()).backward()
    return {"loss": per_token.detach().sum(), "grads": full_state(model, ctx, grads=True)}


def _snapshot(trainer) -> dict:
    return {n: p.detach().clone() for n, p in named_parameters(trainer.chunks).items()}


def _train(cfg) -> dict:
    """Fit; report which stored tensors changed, the dtypes and what the optimizer holds."""
    trainer = Trainer(cfg)
    try:
        before = _snapshot(trainer)  # after the optimizer cast the model to its compute dtype
        names = {id(p): n for n, p in named_parameters(trainer.chunks).items()}
        updated = sorted({names[id(f.param)] for f in trainer.optimizer.fragments})
        trainer.fit()
        after = _snapshot(trainer)
        out = {"changed": sorted(n for n in before if not torch.equal(before[n], after[n])),
               "names": sorted(before), "dtypes": {str(p.dtype) for p in after.values()}, "updated": updated,
               "trainable": sorted(n for n, p in named_parameters(trainer.chunks).items() if p.requires_grad),
               "frozen_equal": all(torch.equal(before[n], after[n]) for n in before if "adapter" not in n)}
        if trainer.ctx.pp == 1:  # full logits of the trained model, for the reload checks
            (model,) = trainer.chunks
            model.eval()
            with torch.no_grad():
                out["logits"] = model(_ids()).float()
            out["full"] = full_state(model, trainer.ctx)
        return out
    finally:
        trainer.close()


def _ranks(root: str) -> dict:
    """Rank function (world 2): every multi-process case of this file."""
    torch.manual_seed(0)
    out = {"tp2 sp": _forward_backward(ParallelContext.build(ParallelConfig(tp=2, sp=True)))}
    for dtype in ("fp32", "bf16"):
        out[f"dp2 zero {dtype}"] = _train(tiny(f"{root}/zero-{dtype}", *ADAPTER, f"precision.dtype={dtype}",
                                               "optim.distributed=true", "checkpoint.save=true"))
    out["tp2 sp"]["train"] = _train(tiny(f"{root}/tp2", *ADAPTER, "parallel.tp=2", "parallel.sp=true",
                                         "checkpoint.save=true"))
    # the first stage holds nothing to train (its output gets no gradient); the tied embedding
    # pair is frozen on both stages together
    out["pp2"] = _train(tiny(f"{root}/pp2", "parallel.pp=2", "train.trainable=[layers.1.*]", "train.steps=3",
                             "precision.dtype=bf16"))
    try:
        Trainer(tiny(f"{root}/bad", *ADAPTER, "parallel.pp=2", "train.trainable=[*adapter*, adapter2]"))
    except ConfigError as e:
        out["error"] = str(e)
    return out


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    root = tmp_path_factory.mktemp("adapters")
    return root, spawn(_ranks, 2, str(root))


def test_fresh_adapters_are_the_identity():
    from megazoo.zoo.bert import TINY as BERT_TINY
    from megazoo.zoo.bert import BertModel

    ids = _ids()
    with torch.no_grad():
        plain = GPTModel(TINY["llama-tiny"]()).initialize(SEED).eval()
        adapted = GPTModel(TINY["llama-tiny"](adapter_size=8)).initialize(SEED).eval()
        assert torch.equal(plain(ids), adapted(ids))
        assert sum("adapter" in n for n, _ in adapted.named_parameters()) == 2 * 2 * 4  # 2 layers x 2 x (w, b) x 2
        for layout in ("bert-tiny", "bert-tiny-postln"):  # pre-LN and post-LN
            plain = BertModel(BERT_TINY[layout]()).initialize(SEED).eval()
            adapted = BertModel(BERT_TINY[layout](adapter_size=8)).initialize(SEED).eval()
            a, b = plain(ids), adapted(ids)
            assert torch.equal(a.lm_logits, b.lm_logits), layout
    with pytest.raises(ValueError, match="T5 does not take bottleneck adapters"):
        from megazoo.zoo.t5 import TINY as T5_TINY

        T5_TINY["t5-tiny"](adapter_size=8)
    with pytest.raises(ValueError, match="adapter_size=6"):
        TINY["gpt-tiny"](adapter_size=6).check_tensor_parallel(4)


def test_tp2_sp_adapters_match_one_process(ranks):
    _, results = ranks
    with one_thread():
        ref = _forward_backward(ParallelContext.single(torch.device("cpu")))
    for rank, got in enumerate(results):
        got = got["tp2 sp"]
        assert torch.allclose(got["loss"], ref["loss"], atol=1e-5), rank
        assert set(got["grads"]) == set(ref["grads"])
        for name, g in ref["grads"].items():
            assert (got["grads"][name] - g).abs().max() <= 1e-5, (rank, name)
        assert ref["grads"]["layers.1.adapter2.down.weight"].abs().sum() > 0


@pytest.mark.parametrize("case", ["dp2 zero fp32", "dp2 zero bf16", "tp2 sp"])
def test_only_adapters_train(ranks, case):
    _, results = ranks
    runs = [r[case] if case != "tp2 sp" else r[case]["train"] for r in results]
    # the optimizer holds (its ZeRO share of) the adapters and nothing else
    assert sorted({n for got in runs for n in got["updated"]}) == [n for n in runs[0]["names"] if "adapter" in n]
    for rank, got in enumerate(runs):
        adapters = [n for n in got["names"] if "adapter" in n]
        assert got["trainable"] == adapters and set(got["updated"]) <= set(adapters)
        assert got["frozen_equal"], (case, rank)
        assert any(n.endswith("up.weight") for n in got["changed"]) and set(got["changed"]) <= set(adapters)
        assert got["dtypes"] == {"torch.bfloat16" if "bf16" in case else "torch.float32"}


def test_pipeline_stage_with_nothing_to_train(ranks):
    _, results = ranks
    first, last = results[0]["pp2"], results[1]["pp2"]
    assert first["trainable"] == [] and first["changed"] == []  # embeddings and layer 0, all frozen
    assert last["trainable"] == last["updated"] == [n for n in last["names"] if n.startswith("layers.1.")]
    assert last["changed"] and all(n.startswith("layers.1.") for n in last["changed"])


def test_pattern_matching_nothing_fails_on_every_rank(ranks):
    _, results = ranks
    messages = {r["error"] for r in results}
    assert len(messages) == 1
    (msg,) = messages
    assert "'adapter2' match no parameter" in msg and '"*adapter2*"' in msg and "embed.weight" in msg


def test_tp2_checkpoint_loads_at_tp1(ranks, tmp_path):
    from megazoo.zoo.hf import build_model, config_from_dict, load_full_state
    from megazoo.zoo.io import load_model

    root, results = ranks
    trained = results[0]["tp2 sp"]["train"]
    arch, cfg, state = load_model(root / "tp2" / "checkpoints")
    assert cfg["adapter_size"] == 16 and any("adapter1" in k for k in state)
    model = load_full_state(build_model(arch, config_from_dict(arch, cfg)), state).eval()
    with torch.no_grad():
        assert (model(_ids()) - trained["logits"]).abs().max() <= 1e-5
    # the trainer resumes it at tp1 (model and the adapters' Adam state resharded)
    with one_thread():
        t = Trainer(tiny(tmp_path / "tp1", *ADAPTER, f"checkpoint.resume={root / 'tp2' / 'checkpoints'}"))
        try:
            assert t.step == 3
            for name, p in full_state(t.chunks[0], t.ctx).items():
                assert torch.equal(p, trained["full"][name]), name
        finally:
            t.close()


def test_zero_bf16_checkpoint_resumes_in_one_process(ranks, tmp_path):
    root, results = ranks
    trained = results[0]["dp2 zero bf16"]
    with one_thread():
        t = Trainer(tiny(tmp_path / "one", *ADAPTER, "precision.dtype=bf16", "train.steps=5",
                         f"checkpoint.resume={root / 'zero-bf16' / 'checkpoints'}"))
        try:
            assert t.step == 3
            for name, p in full_state(t.chunks[0], t.ctx).items():
                assert torch.equal(p, trained["full"][name]), name
            t.fit()  # and trains on with the frozen weights untouched
            for name, p in full_state(t.chunks[0], t.ctx).items():
                assert torch.equal(p, trained["full"][name]) == ("adapter" not in name), name
        finally:
            t.close()


@pytest.mark.parametrize("saved,now", [("bf16", "fp32"), ("fp32", "bf16")])
def test_checkpoint_resumes_in_another_precision(ranks, tmp_path, saved, now):
    """Frozen weights have no fp32 main copy: they load from the stored model, cast."""
    root, results = ranks
    trained = results[0][f"dp2 zero {saved}"]["full"]
    with one_thread():
        t = Trainer(tiny(tmp_path / now, *ADAPTER, f"precision.dtype={now}",
                         f"checkpoint.resume={root / f'zero-{saved}' / 'checkpoints'}"))
        try:
            dtype = torch.bfloat16 if now == "bf16" else torch.float32
            for name, p in full_state(t.chunks[0], t.ctx).items():
                if "adapter" in name:  # from the fp32 weights (main or model), rounded in a bf16 run
                    assert (p.float() - trained[name].float()).abs().max() <= 1e-2, name
                else:
                    assert torch.equal(p, trained[name].to(dtype)), name
        finally:
            t.close()


def test_export_lists_adapters_beside_the_hf_model(ranks, tmp_path, capsys):
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from megazoo.cli import main
    from megazoo.zoo.hf import build_model, config_from_dict, load_full_state, split_adapters
    from megazoo.zoo.io import load_model

    root, results = ranks
    ckpt = root / "tp2" / "checkpoints"
    assert main(["export-hf", str(ckpt), str(tmp_path / "hf")]) == 0
    out = capsys.readouterr().out
    assert "adapters.safetensors" in out and "adapter_size=16" in out
    state = load_model(ckpt)[2]
    adapters = load_file(str(tmp_path / "hf" / "adapters.safetensors"))
    assert sorted(adapters) == sorted(k for k in state if ".adapter" in k) and len(adapters) == 16
    for k, v in adapters.items():
        assert torch.equal(v, state[k])
    hf = AutoModelForCausalLM.from_pretrained(tmp_path / "hf").eval()
    # the HF model is the base model: the trained model with its adapters taken out
    arch, cfg, state = load_model(ckpt)
    base = build_model(arch, config_from_dict(arch, {**cfg, "adapter_size": 0}))
    load_full_state(base, split_adapters(state)[0]).eval()
    with torch.no_grad():
        assert (hf(_ids()).logits[..., :300] - base(_ids())).abs().max() <= 1e-4
