"""Issue #36 for the core commands, as a user runs them (`megazoo.cli.main`): `preprocess`,
`tokenizer train`, `train` (and every recipe-driven stage through the same config checks) and
`quickstart`. Each refusal exits 2 with one line naming the flag, key or file, and leaves every input
and bystander byte-identical."""

from __future__ import annotations

import time

import pytest

from megazoo.cli import main
from tests.cli_helpers import run_cli, snapshot as _digest


def _refused(capsys, argv: list[str], *expect: str) -> str:
    """Run argv; it must exit 2 with one line that holds every `expect`."""
    code, err = run_cli(capsys, *argv)  # argparse's own refusals: usage line + error line
    assert code == 2, err
    last = err.strip().splitlines()[-1]
    assert "Traceback" not in err and "error:" in last, err
    for text in expect:
        assert text in last, last
    return last


@pytest.fixture
def box(tmp_path):
    (tmp_path / "bystander.txt").write_text("a bystander: must survive\n")
    (tmp_path / "docs.txt").write_text("hello world, a first line\nand a second line of text\n" * 20)
    return tmp_path


# ---- preprocess ----------------------------------------------------------------------------------

def test_preprocess_output_prefix_on_the_input_is_refused(box, capsys):
    before = _digest(box)
    _refused(capsys, ["preprocess", "--input", box / "docs.txt", "--output-prefix", box / "docs.txt"],
             "--output-prefix", "docs.txt")
    _refused(capsys, ["preprocess", "--input", box / "docs.txt", "--output-prefix", box, "--overwrite"],
             "--output-prefix")
    assert _digest(box) == before


def test_preprocess_existing_outputs_need_overwrite(box, capsys):
    assert main(["preprocess", "--input", str(box / "docs.txt"), "--output-prefix", str(box / "d"),
                 "--no-progress"]) == 0
    before = _digest(box)
    _refused(capsys, ["preprocess", "--input", box / "docs.txt", "--output-prefix", box / "d"],
             "--output-prefix", "d.bin", "--overwrite")
    assert _digest(box) == before
    assert main(["preprocess", "--input", str(box / "docs.txt"), "--output-prefix", str(box / "d"),
                 "--no-progress", "--overwrite"]) == 0
    # merging a dataset into its own files is refused: they are its input
    _refused(capsys, ["preprocess", "--merge", box / "d", "--output-prefix", box / "d", "--overwrite"],
             "--merge", "d.bin")
    assert sorted(p.name for p in box.iterdir()) == ["bystander.txt", "d.bin", "d.idx", "docs.txt"]


@pytest.mark.parametrize("flag, value", [("--workers", "0"), ("--workers", "100000"), ("--vocab-extra-ids", "-1"),
                                         ("--vocab-extra-ids", "1e9"), ("--workers", "nan")])
def test_preprocess_numeric_flags_are_bounded(box, capsys, flag, value):
    before = _digest(box)
    _refused(capsys, ["preprocess", "--input", box / "docs.txt", "--output-prefix", box / "d", flag, value], flag)
    assert _digest(box) == before


def test_preprocess_undecodable_input_names_file_and_line(box, capsys):
    bad = box / "bad.txt"
    bad.write_bytes(b"fine line\nbad \xff\xfe byte\n")
    before = _digest(box)
    _refused(capsys, ["preprocess", "--input", bad, "--output-prefix", box / "d", "--no-progress"],
             f"{bad}:2: not valid UTF-8")
    assert _digest(box) == before


# ---- tokenizer train -----------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["1e11", str(10**11), str(2**24 + 1), "0", "-3"])
def test_tokenizer_vocab_size_is_bounded(box, capsys, value):
    before = _digest(box)
    _refused(capsys, ["tokenizer", "train", "--kind", "bpe", "--input", box / "docs.txt", "--vocab-size", value,
                      "--out", box / "tok", "--quiet"], "--vocab-size")
    assert _digest(box) == before


