"""T5 pretraining through the trainer (`megazoo train t5-tiny`): span corruption on the embedded
corpus, the loss is the mean over target tokens, tp4 and tp2 x dp2 + sp with ZeRO reproduce one
process (fp32, 1e-5), a run exports to transformers' T5ForConditionalGeneration, and what T5 cannot
do (pipeline stages, recomputation) is refused up front."""

import pytest
import torch
import torch.nn.functional as F

from megazoo.core.parallel.launch import spawn
from megazoo.core.train import RunConfig, Trainer
from megazoo.core.train.config import ConfigError
from tests.test_train_parity import assert_layouts_match
from tests.train_cases import one_thread, run_cases, text_model


def t5_tiny(run_dir, *overrides: str) -> RunConfig:
    return text_model("t5-tiny", run_dir, *overrides)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("t5")
    return run_cases({"big": t5_tiny(root / "big", "train.micro_batch=8")})["big"]


def test_the_loss_is_the_target_token_mean_and_it_learns(reference, tmp_path):
    with one_thread():
        t = Trainer(t5_tiny(tmp_path))
        try:
            mbs = t.train_data.step(0)
            (model,) = t.chunks
            # the 100 sentinels are appended to WordPiece's 30522 ids, and the spans are replaced by them
            assert any(bool((mb["input_ids"] >= 30522).any()) for mb in mbs)
            total, n = 0.0, 0
            with torch.no_grad():
                for mb in mbs:
                    logits = model(mb["input_ids"], mb["decoder_input_ids"], mb["attention_mask"],
                                   mb["decoder_attention_mask"])
                    total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), mb["labels"].reshape(-1),
                                             ignore_index=-100, reduction="sum").item()
                    n += int((mb["labels"] != -100).sum())
            got = t.train_step(mbs)["loss"]
        finally:
            t.close()
    assert got == pytest.approx(total / n, rel=1e-6)
    losses = reference["losses"]
    assert sum(losses[-3:]) / 3 < losses[0] - 0.2


def _four_rank_cases(root: str) -> dict:
    return run_cases({
        "tp4": t5_tiny(f"{root}/tp4", "parallel.tp=4"),
        "tp2 x dp2 + sp, distributed optimizer": t5_tiny(f"{root}/tp2-dp2-sp-zero", "parallel.tp=2", "parallel.sp=true",
                                                          "optim.distributed=true"),
    })


def test_t5_layouts_match_one_process(reference, tmp_path):
    results = spawn(_four_rank_cases, 4, str(tmp_path), timeout=400)
    assert_layouts_match(results, reference, tmp_path, ("tp4", "tp2-dp2-sp-zero"))


def test_a_t5_run_exports_to_transformers(tmp_path):
    import transformers as T

    from megazoo.cli import main

    with one_thread():
        t = Trainer(t5_tiny(tmp_path / "run", "train.steps=2", "checkpoint.save=true"))
        try:
            t.fit()
            (model,) = t.chunks
            model.eval()
            mb = t.valid_data.step(0)[0]
            with torch.no_grad():
                mine = model(mb["input_ids"], mb["decoder_input_ids"], mb["attention_mask"],
                             mb["decoder_attention_mask"])
        finally:
            t.close()
    assert main(["export-hf", str(tmp_path / "run" / "checkpoints"), str(tmp_path / "hf")]) == 0
    hf = T.T5ForConditionalGeneration.from_pretrained(tmp_path / "hf").eval()
    with torch.no_grad():
        theirs = hf(input_ids=mb["input_ids"], attention_mask=mb["attention_mask"],
                    decoder_input_ids=mb["decoder_input_ids"], decoder_attention_mask=mb["decoder_attention_mask"]).logits
    real = mb["decoder_attention_mask"].bool()
    torch.testing.assert_close(theirs[real], mine[real], rtol=0, atol=1e-4)


def test_what_t5_cannot_do_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="parallel.pp=2: T5 does not support pipeline parallelism"):
        t5_tiny(tmp_path, "parallel.pp=2").validate(2)
    with pytest.raises(ConfigError, match="recompute=full: activation recomputation is not implemented for T5"):
        t5_tiny(tmp_path, "recompute=full").validate(1)
