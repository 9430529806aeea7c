"""BERT pretraining through the trainer (`megazoo train bert-tiny`): the loss is Megatron's
(masked-LM mean over masked tokens + sentence-order mean over sequences) on the embedded corpus,
and tp2 x pp2 + sp and dp2 x tp2 with ZeRO and recompute reproduce one process (fp32, 1e-5)."""

import pytest
import torch
import torch.nn.functional as F

from megazoo.core.parallel.launch import spawn
from megazoo.core.train import RunConfig, Trainer
from megazoo.core.train.config import ConfigError
from tests.test_train_parity import assert_layouts_match
from tests.train_cases import one_thread, run_cases, text_model


def bert_tiny(run_dir, *overrides: str) -> RunConfig:
    return text_model("bert-tiny", run_dir, *overrides)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("bert")
    return run_cases({"big": bert_tiny(root / "big", "train.micro_batch=8")})["big"]


def test_the_loss_is_megatrons_and_it_learns(reference, tmp_path):
    with one_thread():
        t = Trainer(bert_tiny(tmp_path))
        try:
            mbs = t.train_data.step(0)
            (model,) = t.chunks
            masked = sum(int((mb["labels"] != -100).sum()) for mb in mbs)
            assert 0 < masked < sum(mb["labels"].numel() for mb in mbs)
            assert {mb["sop_labels"].sum().item() for mb in mbs} != {0}  # swapped pairs occur
            mlm, sop, n = 0.0, 0.0, 0
            with torch.no_grad():
                for mb in mbs:
                    out = model(mb["input_ids"], mb["attention_mask"], mb["token_type_ids"])
                    logits = out.lm_logits.reshape(-1, out.lm_logits.shape[-1])
                    mlm += F.cross_entropy(logits, mb["labels"].reshape(-1), ignore_index=-100, reduction="sum").item()
                    sop += F.cross_entropy(out.binary_logits, mb["sop_labels"], reduction="sum").item()
                    n += mb["input_ids"].shape[0]
            got = t.train_step(mbs)["loss"]
        finally:
            t.close()
    assert got == pytest.approx(mlm / masked + sop / n, rel=1e-6)
    losses = reference["losses"]
    assert sum(losses[-3:]) / 3 < losses[0] - 0.2  # it learns


def _four_rank_cases(root: str) -> dict:
    return run_cases({
        "tp2 x pp2 + sp": bert_tiny(f"{root}/tp2-pp2-sp", "parallel.tp=2", "parallel.pp=2", "parallel.sp=true"),
        "dp2 x tp2, distributed optimizer, selective recompute": bert_tiny(
            f"{root}/dp2-tp2-zero", "parallel.tp=2", "optim.distributed=true", "recompute=selective"),
    })


def test_bert_layouts_match_one_process(reference, tmp_path):
    results = spawn(_four_rank_cases, 4, str(tmp_path), timeout=400)
    assert_layouts_match(results, reference, tmp_path, ("tp2-pp2-sp", "dp2-tp2-zero"), stage_only=True)


def test_bert_needs_text_and_a_large_enough_vocabulary(tmp_path):
    with pytest.raises(ConfigError, match="model.arch='bert' trains on text: set data.synthetic=false"):
        Trainer(bert_tiny(tmp_path, "data.synthetic=true"))
    with pytest.raises(ValueError, match="data.tokenizer='bert-wordpiece' has 30522 tokens but model.vocab_size=1000"):
        Trainer(bert_tiny(tmp_path, "model.vocab_size=1000"))


def test_a_bert_run_exports_to_hf_megatron_bert(tmp_path):
    """`megazoo export-hf` on the run's checkpoints: MegatronBertForPreTraining and the WordPiece
    tokenizer load with transformers and give the trained model's outputs."""
    import transformers as T

    from megazoo.cli import main

    with one_thread():
        t = Trainer(bert_tiny(tmp_path / "run", "train.steps=2", "checkpoint.save=true"))
        try:
            t.fit()
            (model,) = t.chunks
            model.eval()
            mb = t.valid_data.step(0)[0]
            with torch.no_grad():
                mine = model(mb["input_ids"], mb["attention_mask"], mb["token_type_ids"])
        finally:
            t.close()
    assert main(["export-hf", str(tmp_path / "run" / "checkpoints"), str(tmp_path / "hf")]) == 0
    hf = T.AutoModelForPreTraining.from_pretrained(tmp_path / "hf").eval()
    tok = T.AutoTokenizer.from_pretrained(tmp_path / "hf")
    assert type(hf).__name__ == "MegatronBertForPreTraining" and len(tok) == 30522
    assert tok("Hello world")["input_ids"][1:-1] == tok.convert_tokens_to_ids(["hello", "world"])
    with torch.no_grad():
        theirs = hf(input_ids=mb["input_ids"], attention_mask=mb["attention_mask"], token_type_ids=mb["token_type_ids"])
    real = mb["attention_mask"].bool()
    torch.testing.assert_close(theirs.prediction_logits[real], mine.lm_logits[real], rtol=0, atol=1e-4)
    torch.testing.assert_close(theirs.seq_relationship_logits, mine.binary_logits, rtol=0, atol=1e-5)
