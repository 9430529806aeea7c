"""The vocabulary side of BioMegatron: `megazoo tokenizer train` makes WordPiece vocabularies cased
and uncased, `megazoo task biomed vocab-report` compares two on a term list (subwords per term,
share kept whole, table and PNG), and the data stage writes every layout."""

import json
from pathlib import Path

from megazoo.cli import main as megazoo
from megazoo.core.data.tokenizers import build_tokenizer

FIXTURES_NER = Path(__file__).parent / "fixtures" / "biomed" / "ner"
TEXT = ["Nephritis and cardiomyopathy were seen with hepatitis and myocarditis.",
        "Chronic pancreatitis, gastritis and arthritis followed carbamazepine use.",
        "The Patient had Osteosarcoma and Lymphoma after treatment."] * 20


def train(tmp_path, name: str, *flags: str):
    (tmp_path / "text.txt").write_text("\n".join(TEXT) + "\n")
    out = tmp_path / name
    assert megazoo(["tokenizer", "train", "--kind", "wordpiece", "--input", str(tmp_path / "text.txt"),
                    "--vocab-size", "200", "--out", str(out), "--quiet", *flags]) == 0
    return out


def test_wordpiece_trains_cased_and_uncased(tmp_path):
    uncased = build_tokenizer(str(train(tmp_path, "uncased", "--lowercase")))
    cased = build_tokenizer(str(train(tmp_path, "cased")))
    for tok in (uncased, cased):
        assert tok.cls is not None and tok.sep is not None and tok.mask is not None
    assert uncased.encode("Osteosarcoma") == uncased.encode("osteosarcoma")
    assert cased.encode("Osteosarcoma") != cased.encode("osteosarcoma")
    assert cased.backend.id_to_token(cased.encode("Patient")[0]).startswith("P")


def test_vocab_report_compares_two_vocabularies(tmp_path, capsys):
    bio = train(tmp_path, "bio", "--lowercase")
    terms = tmp_path / "terms.txt"
    terms.write_text("nephritis\nosteosarcoma\ngastritis\n")
    out = tmp_path / "report"
    assert megazoo(["task", "biomed", "vocab-report", "--vocab", "bert=bert-wordpiece", "--vocab", f"bio={bio}",
                    "--terms", str(terms), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| bert | 30522 | 3 |" in printed and "| bio | " in printed
    record = json.loads((out / "report.json").read_text())
    bert, ours = build_tokenizer("bert-wordpiece"), build_tokenizer(str(bio))
    words = ["nephritis", "osteosarcoma", "gastritis"]
    for row, tok in zip(record["vocabularies"], (bert, ours)):
        counts = [len(tok.encode(w)) for w in words]
        assert row["mean_subwords"] == sum(counts) / 3 and row["whole_share"] == sum(c == 1 for c in counts) / 3
    assert record["vocabularies"][1]["reduction_vs_first"] == 1 - record["vocabularies"][1]["mean_subwords"] / \
        record["vocabularies"][0]["mean_subwords"]
    assert record["per_term"][0]["term"] == "nephritis" and (out / "subwords.png").stat().st_size > 1000
    assert (out / "table.md").read_text().startswith("| vocabulary |")
    assert megazoo(["task", "biomed", "vocab-report", "--vocab", "bert-wordpiece", "--terms", str(terms),
                    "--out", str(tmp_path / "report2")]) == 2
    assert "at least two --vocab" in capsys.readouterr().err


def test_data_command_writes_every_layout(tmp_path, capsys):
    out = tmp_path / "gen"
    assert megazoo(["task", "biomed", "data", str(out), "--ner", "16", "--re", "16", "--qa", "8"]) == 0
    assert "ner: train 16, dev 2, test 4" in capsys.readouterr().out
    for name in ("ner/train.tsv", "ner/devel.tsv", "ner/test.tsv", "re/dev.tsv", "qa/train.json", "qa/dev.json",
                 "text/bio.txt", "text/general.txt", "text/heldout_terms.txt"):
        assert (out / name).is_file(), name
    assert megazoo(["task", "biomed", "data", str(out)]) == 2  # never overwrites
    assert "exists and is not empty" in capsys.readouterr().err
    assert megazoo(["task", "biomed", "generate", str(out)]) == 2  # the older name runs the same stage
    err = capsys.readouterr().err
    assert "`generate` is now `data`" in err and "exists and is not empty" in err


def test_biomegatron_tiny_pretrains_on_a_bio_vocabulary(tmp_path):
    """The recipe is a pre-LN Megatron BERT with masked-LM and sentence-order heads; it trains on
    text preprocessed with a trained bio vocabulary, and a NER fine-tune starts from it."""
    from megazoo.core.checkpoint import load_full_model_state
    from megazoo.core.train.config import RunConfig
    from megazoo.tasks.biomed.generate import documents_text

    cfg = RunConfig.load("biomegatron-tiny")
    assert cfg.model["post_norm"] is False and cfg.model["add_binary_head"] is True and cfg.model["arch"] == "bert"
    vocab = train(tmp_path, "bio", "--lowercase")
    size = build_tokenizer(str(vocab)).vocab_size
    (tmp_path / "bio.txt").write_text(documents_text(TEXT, per_document=3))
    prefix = tmp_path / "pre" / "bio"
    assert megazoo(["preprocess", "--input", str(tmp_path / "bio.txt"), "--tokenizer", str(vocab), "--split-sentences",
                    "--text-mode", "blank", "--output-prefix", str(prefix), "--no-progress"]) == 0
    run = tmp_path / "pretrain"
    assert megazoo(["train", "biomegatron-tiny", "--set", f"data.path={prefix}", f"data.tokenizer={vocab}",
                    f"model.vocab_size={size}", "train.steps=2", "train.micro_batch=2", "train.global_batch=2",
                    "model.seq_length=32", "train.eval_iters=1", "log.progress=false", "log.plot=false",
                    f"log.dir={run}"]) == 0
    info, state = load_full_model_state(run / "checkpoints")
    assert "binary_head.weight" in state and any(k.startswith("lm_") for k in state)
    assert megazoo(["task", "biomed", "train", "biomed-ner", "--set", f"train.init_from={run / 'checkpoints'}",
                    f"data.tokenizer={vocab}", f"data.path={FIXTURES_NER}", "task.max_seq_length=32", "train.epochs=1",
                    "train.micro_batch=2", "train.global_batch=2", "log.progress=false", "log.plot=false",
                    f"log.dir={tmp_path / 'ner'}"]) == 0
    info, state = load_full_model_state(tmp_path / "ner" / "checkpoints")
    assert info["meta"]["task"]["kind"] == "ner" and state["task_head.classifier.weight"].shape == (3, 64)