def test_tokenizer_out_rules(box, capsys):
    before = _digest(box)
    base = ["tokenizer", "train", "--kind", "wordpiece", "--input", box / "docs.txt", "--vocab-size", "120", "--quiet"]
    _refused(capsys, [*base, "--out", box / "docs.txt"], "--out", "is the input")
    _refused(capsys, [*base, "--out", box], "--out")
    mine = box / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's own\n")
    before = _digest(box)
    _refused(capsys, [*base, "--out", mine], "--out", "--overwrite")
    assert _digest(box) == before
    assert main([str(a) for a in [*base, "--out", mine, "--overwrite"]]) == 0
    assert (mine / "tokenizer.json").is_file() and not (mine / "notes.txt").exists()
    assert not [p for p in box.iterdir() if ".tmp-" in p.name or ".old-" in p.name]


def test_tokenizer_undecodable_input_names_file_and_line(box, capsys):
    bad = box / "bad.txt"
    bad.write_bytes(b"fine line\nbad \xff byte\n")
    _refused(capsys, ["tokenizer", "train", "--kind", "bpe", "--input", bad, "--vocab-size", "300",
                      "--out", box / "tok", "--quiet"], f"{bad}:2: not valid UTF-8")
    assert not (box / "tok").exists() and not list(box.glob(".tok.tmp-*"))


def test_tokenizer_one_long_line_without_spaces_trains_quickly(tmp_path, capsys):
    """Issue #36: BPE on one 5 MB line without spaces ran for more than 300 s (one 5 MB "word");
    the text is now cut into pieces of at most MAX_PIECE_CHARS, and training takes seconds."""
    import random

    from megazoo.core.data.tokenizers import build_tokenizer

    rng = random.Random(0)
    src = tmp_path / "long.txt"
    src.write_text("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=5_000_000)) + "\n")
    start = time.monotonic()
    assert main(["tokenizer", "train", "--kind", "bpe", "--input", str(src), "--vocab-size", "300",
                 "--out", str(tmp_path / "tok"), "--quiet"]) == 0
    took = time.monotonic() - start
    assert took < 90, f"{took:.0f} s"  # ~5 CPU-seconds; generous for a loaded machine
    tok = build_tokenizer(str(tmp_path / "tok"))
    assert tok.vocab_size == 300
    assert not list(tmp_path.glob(".tok.tmp-*"))


def test_pieces_cut_long_texts_and_join_back():
    from megazoo.core.data.tokenizer_train import pieces

    text = "a" * 2500 + " word " * 400 + "b" * 10
    parts = list(pieces(text, 1000))
    assert "".join(parts) == text and max(map(len, parts)) <= 1000
    assert all(p.endswith(" ") for p in parts[3:-1])  # cut after a space where there is one
    assert list(pieces("short text", 1000)) == ["short text"]


def test_tokenizer_time_limit_is_a_clear_error_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    """A trainer that overruns --time-limit: one line, exit 2, no scratch folder left."""
    from megazoo.core.data import tokenizer_train

    def slow(texts, folder, *args):
        time_limit = args[-1]
        tokenizer_train.within_time(lambda: time.sleep(3), time_limit, "tokenizer training")

    monkeypatch.setattr(tokenizer_train, "_bpe", slow)
    (tmp_path / "docs.txt").write_text("some text\n")
    _refused(capsys, ["tokenizer", "train", "--kind", "bpe", "--input", tmp_path / "docs.txt", "--vocab-size",
                      "300", "--out", tmp_path / "tok", "--time-limit", "1", "--quiet"],
             "took longer than the time limit of 1 s", "--time-limit")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.txt"]
    _refused(capsys, ["tokenizer", "train", "--kind", "bpe", "--input", tmp_path / "docs.txt", "--vocab-size",
                      "300", "--out", tmp_path / "tok", "--time-limit", "inf", "--quiet"], "--time-limit")


# ---- train: the config checks (before any rank starts) --------------------------------------------

def _train(capsys, tmp_path, *sets, nproc=None, expect=()):
    argv = ["train", "gpt-tiny", "--set", "train.steps=1", f"log.dir={tmp_path / 'run'}", *sets]
    if nproc:
        argv += ["--nproc", str(nproc)]
    before = _digest(tmp_path)
    line = _refused(capsys, argv, *expect)
    assert _digest(tmp_path) == before  # refused before anything was written (no run folder either)
    return line


def test_experts_on_no_layer_are_refused(tmp_path, capsys):
    _train(capsys, tmp_path, "model.moe.every=7", expect=("model.moe.every=7", "num_layers=2", "no layer gets experts"))


def test_expert_parallelism_on_a_dense_model_is_refused(tmp_path, capsys):
    _train(capsys, tmp_path, "parallel.ep=2", "train.global_batch=8", nproc=2,
           expect=("parallel.ep=2", "no experts"))


@pytest.mark.parametrize("setting", ["model.adapter_size=1e8", "model.vocab_size=1000000000",
                                     "model.hidden_size=200000", "model.num_layers=10000000",
                                     "train.micro_batch=100000000 train.global_batch=100000000"])
def test_sizes_beyond_memory_are_refused_with_the_figure(tmp_path, capsys, setting):
    line = _train(capsys, tmp_path, *setting.split(), expect=("GiB of memory", "GiB are available"))
    assert "parameters" in line


@pytest.mark.parametrize("setting", ["train.lr=.nan", "train.lr=.inf", "train.weight_decay=-.inf",
                                     "model.dropout=.nan", "train.seed=-1", "checkpoint.keep=10000000000"])
def test_nan_infinity_and_out_of_range_settings_are_refused(tmp_path, capsys, setting):
    _train(capsys, tmp_path, setting, expect=(setting.split("=")[0],))


def test_run_directory_apart_from_inputs(tmp_path, capsys):
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "config.json").write_text("{}")
    _train(capsys, tmp_path, f"train.init_from={weights}", f"log.dir={weights}",
           expect=("log.dir", "is the input train.init_from"))
    _train(capsys, tmp_path, f"train.init_from={weights}", f"log.dir={weights / 'run'}",
           expect=("log.dir", "inside the input folder train.init_from"))
    data = tmp_path / "data"
    data.mkdir()
    for suffix in (".bin", ".idx"):
        (data / f"web{suffix}").write_bytes(b"x")
    _train(capsys, tmp_path, f"data.path={data / 'web'}", f"log.dir={data}",
           expect=("log.dir", "contains the input data.path"))
    _train(capsys, tmp_path, f"data.path=[1.0, {data / 'web'}]", f"checkpoint.dir={data}",
           expect=("checkpoint.dir", "data.path"))


