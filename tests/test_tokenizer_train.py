"""`megazoo tokenizer train` (core/data/tokenizer_train.py): each kind trains on a slice of the
embedded corpus, has the asked vocabulary, round-trips text, loads in transformers with the same ids
as megazoo's build_tokenizer (and, for sentencepiece, as the .model itself), and a WordPiece folder
drives a 2-step `megazoo train bert-tiny` as data.tokenizer (whose checkpoint `megazoo embed`
reads). Bad requests get one line and exit 2."""

from __future__ import annotations

import json

import pytest

from megazoo.cli import main
from megazoo.core.data.tokenizer_train import train_tokenizer
from megazoo.core.data.tokenizers import build_tokenizer
from tests.test_data_common import data_cache  # noqa: F401

VOCAB = 1200
SENTENCES = ["The interpreter evaluates the expression.", "A module is a file containing Python definitions.",
             "Exceptions are raised when an error is detected during execution.",
             "Iterators return their items one at a time, and generators make them easily."]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """~300 KB of the embedded corpus: most as .txt, the rest as .jsonl."""
    from megazoo.core.data.corpus import documents

    root = tmp_path_factory.mktemp("corpus")
    docs, size = [], 0
    for doc in documents():
        docs.append(doc)
        size += len(doc)
        if size > 300_000:
            break
    (root / "docs.txt").write_text("\n".join(docs[:-40]) + "\n")
    (root / "docs.jsonl").write_text("\n".join(json.dumps({"text": d, "n": i}) for i, d in enumerate(docs[-40:])))
    return [str(root / "docs.txt"), str(root / "docs.jsonl")]


