"""Native BERT (pre-LN and post-LN) and T5: tensor and sequence parallelism reproduce one
process (losses, logits, gradients); T5's buckets match transformers; T5 refuses pipelines."""

from __future__ import annotations

import pytest
import torch

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.launch import spawn
from megazoo.zoo.hf import LayoutError, check_layout
from megazoo.zoo.t5 import TINY as T5_TINY
from megazoo.zoo.t5 import T5Model, relative_position_bucket
from tests.zoo_model_cases import LAYOUTS, run_model, tp_cases

TOL = 1e-5


def close(a, b, what):
    err = (a - b).abs().max().item()
    assert err <= TOL * max(1.0, b.abs().max().item()), f"{what}: {err:.2e}"


def test_tp2_and_sp_match_one_process():
    ref = {layout: run_model(layout, ParallelContext.single()) for layout in LAYOUTS}
    for rank, per_rank in enumerate(spawn(tp_cases, 2, 2, timeout=300)):
        for (layout, sp), got in per_rank.items():
            tag = f"{layout} sp={sp} rank={rank}"
            close(got["loss"], ref[layout]["loss"], tag + " loss")
            close(got["logits"], ref[layout]["logits"], tag + " logits")
            assert got["grads"].keys() == ref[layout]["grads"].keys()
            for name, g in got["grads"].items():
                close(g, ref[layout]["grads"][name], f"{tag} grad {name}")


@pytest.mark.parametrize("bidirectional", [True, False])
def test_relative_buckets_match_transformers(bidirectional):
    from transformers.models.t5.modeling_t5 import T5Attention

    rel = torch.arange(-300, 300)[None, :] - torch.arange(0, 40)[:, None]
    for buckets, distance in ((32, 128), (8, 20)):
        ours = relative_position_bucket(rel, bidirectional, buckets, distance)
        theirs = T5Attention._relative_position_bucket(rel, bidirectional, buckets, distance)
        assert torch.equal(ours, theirs)


def test_t5_refuses_pipeline_parallelism():
    cfg = T5_TINY["t5-tiny"]()
    with pytest.raises(LayoutError, match="T5 does not support pipeline parallelism"):
        check_layout("t5", cfg, tp=1, pp=2)
    with pytest.raises(ValueError, match="T5 does not support pipeline parallelism"):
        T5Model(cfg, ParallelContext(pp=2))
