"""ZeRO-3's state: what a rank holds (measured bytes of weights and gradients, between steps and
inside a layer's forward), checkpoints across shardings and layouts (ZeRO-3 dp 4 -> ZeRO-1 tp 2 dp 2
-> ZeRO-3 again, and one process), a SIGKILLed ZeRO-3 run resuming bit for bit, bf16, padding of
buckets that do not split evenly (dp 3), optimizer offload, and the bad inputs' messages."""

import os
import signal

import pytest
import torch

from megazoo.core.parallel.launch import RankFailure, spawn
from megazoo.core.train import RunConfig, Trainer, checkpointing
from megazoo.core.train.errors import ConfigError
from megazoo.core.train.memory import offload_host_bytes
from tests.train_cases import metrics, one_thread, run_cases, tiny

FULL = "parallel.shard=full"


def _held(root: str) -> dict:
    """Bytes of weights/gradients this rank holds: total, after a step, inside layer 1's forward."""
    out = {}
    for mode in ("optimizer", "full"):
        trainer = Trainer(tiny(f"{root}/{mode}", f"parallel.shard={mode}", "train.global_batch=6",
                               "train.micro_batch=2"))
        buf = trainer.optimizer.buffers
        numel = sum(p.numel() for p in buf.params)
        inside = []
        if buf.weights is not None:
            layer = next(u for u in buf.weights.units if not u.root)
            layer.module.register_forward_hook(lambda *a: inside.append(buf.bytes_held()))
        first = trainer.train_step(trainer.train_data.step(0))
        after = buf.bytes_held()
        second = trainer.train_step(trainer.train_data.step(6))
        trainer.close()
        out[mode] = {"numel": numel, "after": after, "inside": inside, "losses": [first["loss"], second["loss"]],
                     "units": None if buf.weights is None else [len(u.params) for u in buf.weights.units],
                     "padded": buf.numel}
    return out


def test_zero3_holds_a_third_at_dp3_and_pads_uneven_buckets(tmp_path):
    ref = run_cases({"one": tiny(tmp_path / "one", "train.global_batch=6", "train.micro_batch=6",
                                 "train.steps=2")})["one"]
    results = spawn(_held, 3, str(tmp_path), timeout=600)
    for rank, got in enumerate(results):
        full, zero1 = got["full"], got["optimizer"]
        numel = full["numel"]
        assert full["padded"] > numel, "some bucket does not split into 3: it is padded"
        for mode in (full, zero1):  # both shardings train like one process on the same 6 sequences
            assert all(abs(a - b) <= 1e-5 for a, b in zip(mode["losses"], ref["losses"])), (mode["losses"], ref["losses"])
        # ZeRO-1 holds every weight (fp32) and every gradient; ZeRO-3 a third of each between steps
        assert zero1["after"]["weights"] >= 4 * numel
        assert full["after"]["weights"] <= 4 * numel / 3 * 1.05, full["after"]
        assert full["after"]["grads"] <= 4 * numel / 3 * 1.05, full["after"]
        assert zero1["after"]["grads"] >= 4 * numel
        # inside a layer's forward: its own slices, the root unit and at most two gathered layers
        inside = max(b["weights"] for b in full["inside"])
        assert 4 * numel / 3 < inside < 4 * numel, inside
        assert len(full["units"]) == 3  # the root (embeddings, final norm) and two layers


def _checkpoints(root: str) -> dict:
    """ZeRO-3 dp4 trains 2 steps and saves (a); ZeRO-1 tp2 dp2 loads a and saves it again (b);
    ZeRO-3 dp4 loads b. Each takes step 3."""
    def trainer(name, *layout, resume=None):
        cfg = tiny(f"{root}/{name}", "train.steps=3", "checkpoint.save=true", *layout)
        tr = Trainer(cfg)
        if resume:
            checkpointing.load(tr, resume)
        return tr

    def step(tr):
        loss = tr.train_step(tr.train_data.step(tr.consumed_samples))["loss"]
        return loss

    a = trainer("a", FULL)
    step(a), step(a)
    path_a = str(a.save())
    out = {"a": step(a), "path_a": path_a}
    a.close()
    b = trainer("b", "parallel.tp=2", "optim.distributed=true", resume=path_a)
    path_b = str(b.save())
    out["b"] = step(b)
    b.close()
    c = trainer("c", FULL, resume=path_b)
    out["c"] = step(c)
    c.close()
    return out


