"""bench/bench_finetune_trainer.py races megazoo's trainer against transformers.Trainer; this proves
the race is apples to apples on tiny fresh models through the bench's own functions: the same start
weights, batches, optimizer and schedule give the same losses step by step, for RACE (BERT + the
choice head vs AutoModelForMultipleChoice) and for SFT (a Llama-layout decoder vs
AutoModelForCausalLM, with padding and response-only labels).

Tolerances. Step 1 is a forward pass of identical fp32 weights on identical inputs: the two
implementations differ only in the order of floating-point operations (fused QKV, the attention
kernel, the reduction order of the log-softmax), which moves a loss of a few units by ~1e-6 at
most (measured: 1e-7 for RACE, 1e-6 for SFT); FIRST = 1e-5 (relative, at least absolute) leaves
room for that and nothing else: a real mismatch (a label shifted by one, padding counted in the
mean, dropout left on, a different head) moves the first loss by far more (the last test shows one
such case). The first gradient norm (relative 1e-5; measured 1e-6) checks the gradient's
normalisation the same way. Steps 2 and 3 follow an AdamW update of both sides. Adam divides each
gradient element by its own magnitude, so an element whose gradient nearly cancels is dominated by
rounding and its update can be anything up to the lr: in RACE an article token shared by a
question's 4 options gets gradients that sum to almost 0 (the softmax's gradient over the options
sums to zero). The losses therefore drift apart by about 10x a step (measured for RACE: 1e-7, 3e-6,
2e-5 at steps 1-3; for SFT 1e-6 throughout): LATER = 1e-4 for steps 2 and 3.
"""

from pathlib import Path

import pytest
import torch

from tests.bench_module import load_bench
from tests.train_cases import one_thread  # also sets MEGAZOO_PEAK_TFLOPS: no peak measurement

pytest.importorskip("transformers")

FIXTURE = Path(__file__).parent / "fixtures" / "sft" / "pairs.jsonl"
FIRST, LATER = 1e-5, 1e-4
STEPS = 3


@pytest.fixture(scope="module")
def bench():
    return load_bench("bench_finetune_trainer")


def tiny(base: dict, **keys) -> dict:
    return dict(base, steps=STEPS, warm=1, lr=1e-3, **keys)


# a fresh BERT at the usual init_std 0.02 scores a question's 4 options almost alike (loss ln 4 whatever
# the weights); 0.3 makes the scores, and so the comparison, depend on them
RACE_MODEL = ("model.arch=bert", "model.post_norm=true", "model.init_std=0.3", "model.num_layers=2",
              "model.hidden_size=32", "model.num_heads=2", "model.ffn_hidden_size=64", "model.vocab_size=30522",
              "model.seq_length=64")
SFT_MODEL = ("model.arch=llama", "model.num_layers=2", "model.hidden_size=32", "model.num_heads=4",
             "model.num_kv_heads=2", "model.ffn_hidden_size=64", "model.vocab_size=50304", "model.seq_length=64",
             "model.tie_embeddings=true")


def close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(b))


def check(rec: dict) -> None:
    mz, hf = rec["megazoo"], rec["hf"]
    assert len(mz["losses"]) == len(hf["losses"]) == STEPS
    assert close(mz["losses"][0], hf["losses"][0], FIRST), (mz["losses"][0], hf["losses"][0])
    assert abs(mz["grad_norms"][0] - hf["grad_norms"][0]) <= FIRST * hf["grad_norms"][0], (mz["grad_norms"][0],
                                                                                          hf["grad_norms"][0])
    for step, (a, b) in enumerate(zip(mz["losses"][1:], hf["losses"][1:]), 2):
        assert close(a, b, LATER), f"step {step}: megazoo {a} vs transformers.Trainer {b}"
    assert max(mz["losses"]) - min(mz["losses"]) > 1e-3  # the steps trained: not a comparison of frozen models
    # each side's products were captured and replayed; megazoo runs fewer (the head where it is read)
    f = rec["floors"]
    assert f["megazoo_s"] > 0 and f["hf_s"] > 0
    assert 0 < f["megazoo_gflop"] < f["hf_gflop"], f


def test_race_losses_agree_with_trainer(bench, tmp_path):
    s = tiny(bench.RACE, seq=64, qa=16, micro_batch=2, words=30, articles=4)
    data = bench.race_data(tmp_path, s)
    cfg = bench.race_config(data, None, tmp_path / "race-megazoo", s, RACE_MODEL)
    with one_thread():
        rec = bench.compare("race", cfg, s, tmp_path)
    assert all(length <= 64 for length in rec["lengths"])
    check(rec)


def test_sft_losses_agree_with_trainer_with_padding_and_shifted_labels(bench, tmp_path):
    s = tiny(bench.SFT, seq=64, micro_batch=4)
    cfg = bench.sft_config(FIXTURE, None, "gpt2", tmp_path / "sft-megazoo", s, SFT_MODEL)
    with one_thread():
        rec = bench.compare("sft", cfg, s, tmp_path)
    check(rec)


def test_hf_own_label_shift_would_not_match(bench, tmp_path):
    """The test above can fail: HF's own convention (labels aligned with input_ids, shifted inside
    the model) on megazoo's already-shifted labels drops each row's last target and misaligns the
    rest. On a fresh model every target is nearly as likely as any other, so the first loss moves
    by only ~3e-4 of itself (a trained one moves far more), yet that is still more than 10x FIRST."""
    s = tiny(bench.SFT, seq=64, micro_batch=4)
    cfg = bench.sft_config(FIXTURE, None, "gpt2", tmp_path / "sft-megazoo", s, SFT_MODEL)
    with one_thread():
        trainer = bench.megazoo_trainer(cfg)
        try:
            (mb,) = bench.step_batches(trainer, 1)
            folder = bench.export_start(trainer, tmp_path / "start")
        finally:
            trainer.close()
        model = bench.hf_model("sft", folder).eval()
        with torch.no_grad():
            right = model(input_ids=mb["input_ids"], labels=mb["labels"], shift_labels=mb["labels"]).loss.item()
            wrong = model(input_ids=mb["input_ids"], labels=mb["labels"]).loss.item()
    assert abs(right - wrong) > 10 * FIRST * max(1.0, abs(right)), (right, wrong)
