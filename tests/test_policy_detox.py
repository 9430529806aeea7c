"""Issue #36 for `megazoo task detox ...`, as a user runs the commands: filter's prefix on the
generations it reads, data onto an existing prompts file, sample onto its input or onto a file it
did not write, score caches continued but never damaged, generations matched to their prompts file,
undecodable text named by file and line, every numeric flag bounded; every refusal one line, exit 2,
nothing changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.cli_helpers import refused as _refused, run_cli, snapshot


def run(capsys, *argv: str) -> tuple[int, str]:
    code, err = run_cli(capsys, "task", "detox", *argv)
    assert "Traceback" not in err
    return code, err.strip()


def refused(capsys, root: Path, *argv: str) -> str:
    return _refused(capsys, root, "task", "detox", *argv)


def prompts_file(path, texts):
    path.write_text("".join(json.dumps({"prompt": {"text": t, "toxicity": 0.1 * i}}) + "\n"
                            for i, t in enumerate(texts)))
    return path


def generations_file(path, texts, **fields):
    path.write_text("".join(json.dumps({"id": i, "text": t, **fields}) + "\n" for i, t in enumerate(texts)))
    return path


# ---- filter --------------------------------------------------------------------------------------

def test_filter_prefix_equal_to_the_generations_stem_is_refused(tmp_path, capsys):
    gens = generations_file(tmp_path / "selfgen.jsonl", [f"sample number {i}" for i in range(70)])
    for extra in ([], ["--overwrite"]):
        err = refused(capsys, tmp_path, "filter", "--generations", str(gens), "--out-prefix", str(tmp_path / "selfgen"),
                      "--tokenizer", "gpt2", *extra)
        assert f"--out-prefix {tmp_path / 'selfgen'} (writes selfgen.jsonl) is the input --generations" in err
    assert len(gens.read_text().splitlines()) == 70


def test_filter_default_cache_on_the_input_is_refused(tmp_path, capsys):
    gens = generations_file(tmp_path / "kept.cache.jsonl", ["a text", "another text"])
    err = refused(capsys, tmp_path, "filter", "--generations", str(gens), "--out-prefix", str(tmp_path / "kept"),
                  "--tokenizer", "gpt2")
    assert "the score cache" in err and "is the input --generations" in err


def test_filter_rerun_needs_overwrite_and_a_failed_one_keeps_the_old_files(tmp_path, capsys):
    gens = generations_file(tmp_path / "gens.jsonl", ["The module reads files.", "Shut up, you stupid idiot.",
                                                       "A table follows.", "Every function returns."])
    prefix = tmp_path / "kept"
    base = ["filter", "--generations", str(gens), "--out-prefix", str(prefix), "--tokenizer", "gpt2"]
    code, err = run(capsys, *base)
    assert code == 0, err
    err = refused(capsys, tmp_path, *base, "--fraction", "0.25")
    assert "(writes kept.jsonl) exists and is not empty" in err
    before = snapshot(tmp_path)
    code, err = run(capsys, *base[:-1], "no-such-tokenizer", "--overwrite")
    assert code == 2 and len(err.splitlines()) == 1, err
    changed = {k for k in set(before) | set(snapshot(tmp_path)) if before.get(k) != snapshot(tmp_path).get(k)}
    assert changed <= {"kept.cache.jsonl"}  # the cache is continued; kept.jsonl/.bin/.idx as they were


# ---- data ----------------------------------------------------------------------------------------

def test_data_onto_an_existing_file_needs_overwrite(tmp_path, capsys):
    out = tmp_path / "prompts.jsonl"
    out.write_text("the user's own prompts\n")
    err = refused(capsys, tmp_path, "data", str(out), "--corpus-prompts", "3")
    assert f"OUT {out} exists and is not empty" in err
    code, err = run(capsys, "data", str(out), "--corpus-prompts", "3", "--overwrite")
    assert code == 0, err
    assert all("prompt" in json.loads(x) for x in out.read_text().splitlines())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prompts.jsonl"]


# ---- sample --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    from megazoo.core.data.tokenizers import _gpt2_dir
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.core.parallel.gather import full_state
    from megazoo.zoo.gpt import GPTModel, llama_layout
    from megazoo.zoo.io import save_model

    cfg = llama_layout(num_layers=1, hidden_size=16, num_heads=2, num_kv_heads=1, ffn_hidden_size=32,
                       vocab_size=50257, seq_length=32)
    out = tmp_path_factory.mktemp("detox-policy") / "ckpt"
    save_model(out, "llama", cfg, full_state(GPTModel(cfg).initialize(0), ParallelContext.single()),
               tokenizer=_gpt2_dir())
    return out


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_sample_out_equal_to_prompts_is_refused_though_resumable(tmp_path, ckpt, capsys):
    prompts = prompts_file(tmp_path / "p.jsonl", ["Hello", "The garden"])
    for extra in ([], ["--overwrite"]):
        err = refused(capsys, tmp_path, "sample", "--checkpoint", str(ckpt), "--prompts", str(prompts), "--out",
                      str(prompts), *extra)
        assert f"--out {prompts} is the input --prompts" in err


def test_sample_onto_a_file_it_did_not_write(tmp_path, ckpt, capsys, one_thread):
    out = tmp_path / "samples.jsonl"
    out.write_text('{"text": "the user\'s own samples"}\n')
    base = ["sample", "--checkpoint", str(ckpt), "--out", str(out), "--samples", "3", "--batch", "2",
            "--max-new-tokens", "2", "--no-progress"]
    err = refused(capsys, tmp_path, *base)
    assert f"{out}: exists and was not written by this stage" in err and "--overwrite" in err
    code, err = run(capsys, *base, "--overwrite")
    assert code == 0, err
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["samples.jsonl", "samples.jsonl.meta.json"]
    code, err = run(capsys, *base)  # resumable: the same command again finds every sample there
    assert code == 0, err


# ---- score: caches, matching, decoding --------------------------------------------------------------

@pytest.fixture
def scored(tmp_path):
    prompts = prompts_file(tmp_path / "prompts.jsonl", ["Hello there", "The garden", "You idiot"])
    gens = tmp_path / "gens.jsonl"
    gens.write_text("".join(json.dumps({"id": i, "prompt": p, "text": f"continuation {i}"}) + "\n"
                            for i, p in enumerate(["Hello there", "Hello there", "The garden", "The garden",
                                                   "You idiot", "You idiot"])))
    return prompts, gens


def score(capsys, prompts, gens, out, *extra):
    return run(capsys, "score", "--generations", str(gens), "--prompts", str(prompts), "--samples", "2",
               "--out", str(out), *extra)


def test_score_cache_is_continued_and_never_damaged(scored, tmp_path, capsys):
    prompts, gens = scored
    cache = tmp_path / "scores.cache.jsonl"
    code, err = score(capsys, prompts, gens, tmp_path / "a.json", "--cache", str(cache))
    assert code == 0, err
    lines = cache.read_text().splitlines()
    assert len(lines) == 6
    with open(cache, "a") as f:  # a run killed while appending: a torn record
        f.write('{"key": "ab')
    code, err = score(capsys, prompts, gens, tmp_path / "b.json", "--cache", str(cache))
    assert code == 0, err  # resumable: an existing cache needs no --overwrite
    assert cache.read_text().splitlines() == lines + ['{"key": "ab']  # every score was there: nothing appended
    more = tmp_path / "more.jsonl"
    more.write_text(gens.read_text().replace("continuation 5", "a new continuation"))
    code, err = score(capsys, prompts, more, tmp_path / "c.json", "--cache", str(cache))
    assert code == 0, err
    now = cache.read_text().splitlines()
    assert now[:6] == lines and len(now) == 7 and json.loads(now[6])["key"]  # the torn record cut, one score added

    notes = tmp_path / "notes.txt"  # --cache on a file that is not a cache: refused, not appended to
    notes.write_text("my notes\nmore notes")
    err = refused(capsys, tmp_path, "score", "--generations", str(gens), "--prompts", str(prompts), "--samples", "2",
                  "--out", str(tmp_path / "d.json"), "--cache", str(notes))
    assert f"{notes}:1: not a score cache line" in err
    notes.write_text("one line without a newline")
    err = refused(capsys, tmp_path, "score", "--generations", str(gens), "--prompts", str(prompts), "--samples", "2",
                  "--out", str(tmp_path / "d.json"), "--cache", str(notes))
    assert f"{notes}:1: not a score cache line" in err


def test_score_cache_on_an_input_is_refused(scored, tmp_path, capsys):
    prompts, gens = scored
    err = refused(capsys, tmp_path, "score", "--generations", str(gens), "--prompts", str(prompts), "--samples", "2",
                  "--out", str(tmp_path / "s.json"), "--cache", str(prompts))
    assert f"--cache {prompts} is the input --prompts" in err


def test_score_out_equal_to_an_input_is_refused(scored, tmp_path, capsys):
    prompts, gens = scored
    err = refused(capsys, tmp_path, "score", "--generations", str(gens), "--prompts", str(prompts), "--samples", "2",
                  "--out", str(gens), "--overwrite")
    assert f"--out {gens} is the input --generations" in err
    other = generations_file(tmp_path / "x.cache.jsonl", ["a"] * 6)
    err = refused(capsys, tmp_path, "score", "--generations", str(other), "--prompts", str(prompts), "--samples", "2",
                  "--out", str(tmp_path / "x.json"))
    assert "the score cache" in err and "is the input --generations" in err


def test_generations_that_do_not_match_the_prompts_name_both_files(scored, tmp_path, capsys):
    prompts, gens = scored
    two = prompts_file(tmp_path / "two.jsonl", ["Hello there", "The garden"])
    err = refused(capsys, tmp_path, "score", "--generations", str(gens), "--prompts", str(two), "--samples", "2",
                  "--out", str(tmp_path / "s.json"))
    assert f"{gens}: 6 generations are 3 prompts x 2 (--samples), but {two} has 2 prompts" in err
    other = prompts_file(tmp_path / "other.jsonl", ["Hello there", "A lake", "You idiot"])
    err = refused(capsys, tmp_path, "score", "--generations", str(gens), "--prompts", str(other), "--samples", "2",
                  "--out", str(tmp_path / "s.json"))
    assert f"{gens}:3: a generation of prompt 'The garden'" in err and str(other) in err
    shuffled = tmp_path / "shuffled.jsonl"
    lines = gens.read_text().splitlines()
    shuffled.write_text("\n".join([lines[1], lines[0], *lines[2:]]) + "\n")
    err = refused(capsys, tmp_path, "score", "--generations", str(shuffled), "--prompts", str(prompts), "--samples",
                  "2", "--out", str(tmp_path / "s.json"))
    assert f"{shuffled}:1: id 1 on row 0" in err and str(prompts) in err


def test_undecodable_files_name_file_and_line(scored, tmp_path, capsys):
    prompts, gens = scored
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(gens.read_bytes() + b'{"text": "\xff"}\n')
    err = refused(capsys, tmp_path, "score", "--generations", str(bad), "--prompts", str(prompts), "--samples", "2",
                  "--out", str(tmp_path / "s.json"))
    assert f"{bad}:7: not valid UTF-8" in err
    badp = tmp_path / "badp.jsonl"
    badp.write_bytes(b'{"prompt": {"text": "ok"}}\n{"prompt": {"text": "\xc3\x28"}}\n')
    err = refused(capsys, tmp_path, "score", "--generations", str(gens), "--prompts", str(badp), "--samples", "2",
                  "--out", str(tmp_path / "s.json"))
    assert f"{badp}:2: not valid UTF-8" in err
    cache = tmp_path / "c.jsonl"
    cache.write_bytes(b'\xff\n')
    err = refused(capsys, tmp_path, "score", "--generations", str(gens), "--prompts", str(prompts), "--samples", "2",
                  "--out", str(tmp_path / "s.json"), "--cache", str(cache))
    assert f"{cache}:1: not UTF-8 text" in err


# ---- bounds --------------------------------------------------------------------------------------

@pytest.mark.parametrize("stage, flag, value", [
    ("score", "--samples", "0"), ("score", "--samples", "1000000000"), ("score", "--qps", "0"),
    ("score", "--qps", "nan"), ("filter", "--fraction", "0"), ("filter", "--fraction", "1.5"),
    ("filter", "--fraction", "inf"), ("data", "--corpus-prompts", "-1"),
    ("data", "--corpus-prompts", "1e12"), ("data", "--seed", "-2"),
    ("sample", "--samples", "0"), ("sample", "--samples", "100000000000"), ("sample", "--top-p", "0"),
    ("sample", "--top-p", "1.5"), ("sample", "--temperature", "0"), ("sample", "--temperature", "nan"),
    ("sample", "--max-new-tokens", "0"), ("sample", "--max-new-tokens", "1000000000"), ("sample", "--batch", "0"),
    ("sample", "--batch", "100000000"), ("sample", "--tp", "0"), ("sample", "--pp", "100000"),
    ("sample", "--seed", str(2**70)), ("evaluate", "--samples", "-1"), ("evaluate", "--top-p", "-0.5"),
])
def test_numeric_flags_are_bounded(stage, flag, value, tmp_path, capsys):
    f = generations_file(tmp_path / "in.jsonl", ["a"])
    argv = {"score": ["score", "--generations", str(f), "--prompts", str(f), "--out", str(tmp_path / "o.json")],
            "filter": ["filter", "--generations", str(f), "--out-prefix", str(tmp_path / "k"), "--tokenizer", "gpt2"],
            "data": ["data", str(tmp_path / "p.jsonl")],
            "sample": ["sample", "--checkpoint", str(f), "--out", str(tmp_path / "s.jsonl")],
            "evaluate": ["evaluate", "--prompts", str(f), "--checkpoint", str(f), "--out", str(tmp_path / "e.json")]}
    before = snapshot(tmp_path)
    code, err = run(capsys, *argv[stage], f"{flag}={value}")
    assert code == 2 and f"argument {flag}" in err, err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("key, value", [("samples", 0), ("samples", 10**9), ("samples", True), ("top_p", 2.0),
                                        ("top_p", float("nan")), ("max_new_tokens", 10**9), ("batch_size", 0),
                                        ("seed", -1), ("samples", 2.5)])
def test_leaderboard_entry_numbers_are_bounded(key, value, tmp_path):
    from megazoo.tasks.detox.leaderboard import EVALUATION

    prompts = prompts_file(tmp_path / "p.jsonl", ["Hello"])
    with pytest.raises(ValueError, match=f"suite option `{key}: "):
        EVALUATION.run(str(tmp_path / "no-model"), str(prompts), {key: value})


def test_leaderboard_cache_may_not_be_an_input(tmp_path):
    from megazoo.core.fs import OutputRefused
    from megazoo.tasks.detox.leaderboard import EVALUATION

    prompts = prompts_file(tmp_path / "p.jsonl", ["Hello"])
    before = snapshot(tmp_path)
    with pytest.raises(OutputRefused, match="cache .* is the input path"):
        EVALUATION.run(str(tmp_path / "no-model"), str(prompts), {"cache": str(prompts)})
    assert snapshot(tmp_path) == before