def test_checkpoints_move_between_zero3_zero1_and_one_process(tmp_path):
    results = spawn(_checkpoints, 4, str(tmp_path), timeout=600)
    ref = results[0]["a"]
    with one_thread():
        one = Trainer(tiny(tmp_path / "one", "train.steps=3"))
        checkpointing.load(one, results[0]["path_a"])
        single = one.train_step(one.train_data.step(one.consumed_samples))["loss"]
        one.close()
    for got in results:
        for key in ("a", "b", "c"):
            assert abs(got[key] - ref) <= 1e-6, (key, got[key], ref)
    assert abs(single - ref) <= 1e-6, (single, ref)


def _kill_run(root: str, name: str, kill: bool) -> list:
    original = Trainer.train_step

    def train_step(self, mbs):
        out = original(self, mbs)
        if kill and self.step == 5 and self.ctx.rank == 0:
            os.kill(os.getpid(), signal.SIGKILL)  # after step 5; the last checkpoint is step 4's
        return out
    Trainer.train_step = train_step
    try:
        with one_thread():
            cfg = tiny(f"{root}/{name}", FULL, "train.steps=6", "checkpoint.save=true", "checkpoint.interval=2",
                       "checkpoint.resume=auto", "model.dropout=0.1")
            trainer = Trainer(cfg)
            try:
                return trainer.fit()["losses"]
            finally:
                trainer.close()
    finally:
        Trainer.train_step = original


def _two_rank_cases(root: str) -> dict:
    """Every 2-rank run of this file in one spawn (each spawn imports torch again on every rank): the
    uninterrupted twin of the SIGKILLed run, the killed run resumed, bf16, offload and adapters."""
    return {"straight": _kill_run(root, "straight", False), "resumed": _kill_run(root, "killed", False),
            "bf16": _bf16(f"{root}/bf16"), "offload": _offload(f"{root}/offload"),
            "adapters": _adapters(f"{root}/adapters")}


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> tuple:
    """(folder, whether the SIGKILLed run failed, each rank's _two_rank_cases)."""
    root = tmp_path_factory.mktemp("two_ranks")
    try:
        spawn(_kill_run, 2, str(root), "killed", True, timeout=600, dist_timeout=60)
        killed = False
    except RankFailure:
        killed = True
    return root, killed, spawn(_two_rank_cases, 2, str(root), timeout=900)


def test_sigkilled_zero3_run_resumes_bit_for_bit(two_ranks):
    root, killed, results = two_ranks
    assert killed, "the run meant to be SIGKILLed after step 5 finished"
    straight = results[0]["straight"]
    logged = [r for r in metrics(root / "killed") if r.get("split", "train") == "train"]
    assert [r["step"] for r in logged] == [1, 2, 3, 4, 5, 6]
    assert [r["loss"] for r in logged] == straight  # bitwise


def _bf16(root: str) -> dict:
    return run_cases({m: tiny(f"{root}/{m}", f"parallel.shard={m}", "precision.dtype=bf16")
                      for m in ("optimizer", "full")})


def test_zero3_bf16_tracks_zero1_bf16(two_ranks):
    """bf16 with fp32 main weights: ZeRO-3 within the bf16 tolerance of tests/test_train_precision.py
    (0.05 on a loss near 6) of ZeRO-1 (the rounding of gathered bf16 weights is the same; the sums differ)."""
    for got in (r["bf16"] for r in two_ranks[2]):
        worst = max(abs(a - b) for a, b in zip(got["full"]["losses"], got["optimizer"]["losses"]))
        assert worst <= 0.05, worst
        assert got["full"]["losses"][-1] < got["full"]["losses"][0]


