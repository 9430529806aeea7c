"""The MoE layer in one process: the load-balancing loss equals its formula computed by hand, the
auxiliary losses reach the router's gradient, a capacity factor drops exactly the assignments over
capacity (lowest router weight first) and the log reports that share, the layer's output equals
the experts applied token by token, grouped GEMM equals the loop, and bad settings fail in one line."""

import contextlib
import io
import math

import pytest
import torch
import torch.nn.functional as F

from megazoo.core.nn.moe import MoELayer, moe_metrics
from megazoo.core.nn.moe.experts import grouped_linear
from megazoo.core.nn.moe.router import Router
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.init import initialize
from megazoo.zoo.gpt import TINY


def layer(seed=3, **moe):
    cfg = TINY["gpt-tiny"](moe=dict(dict(num_experts=4, top_k=2), **moe))
    m = MoELayer(cfg, ParallelContext.single())
    initialize(m, seed)
    with torch.no_grad():  # non-zero biases so that they take part in the checks
        for name, p in m.named_parameters():
            if "bias" in name:
                p.normal_(0, 0.1, generator=torch.Generator().manual_seed(len(name)))
    return m.train()


def tokens(t=24, h=64, seed=0):
    return torch.randn(t, 1, h, generator=torch.Generator().manual_seed(seed))


def test_load_balancing_loss_is_its_formula_by_hand():
    m = layer(aux_loss=0.1)
    x = tokens()
    routing = m.router(x.reshape(-1, 64))
    aux, z, total = m.router.losses(routing)
    probs = torch.softmax(x.reshape(-1, 64) @ m.router.weight.T, -1).tolist()
    chosen = routing.experts.tolist()
    t, e, k = len(probs), 4, 2
    by_hand = 0.0
    for i in range(e):
        f_i = sum(row.count(i) for row in chosen) / (t * k)  # share of the t x k assignments
        p_i = sum(p[i] for p in probs) / t  # mean router probability
        by_hand += f_i * p_i
    by_hand *= e
    assert total == t
    assert math.isclose(float(aux.detach()), by_hand, rel_tol=1e-5)
    logits = x.reshape(-1, 64) @ m.router.weight.T
    z_hand = sum(math.log(sum(math.exp(v) for v in row)) ** 2 for row in logits.tolist()) / t
    assert math.isclose(float(z.detach()), z_hand, rel_tol=1e-5)


def test_a_perfectly_balanced_routing_gives_one():
    probs = torch.full((8, 4), 0.25)
    experts = torch.tensor([[0, 1], [2, 3]] * 4)
    from megazoo.core.nn.moe.router import load_balancing_loss

    assert float(load_balancing_loss(probs, experts, 4)) == pytest.approx(1.0)


@pytest.mark.parametrize("gating", ["softmax", "sigmoid"])
def test_auxiliary_losses_reach_the_router_gradient(gating):
    x = tokens()
    plain = layer(gating=gating)
    plain(x).square().sum().backward()
    coef = dict(aux_loss=0.5, z_loss=0.01)
    with_aux = layer(gating=gating, **coef)
    with_aux(x).square().sum().backward()
    assert with_aux.stats["calls"] == 1 and with_aux.stats["aux_loss"] > 0
    alone = layer(gating=gating, **coef)  # the auxiliary objective by itself
    routing = alone.router(x.reshape(-1, 64))
    aux, z, _ = alone.router.losses(routing)
    (coef["aux_loss"] * aux + coef["z_loss"] * z).backward()
    expected = plain.router.weight.grad + alone.router.weight.grad
    assert torch.allclose(with_aux.router.weight.grad, expected, atol=1e-6)
    assert not torch.allclose(with_aux.router.weight.grad, plain.router.weight.grad, atol=1e-4)