@pytest.fixture(scope="module")
def wordpiece(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("wp") / "tok"
    argv = ["tokenizer", "train", "--kind", "wordpiece", "--input", *corpus, "--vocab-size", str(VOCAB),
            "--out", str(out), "--lowercase", "--quiet"]
    assert main(argv) == 0
    return out


def _same_ids_in_transformers(folder, tok) -> None:
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    assert len(hf) == tok.vocab_size
    for text in SENTENCES:
        assert hf.encode(text, add_special_tokens=False) == tok.encode(text)


def test_wordpiece_is_a_bert_tokenizer(wordpiece):
    from transformers import AutoTokenizer

    tok = build_tokenizer(str(wordpiece))
    assert tok.vocab_size == VOCAB
    assert (tok.pad, tok.unk, tok.cls, tok.sep, tok.mask) == (0, 1, 2, 3, 4)
    assert tok.eod == tok.sep and tok.bos == tok.cls  # as megazoo's bert-wordpiece
    _same_ids_in_transformers(wordpiece, tok)
    hf = AutoTokenizer.from_pretrained(str(wordpiece), local_files_only=True)
    assert type(hf).__name__ == "BertTokenizer" and hf.mask_token_id == 4
    ids = hf("The Interpreter")["input_ids"]
    assert ids[0] == tok.cls and ids[-1] == tok.sep and ids[1:-1] == tok.encode("the interpreter")  # lowercased
    assert tok.decode(tok.encode(SENTENCES[0])) == SENTENCES[0].lower()
    assert build_tokenizer("hf:" + str(wordpiece)).fingerprint() == tok.fingerprint()
    from_vocab = build_tokenizer("bert-wordpiece:" + str(wordpiece / "vocab.txt"))
    assert from_vocab.encode(SENTENCES[1]) == tok.encode(SENTENCES[1])


def test_bpe_is_a_byte_level_gpt2_tokenizer(corpus, tmp_path):
    out = train_tokenizer("bpe", corpus, VOCAB, tmp_path / "bpe", progress=False)
    tok = build_tokenizer(str(out))
    assert tok.vocab_size == VOCAB and tok.eod == tok.eos == tok.pad == 0
    assert tok.token_to_id("<|endoftext|>") == 0 and tok.cls is None and tok.mask is None
    _same_ids_in_transformers(out, tok)
    for text in SENTENCES + ["  spaces, tabs\tand\nnewlines; caf\u00e9 \u65e5\u672c \U0001F600"]:
        assert tok.decode(tok.encode(text)) == text  # byte level: nothing is unknown


@pytest.mark.parametrize("model_type", ["unigram", "bpe"])
def test_sentencepiece_folder_encodes_as_its_model(corpus, tmp_path, model_type):
    out = train_tokenizer("sentencepiece", corpus, VOCAB, tmp_path / "spm", model_type=model_type,
                          specials=["<mask>"], progress=False)
    tok = build_tokenizer(str(out))
    spm = build_tokenizer("sentencepiece:" + str(out / "tokenizer.model"))
    assert tok.vocab_size == spm.vocab_size == VOCAB
    assert (tok.unk, tok.bos, tok.eos, tok.pad) == (0, 1, 2, 3) and tok.eod == tok.eos
    _same_ids_in_transformers(out, tok)
    assert tok.mask is not None and tok.mask == spm.mask == tok.token_to_id("<mask>")  # the role is declared
    # (a special token written in the text itself is where transformers and SentencePiece part ways)
    texts = SENTENCES + [" leading space", "two  spaces\nand a newline", "caf\u00e9 \u65e5\u672c", ""]
    for text in texts:
        assert tok.encode(text) == spm.encode(text), text  # tokenizer.json == the .model
        assert tok.decode(tok.encode(text)) == text


def test_a_trained_wordpiece_drives_bert_training(wordpiece, tmp_path, data_cache):  # noqa: F811
    from megazoo.core.train import Trainer
    from tests.train_cases import one_thread, text_model

    cfg = text_model("bert-tiny", tmp_path / "run", "train.steps=2", f"data.tokenizer={wordpiece}",
                     f"model.vocab_size={VOCAB}", "checkpoint.save=true")
    with one_thread():
        trainer = Trainer(cfg)
        try:
            mb = trainer.train_data.step(0)[0]
            summary = trainer.fit()
        finally:
            trainer.close()
    assert int(mb["input_ids"].max()) < VOCAB and bool((mb["input_ids"][:, 0] == 2).all())  # [CLS] first
    assert len(summary["losses"]) == 2 and all(loss == loss for loss in summary["losses"])
    # the run's checkpoint finds its tokenizer again: `megazoo embed` works on it
    from megazoo.zoo.embed import Embedder

    with one_thread():
        vectors = Embedder(tmp_path / "run" / "checkpoints").encode(SENTENCES, batch=3)
    assert vectors.shape == (len(SENTENCES), 64)


def _error(capsys, *argv) -> str:
    assert main(["tokenizer", "train", *map(str, argv), "--quiet"]) == 2
    err = capsys.readouterr().err
    # (megazoo/cli.py's boundary names the command `megazoo tokenizer`, or with its action once it knows it)
    assert err.count("\n") == 1 and err.startswith(("megazoo tokenizer train: error: ", "megazoo tokenizer: error: "))
    return err


def test_bad_requests_are_one_line(corpus, wordpiece, tmp_path, capsys):
    assert "exists and is not empty; choose another path or pass --overwrite" in _error(
        capsys, "--kind", "bpe", "--input", corpus[0], "--vocab-size", 500, "--out", wordpiece)
    assert f"missing input files: {tmp_path / 'a.txt'}, {tmp_path / 'b.txt'}" in _error(
        capsys, "--kind", "bpe", "--input", tmp_path / "a.txt", corpus[0], tmp_path / "b.txt",
        "--vocab-size", 500, "--out", tmp_path / "x")
    assert "--vocab-size 4 is smaller than the 5 special tokens ([PAD] [UNK] [CLS] [SEP] [MASK])" in _error(
        capsys, "--kind", "wordpiece", "--input", corpus[0], "--vocab-size", 4, "--out", tmp_path / "x")
    assert "byte-level BPE needs more than 256 byte symbols + 1 special tokens" in _error(
        capsys, "--kind", "bpe", "--input", corpus[0], "--vocab-size", 200, "--out", tmp_path / "x")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\nnot json\n')
    assert f"{bad}:2: not valid JSON" in _error(capsys, "--kind", "wordpiece", "--input", bad, "--vocab-size", 100,
                                                "--out", tmp_path / "x")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n")
    for kind in ("wordpiece", "bpe", "sentencepiece"):  # a vocabulary of specials alone is refused
        assert f"{blank}: no text to learn from (the input is empty or blank)" in _error(
            capsys, "--kind", kind, "--input", blank, "--vocab-size", 300, "--out", tmp_path / "x")
    assert not (tmp_path / "x").exists() and not list(tmp_path.glob(".x.tmp-*"))  # nothing left half-written
    assert (wordpiece / "tokenizer.json").is_file()  # the existing folder is untouched