def _offload(root: str) -> dict:
    return run_cases({"offload": tiny(f"{root}/offload", FULL, "train.optimizer_offload=cpu"),
                      "device": tiny(f"{root}/device", FULL)})


def test_optimizer_offload_steps_in_host_memory_like_the_device(two_ranks, tmp_path):
    for got in (r["offload"] for r in two_ranks[2]):
        assert got["offload"]["losses"] == got["device"]["losses"]
    with one_thread():
        tr = Trainer(tiny(tmp_path / "one", "train.optimizer_offload=cpu", "precision.dtype=bf16"))
        opt = tr.optimizer
        assert opt.main_shard.device.type == "cpu" and opt.host_grads.device.type == "cpu"
        tr.train_step(tr.train_data.step(0))
        states = [t for s in opt.adam.state.values() for t in s.values() if torch.is_tensor(t) and t.dim() > 0]
        assert states and all(t.device.type == "cpu" for t in states)
        tr.close()


def test_offload_refused_without_host_memory(tmp_path, monkeypatch):
    monkeypatch.setenv("MEGAZOO_HOST_MEMORY_BYTES", "1000")
    with pytest.raises(ConfigError) as err:
        Trainer(tiny(tmp_path, "train.optimizer_offload=cpu"))
    message = str(err.value)
    assert "\n" not in message and "train.optimizer_offload=cpu needs" in message and "GiB" in message
    numel = 126_720
    assert f"{offload_host_bytes(numel, 1) / 2**30:.2f} GiB" in message


@pytest.mark.parametrize("override, words", [
    ("parallel.shard=everything", "parallel.shard must be one of none, optimizer, grads, full"),
    ("train.optimizer_offload=gpu", "train.optimizer_offload must be none or cpu"),
])
def test_bad_shard_settings_fail_in_one_line(tmp_path, override, words):
    cfg = RunConfig.load("gpt-tiny", [f"log.dir={tmp_path}", override])
    with pytest.raises(ConfigError) as err:
        cfg.validate(2)
    assert words in str(err.value) and "\n" not in str(err.value)


ADAPTER = ["model.adapter_size=16", "train.trainable=*adapter*", "train.steps=3"]


def _adapters(root: str) -> dict:
    out = {}
    for mode in ("optimizer", "full"):
        with one_thread():
            trainer = Trainer(tiny(f"{root}/{mode}", f"parallel.shard={mode}", *ADAPTER))
            with trainer.optimizer.gathered():  # ZeRO-3 holds slices between steps: gather to read them
                start = {n: p.detach().clone() for n, p in trainer.chunks[0].named_parameters()}
            buf = trainer.optimizer.buffers
            total = sum(p.numel() for p in trainer.chunks[0].parameters())
            losses = [trainer.train_step(trainer.train_data.step(trainer.consumed_samples))["loss"] for _ in range(3)]
            held = buf.bytes_held()["weights"]
            trainer.optimizer.unshard()
            end = {n: p.detach().clone() for n, p in trainer.chunks[0].named_parameters()}
            trainer.close()
        out[mode] = {"losses": losses, "held": held, "total": total, "start": start, "end": end}
    return out


def test_zero3_shards_frozen_weights_and_trains_adapters_like_zero1(two_ranks):
    """train.trainable with adapters: ZeRO-3 keeps 1/dp of the frozen weights too (no gradient buffers for
    them), trains the adapters as ZeRO-1 does, and leaves every frozen weight bit-equal."""
    for got in (r["adapters"] for r in two_ranks[2]):
        full, zero1 = got["full"], got["optimizer"]
        assert all(abs(a - b) <= 1e-5 for a, b in zip(full["losses"], zero1["losses"])), (full, zero1)
        # between steps a rank holds half of all the weights, frozen ones included (fp32: 4 bytes each)
        assert full["held"] <= 4 * full["total"] / 2 * 1.05, (full["held"], full["total"])
        changed = [n for n in full["start"] if not torch.equal(full["start"][n], full["end"][n])]
        assert changed and all("adapter" in n for n in changed), changed
        for n, p in full["end"].items():
            assert torch.allclose(p, zero1["end"][n], atol=1e-5), n
