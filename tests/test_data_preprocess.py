"""`megazoo preprocess`: round trip, workers, sentence splitting, merge, and every bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from megazoo.cli import main as megazoo_main
from megazoo.core.data.errors import DataError
from megazoo.core.data.indexed import IndexedDataset
from megazoo.core.data.preprocess import preprocess
from megazoo.core.data.text import split_sentences
from megazoo.core.data.tokenizers import HFTokenizer
from tests.test_data_common import SAMPLE_TEXTS, bert, data_cache, gpt2, write_jsonl  # noqa: F401


def test_cli_round_trip_jsonl(tmp_path, gpt2, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", SAMPLE_TEXTS)
    rc = megazoo_main(["preprocess", "--input", str(src), "--tokenizer", "gpt2", "--output-prefix",
                       str(tmp_path / "out" / "p"), "--append-eod", "--no-progress"])
    assert rc == 0
    assert "35 documents" in capsys.readouterr().out
    ds = IndexedDataset(tmp_path / "out" / "p")
    assert ds.dtype == np.uint16 and ds.num_documents == len(SAMPLE_TEXTS)
    for j, text in enumerate(SAMPLE_TEXTS):
        assert ds.document(j).tolist() == gpt2.encode(text) + [gpt2.eod]
        assert gpt2.decode(ds.document(j)[:-1]) == text


def test_workers_give_identical_bytes_and_progress(tmp_path, gpt2, capsys, monkeypatch):
    import megazoo.core.data.preprocess as pp

    monkeypatch.setattr(pp, "CHUNK_DOCS", 4)  # several chunks, so ordering across workers matters
    a = write_jsonl(tmp_path / "a.jsonl", SAMPLE_TEXTS)
    b = write_jsonl(tmp_path / "b.jsonl", SAMPLE_TEXTS[::-1])
    one = preprocess([str(a), str(b)], gpt2, str(tmp_path / "one"), workers=1, append_eod=True, progress=False)
    two = preprocess([str(a), str(b)], gpt2, str(tmp_path / "two"), workers=2, append_eod=True, progress=True)
    assert "tok_per_s" in capsys.readouterr().err  # the progress bar shows throughput
    assert one.tokens == two.tokens and one.documents == 2 * len(SAMPLE_TEXTS)
    for ext in (".bin", ".idx"):
        assert (tmp_path / f"one{ext}").read_bytes() == (tmp_path / f"two{ext}").read_bytes()


def test_split_sentences_and_text_modes(tmp_path, bert):
    text = tmp_path / "doc.txt"
    text.write_text("First sentence here. Second one follows!\nAnother doc. With two.\n\n"
                    "Third doc line one.\nthird doc line two.\n", encoding="utf-8")
    preprocess([str(text)], bert, str(tmp_path / "s"), split_sentences_=True, progress=False)
    ds = IndexedDataset(tmp_path / "s")
    assert ds.num_documents == 4  # one per non-blank line
    assert list(np.diff(ds.document_indices)) == [2, 2, 1, 1]
    assert bert.decode(ds[0]) == "first sentence here."
    preprocess([str(text)], bert, str(tmp_path / "b"), text_mode="blank", progress=False)
    assert IndexedDataset(tmp_path / "b").num_documents == 2
    preprocess([str(text)], bert, str(tmp_path / "f"), text_mode="file", split_sentences_=True, progress=False)
    ds = IndexedDataset(tmp_path / "f")
    assert ds.num_documents == 1 and len(ds) == 5


def test_sentence_splitter():
    assert split_sentences("Dr. Smith arrived. He sat down! Why? Because e.g. it rained. J. R. R. Tolkien wrote.") == [
        "Dr. Smith arrived.", "He sat down!", "Why?", "Because e.g. it rained.", "J. R. R. Tolkien wrote."]
    assert split_sentences("one para\n\ntwo para") == ["one para", "two para"]


def test_cli_merge(tmp_path, gpt2):
    a = write_jsonl(tmp_path / "a.jsonl", SAMPLE_TEXTS[:5])
    b = write_jsonl(tmp_path / "b.jsonl", SAMPLE_TEXTS[5:9])
    for name, src in (("a", a), ("b", b)):
        preprocess([str(src)], gpt2, str(tmp_path / name), progress=False)
    rc = megazoo_main(["preprocess", "--merge", str(tmp_path / "a"), str(tmp_path / "b"),
                       "--output-prefix", str(tmp_path / "ab")])
    assert rc == 0
    ds = IndexedDataset(tmp_path / "ab")
    assert [ds.document(j).tolist() for j in range(ds.num_documents)] == [gpt2.encode(t) for t in SAMPLE_TEXTS[:9]]


# ---- bad input: a clear error naming the file (and line), nothing left behind ----------------

def _assert_nothing_written(tmp_path, prefix="out"):
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(prefix)]
    assert leftovers == [], leftovers


def test_empty_input(tmp_path, gpt2, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(DataError, match=r"empty\.jsonl: empty input: .*the file is empty"):
        preprocess([str(empty)], gpt2, str(tmp_path / "out"), progress=False)
    blank = tmp_path / "blank.txt"
    blank.write_text("\n   \n\n")
    good = write_jsonl(tmp_path / "good.jsonl", SAMPLE_TEXTS[:2])
    with pytest.raises(DataError, match=r"blank\.txt: empty input: .*every record is blank"):
        preprocess([str(good), str(blank)], gpt2, str(tmp_path / "out"), progress=False)
    _assert_nothing_written(tmp_path)
    rc = megazoo_main(["preprocess", "--input", str(empty), "--output-prefix", str(tmp_path / "out")])
    assert rc == 2  # a user's mistake: exit 2, as every command (docs/errors.md)
    err = capsys.readouterr().err
    assert err.startswith("megazoo preprocess: error:") and "empty.jsonl" in err and err.count("\n") == 1


def test_jsonl_line_without_key(tmp_path, gpt2):
    src = tmp_path / "data.jsonl"
    lines = [json.dumps({"text": t}) for t in SAMPLE_TEXTS[:200]] * 3
    lines.insert(77, json.dumps({"body": "no text key here", "id": 3}))
    src.write_text("\n".join(lines) + "\n")
    for workers in (1, 2):
        with pytest.raises(DataError, match=r"data\.jsonl:78: no key `text` in this JSON line \(its keys: body, id\)"):
            preprocess([str(src)], gpt2, str(tmp_path / "out"), workers=workers, progress=False)
    _assert_nothing_written(tmp_path)
    # the right key works
    (tmp_path / "ok.jsonl").write_text(json.dumps({"body": "some text"}) + "\n")
    stats = preprocess([str(tmp_path / "ok.jsonl")], gpt2, str(tmp_path / "ok"), json_key="body", progress=False)
    assert stats.documents == 1


def test_bad_json_and_bad_utf8(tmp_path, gpt2):
    src = tmp_path / "broken.jsonl"
    src.write_text(json.dumps({"text": "fine"}) + "\n{\"text\": \"unterminated\n")
    with pytest.raises(DataError, match=r"broken\.jsonl:2: not valid JSON"):
        preprocess([str(src)], gpt2, str(tmp_path / "out"), progress=False)
    bad = tmp_path / "latin.txt"
    bad.write_bytes(b"good line\ncaf\xe9 latin-1\n")
    with pytest.raises(DataError, match=r"latin\.txt:2: not valid UTF-8"):
        preprocess([str(bad)], gpt2, str(tmp_path / "out"), progress=False)
    with pytest.raises(DataError, match=r"missing\.jsonl: no such input file"):
        preprocess([str(tmp_path / "missing.jsonl")], gpt2, str(tmp_path / "out"), progress=False)
    _assert_nothing_written(tmp_path)


def _big_vocab_tokenizer() -> HFTokenizer:
    """A word-level tokenizer with 70,000 entries: too many for uint16."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, **{f"w{i}": i for i in range(1, 70000)}}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return HFTokenizer(backend, "big-wordlevel", {"eod": 69999, "unk": 0})