def by_hand(m: MoELayer, x: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
    """The layer's output token by token: sum over the kept chosen experts of weight x expert MLP."""
    ex = m.experts
    routing = m.router(x.reshape(-1, 64))
    out = torch.zeros(x.shape[0], 64)
    for t in range(x.shape[0]):
        for j in range(routing.experts.shape[1]):
            if keep is not None and not keep[t, j]:
                continue
            e = int(routing.experts[t, j])
            hidden = F.gelu(F.linear(x[t, 0], ex.fc1_weight[e], ex.fc1_bias[e]), approximate="tanh")
            out[t] += routing.weights[t, j] * F.linear(hidden, ex.fc2_weight[e], ex.fc2_bias[e])
    return out


@pytest.mark.parametrize("gating", ["softmax", "sigmoid"])
def test_dropless_output_is_the_experts_token_by_token(gating):
    m, x = layer(gating=gating), tokens()
    with torch.no_grad():
        assert torch.allclose(m(x)[:, 0], by_hand(m, x), atol=1e-5)


def test_capacity_drops_the_assignments_over_capacity_and_reports_the_share():
    m, x = layer(capacity_factor=0.5), tokens(t=32)
    routing = m.router(x.reshape(-1, 64))
    capacity = math.ceil(0.5 * 32 * 2 / 4)  # 8 of the 64 assignments per expert
    chosen, weights = routing.experts.tolist(), routing.weights.tolist()
    keep = torch.zeros(32, 2, dtype=torch.bool)
    dropped = 0
    for e in range(4):
        mine = sorted(((weights[t][j], t, j) for t in range(32) for j in range(2) if chosen[t][j] == e), reverse=True)
        for w, t, j in mine[:capacity]:
            keep[t, j] = True
        dropped += max(0, len(mine) - capacity)
    assert dropped > 0
    with torch.no_grad():
        out = m(x)
    assert m.stats["dropped"] == dropped and m.stats["assigned"] == 64
    assert torch.allclose(out[:, 0], by_hand(m, x, keep), atol=1e-5)
    metrics = moe_metrics([m], ParallelContext.single())
    assert metrics["moe_dropped"] == pytest.approx(dropped / 64)
    assert m.stats == {}  # reset for the next log line


def test_grouped_gemm_equals_the_loop():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(20, 16, generator=g)
    w = torch.randn(3, 8, 16, generator=g)
    counts = [7, 0, 13]
    a_x, b_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    a_w, b_w = w.clone().requires_grad_(), w.clone().requires_grad_()
    a = grouped_linear(a_x, a_w, counts, grouped=True)
    b = grouped_linear(b_x, b_w, counts, grouped=False)
    assert torch.allclose(a, b, atol=1e-6)
    a.sum().backward()  # an expanded gradient, which grouped_mm's backward alone rejects
    b.sum().backward()
    assert torch.allclose(a_x.grad, b_x.grad, atol=1e-6) and torch.allclose(a_w.grad, b_w.grad, atol=1e-5)


def test_ep_that_does_not_divide_the_experts_is_refused_when_built():
    with pytest.raises(ValueError, match=r"parallel.ep=3 must divide model.moe.num_experts=4"):
        cfg = TINY["gpt-tiny"](moe=dict(num_experts=4))
        Router(cfg, ParallelContext.single())  # the router is fine; the experts are split over ep
        from megazoo.core.nn.moe.experts import Experts

        Experts(cfg, ParallelContext(dp=3, ep=3))


def run_cli(*argv):
    from megazoo.cli import main

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = e.code
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    assert "Traceback" not in err.getvalue()
    return code, lines[-1] if lines else ""


@pytest.mark.parametrize("sets, message", [
    (["model.moe.num_experts=2", "model.moe.top_k=3"],
     "megazoo train: error: model.moe.top_k=3 is larger than model.moe.num_experts=2; a token cannot go to more "
     "experts than there are"),
    (["model.moe.num_experts=3", "parallel.ep=2"],
     "megazoo train: error: parallel.ep=2 must divide model.moe.num_experts=3: each expert-parallel rank holds "
     "the same number of experts"),
    (["model.moe.ffn_hidden_size=33", "parallel.tp=2"],
     "megazoo train: error: parallel.tp=2 must divide model.moe.ffn_hidden_size=33 (each expert is split over tp "
     "like the dense MLP)"),
    (["model.moe.topk=2"], "megazoo train: error: config: unknown key `model.moe.topk`; did you mean `model.moe.top_k`?"),
])
def test_bad_moe_settings_fail_in_one_line(tmp_path, sets, message):
    code, line = run_cli("train", "gpt-tiny", "--nproc", "2", "--set", "train.steps=1", "log.progress=false",
                         f"log.dir={tmp_path / 'run'}", *sets)
    assert (code, line) == (2, message)
    assert not (tmp_path / "run").exists()


def test_training_log_shows_the_moe_values(tmp_path):
    """`megazoo train` with experts: each log line has the load-balancing loss, the z-loss and the
    dropped share (a capacity factor of 0.5 drops at least about half the assignments)."""
    import json

    code, line = run_cli("train", "gpt-tiny", "--set", "train.steps=2", "train.global_batch=4", "log.progress=false",
                         "train.eval_iters=1", f"log.dir={tmp_path / 'run'}", "checkpoint.save=false",
                         "model.moe.num_experts=4", "model.moe.aux_loss=0.01", "model.moe.capacity_factor=0.5")
    assert code == 0, line
    records = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r.get("split") != "valid"]
    assert [r["step"] for r in train] == [1, 2]
    for r in train:
        assert 0.9 < r["moe_aux_loss"] < 2.0 and r["moe_z_loss"] > 0  # about 1 when balanced, at most E / k
        assert 0.45 <= r["moe_dropped"] < 1.0  # capacity factor 0.5 keeps at most about half the assignments