def test_an_existing_run_folder_is_resumable(tmp_path):
    """The run directory is resumable (DESIGN 3): an existing, non-empty one passes the output check
    (check_one_run then refuses a folder that holds another run)."""
    from megazoo.core.train.config import RunConfig
    from megazoo.core.train.rundir import check_outputs

    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 1}\n')
    cfg = RunConfig.load("gpt-tiny", [f"log.dir={run}"])
    check_outputs(cfg)


@pytest.mark.parametrize("flag", [["--nproc", "0"], ["--nproc", "100000"]])
def test_train_nproc_is_bounded(tmp_path, capsys, flag):
    _refused(capsys, ["train", "gpt-tiny", *flag], "--nproc")


# ---- quickstart ----------------------------------------------------------------------------------

def test_quickstart_refuses_a_non_empty_folder_without_overwrite(box, capsys):
    mine = box / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's own\n")
    before = _digest(box)
    _refused(capsys, ["quickstart", "--out", mine, "--fast"], "--out", "--overwrite")
    _refused(capsys, ["quickstart", "--out", box / "docs.txt", "--fast"], "--out")
    assert _digest(box) == before


@pytest.mark.parametrize("value", ["0", "1000000", "nan"])
def test_quickstart_steps_are_bounded(tmp_path, capsys, value):
    _refused(capsys, ["quickstart", "--out", tmp_path / "qs", "--steps", value], "--steps")
    assert not (tmp_path / "qs").exists()


def test_quickstart_bad_override_is_one_line_and_leaves_the_old_run(box, capsys):
    """--overwrite on an earlier run with a bad --set: refused in the scratch folder, old run intact."""
    old = box / "old"
    old.mkdir()
    (old / "summary.md").write_text("the earlier run\n")
    before = _digest(box)
    _refused(capsys, ["quickstart", "--out", old, "--overwrite", "--fast", "--set", "train.setps=3"],
             "train.setps", "train.steps")
    assert _digest(box) == before