class Understated(HFTokenizer):
    """A tokenizer that says it has 1000 tokens (module level: the workers receive it pickled)."""

    vocab_size = 1000


def test_vocabulary_too_large_for_dtype(tmp_path):
    tok = _big_vocab_tokenizer()
    src = tmp_path / "words.txt"
    src.write_text("w1 w2 w3\nw69998 w5\n")
    with pytest.raises(DataError, match=r"out\.bin: the vocabulary of big-wordlevel has 70000 tokens, too many "
                                        r"for the token dtype uint16"):
        preprocess([str(src)], tok, str(tmp_path / "out"), dtype="uint16", progress=False)
    _assert_nothing_written(tmp_path)
    # a tokenizer that understates its vocabulary: the overflowing record is named by file:line
    liar = Understated(tok.backend, "liar", {"eod": 1})
    with pytest.raises(DataError, match=r"words\.txt:2: token id 69998 does not fit the token dtype uint16"):
        preprocess([str(src)], liar, str(tmp_path / "out"), workers=2, progress=False)
    _assert_nothing_written(tmp_path)
    stats = preprocess([str(src)], tok, str(tmp_path / "out"), progress=False)  # auto -> int32
    ds = IndexedDataset(tmp_path / "out")
    assert ds.dtype == np.int32 and ds.document(1).tolist() == [69998, 5] and stats.tokens == 5


def test_existing_output_survives_a_failed_run(tmp_path, gpt2):
    good = write_jsonl(tmp_path / "good.jsonl", SAMPLE_TEXTS[:3])
    preprocess([str(good)], gpt2, str(tmp_path / "out"), progress=False)
    before = {p: (tmp_path / p).read_bytes() for p in ("out.bin", "out.idx")}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "a"}) + "\n" + json.dumps({"nope": 1}) + "\n")
    with pytest.raises(DataError, match=r"bad\.jsonl:2"):
        preprocess([str(bad)], gpt2, str(tmp_path / "out"), workers=2, progress=False)
    assert {p: (tmp_path / p).read_bytes() for p in ("out.bin", "out.idx")} == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out")) == ["out.bin", "out.idx"]
