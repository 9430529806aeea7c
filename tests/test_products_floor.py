"""bench/products_floor.py: the matrix products of a step are captured with their shapes, counted
exactly and replayed alone."""

import torch

from tests.bench_module import load_bench


def test_a_linear_steps_products_are_captured_counted_and_replayed():
    floor = load_bench("products_floor")
    torch.manual_seed(0)
    lin = torch.nn.Linear(24, 40)
    x = torch.randn(8, 5, 24, requires_grad=True)
    calls = floor.capture(lambda: lin(x).square().sum().backward())
    names = sorted(func.__name__.split(".")[0] for func, _, _ in calls)
    assert names == ["addmm", "mm", "mm"]  # forward; input gradient and weight gradient
    # 3 products of 40 x 24 x 40 multiply-adds (40 rows of x), 2 operations each
    assert floor.flops(calls) == 3 * 2 * 40 * 24 * 40
    transposed = [a for _, args, _ in calls for a in args if isinstance(a, tuple) and a[2][0] == 1]
    assert transposed, "operand strides are kept (transposed weights stay transposed)"
    assert lin.weight.grad is not None  # the step itself ran
    assert 0 < floor.replay_seconds(calls, rounds=2) < 5
