"""Memory that stays mapped: the trainer's allocator policy (no page faults for the big per-step
tensors once a step has run) and gradient accumulation into the fp32 buffer without a
gradient-sized temporary."""

import subprocess
import sys

import torch
from torch.profiler import ProfilerActivity, profile

from megazoo.core.optim.buffers import SCRATCH_ELEMENTS, accumulate
from megazoo.core.parallel.device import set_allocator_policy

FAULTS = """
import resource, sys, torch
from megazoo.core.parallel.device import set_allocator_policy
print(set_allocator_policy(sys.argv[1], torch.device("cpu")))
def step():  # a step's big tensors: fresh 64 MiB logits and gradients, freed at its end
    x, y = torch.ones(16 * 2**20), torch.ones(16 * 2**20)
    return float(x[-1] + y[-1])
for _ in range(10):  # the heap settles at the step's peak in the first steps
    step()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    step()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 5)
"""


def _faults(policy):
    out = subprocess.run([sys.executable, "-c", FAULTS, policy], capture_output=True, text=True, check=True)
    name, faults = out.stdout.split("\n")[:2]
    return name, float(faults)


def test_keep_policy_stops_page_faults():
    name, keep = _faults("keep")
    assert name.startswith("keep"), name
    system_name, system = _faults("system")
    assert system_name == "system"
    assert system > 20_000, f"the C library's default maps 2 x 64 MiB afresh: {system} faults, >= 32k expected"
    assert keep < 0.05 * system, f"memory that stays mapped reuses its pages: {keep} faults per step"


def test_policy_only_touches_the_cpu():
    assert set_allocator_policy("keep", torch.device("cuda", 0)) == "system"
    assert set_allocator_policy("system", torch.device("cpu")) == "system"


def _largest_allocation(fn) -> int:
    """The largest single CPU allocation (bytes) made while fn runs, temporaries inside kernels too."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    return max((e.cpu_memory_usage for e in prof.events()), default=0)


def test_accumulate_adds_bf16_without_a_temporary():
    g = torch.Generator().manual_seed(0)
    n = 3 * SCRATCH_ELEMENTS + 17
    main = torch.randn(n, generator=g)
    grad = torch.randn(n, generator=g).bfloat16()
    want = main + grad.float()
    scratch = torch.empty(SCRATCH_ELEMENTS)
    largest = _largest_allocation(lambda: accumulate(main, grad, scratch))
    assert torch.equal(main, want)
    assert largest == 0, f"a temporary of {largest} bytes"
    copy = main.clone()
    plain = _largest_allocation(lambda: copy.add_(grad))  # what torch's own add_ does on the CPU
    assert plain >= 4 * n, "the check sees torch's fp32 copy of the gradient"
    # without a scratch (CUDA) or for an fp32 gradient: a plain in-place add, same result
    m2 = want.clone()
    accumulate(m2, grad, None)
    torch.testing.assert_close(m2, want + grad.float())
