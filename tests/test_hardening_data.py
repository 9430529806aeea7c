"""Issue 17, data loss and confinement, through the command line: a damaged or foreign checkpoint,
a run folder of another run, an output folder that overlaps the input, a folder that cannot be
written or a full disk, crafted file names, a run name that climbs out of runs/, and damaged
weights files. Each ends in one line naming the file or key and what to do, with no traceback, and
the files hashed before are unchanged after."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import pickle
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from megazoo.cli import main
from megazoo.core.checkpoint import CheckpointError, load_full_model_state
from megazoo.core.checkpoint.planner import safe_load_metadata
from megazoo.core.checkpoint.storage import crc32_file, newest_checkpoint

os.environ.setdefault("MEGAZOO_PEAK_TFLOPS", "1")  # no peak measurement in tests

# `megazoo train` reports a refused run from inside the rank (run_in_rank): a refused setting, folder
# or checkpoint is a user mistake there too, one line and exit 2.
TRAIN_REFUSED = (2,)
TINY = ["train.steps=2", "train.global_batch=4", "train.micro_batch=2", "model.seq_length=16", "model.vocab_size=300",
        "train.eval_iters=1", "log.progress=false", "log.plot=false", "train.warmup=1", "checkpoint.interval=1"]


def train(run: Path, *sets: str) -> int:
    return main(["train", "gpt-tiny", "--set", *TINY, f"log.dir={run}", *sets])


def digest(folder: Path) -> dict[str, str]:
    """relative path -> sha256 of every file under `folder`."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(folder).rglob("*")) if p.is_file()}


def one_line(capsys, *needles: str) -> str:
    """The command's error: exactly one `megazoo ...: error: ...` line on stderr (a training run
    may have reported its start before), no traceback, holding every needle."""
    text = capsys.readouterr().err
    err = [line for line in text.splitlines() if line.startswith("megazoo") and ": error: " in line]
    assert len(err) == 1 and "Traceback" not in text, text
    for needle in needles:
        assert needle in err[0], (needle, err[0])
    return err[0]


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A finished 2-step run with checkpoints iter_0000001 and iter_0000002 (copied per test)."""
    run = tmp_path_factory.mktemp("trained") / "run"
    assert train(run) == 0
    assert sorted(p.name for p in (run / "checkpoints").glob("iter_*")) == ["iter_0000001", "iter_0000002"]
    return run


@pytest.fixture
def run(trained, tmp_path, capsys) -> Path:
    out = tmp_path / "run"
    shutil.copytree(trained, out)
    capsys.readouterr()
    return out


def steps(run: Path) -> list[int]:
    return [r["step"] for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())
            if r.get("split") != "valid"]


# --- 1: an unreadable newest checkpoint stops resume=auto -------------------------------------
@pytest.mark.parametrize("damage", ["truncated", "missing", "no tensor list"])
def test_unreadable_newest_checkpoint_stops_the_run(run, capsys, damage):
    meta = run / "checkpoints" / "iter_0000002" / "meta.json"
    if damage == "truncated":
        meta.write_text(meta.read_text()[:200])
    elif damage == "missing":
        meta.unlink()
    else:  # valid JSON, marked complete, but a field loading needs is gone
        meta.write_text(json.dumps({k: v for k, v in json.loads(meta.read_text()).items() if k != "tensors"}))
    before = digest(run)
    assert train(run, "train.steps=3") in TRAIN_REFUSED
    older = run / "checkpoints" / "iter_0000001"
    one_line(capsys, f"checkpoint {run / 'checkpoints' / 'iter_0000002'} is unreadable",
             f"checkpoint.resume={older}")
    assert digest(run) == before  # nothing overwritten, metrics.jsonl untouched
    # export-hf of the run's folder does not fall back to the older checkpoint either
    assert main(["export-hf", str(run / "checkpoints"), str(run.parent / "hf")]) == 2
    one_line(capsys, "iter_0000002 is unreadable")
    assert not (run.parent / "hf").exists()
    # the way out the message names: resume from the older one; metrics hold each step once
    assert train(run, "train.steps=3", f"checkpoint.resume={older}") == 0
    assert steps(run) == [1, 2, 3]
    assert newest_checkpoint(run / "checkpoints").name == "iter_0000003"


def test_latest_must_agree_with_the_scan(run, capsys):
    root = run / "checkpoints"
    shutil.rmtree(root / "iter_0000002")  # `latest` still names it
    before = digest(run)
    assert train(run, "train.steps=3") in TRAIN_REFUSED
    one_line(capsys, f"{root / 'latest'} names iter_0000002",
             f"the newest complete checkpoint is {root / 'iter_0000001'}")
    assert digest(run) == before
    (root / "latest").write_text("../../elsewhere\n")
    with pytest.raises(CheckpointError, match=r"latest holds '\.\./\.\./elsewhere', not a checkpoint name"):
        newest_checkpoint(root)
    # a kill between the commit's rename and the marker update leaves `latest` one behind: fine
    (root / "latest").write_text("iter_0000000\n")
    assert newest_checkpoint(root).name == "iter_0000001"


# --- 2: a run folder belongs to one run --------------------------------------------------------
def test_fresh_run_into_an_earlier_runs_folder_is_refused(run, trained, tmp_path, capsys):
    before = digest(run)
    assert train(run, "checkpoint.resume=none") in TRAIN_REFUSED
    one_line(capsys, f"run directory {run} already holds an earlier run", "iter_0000001..iter_0000002",
             "checkpoint.resume=auto", "log.dir")
    # resuming another run's checkpoint into it would mix them as well
    assert train(run, f"checkpoint.resume={trained / 'checkpoints'}") in TRAIN_REFUSED
    one_line(capsys, "another run's checkpoint")
    assert digest(run) == before
    # metrics of a run without checkpoints: resume=auto has nothing to continue
    other = tmp_path / "metrics-only"
    other.mkdir()
    (other / "metrics.jsonl").write_text('{"step": 1, "loss": 5.0}\n')
    assert train(other, "checkpoint.resume=auto") in TRAIN_REFUSED
    one_line(capsys, "no checkpoint to continue from", "Give this run its own log.dir")
    assert (other / "metrics.jsonl").read_text() == '{"step": 1, "loss": 5.0}\n'


# --- 3: export-hf / import-hf never write over their input -------------------------------------
def test_export_and_import_refuse_overlapping_folders(run, tmp_path, capsys):
    ckpt = run / "checkpoints"
    hf = tmp_path / "hf"
    assert main(["export-hf", str(ckpt), str(hf)]) == 0
    capsys.readouterr()
    before, hf_before = digest(run), digest(hf)
    # the output policy (core/fs/policy.py) refuses them before anything is read
    for out, relation in ((ckpt, "is the input"), (ckpt / "hf", "lies inside the input folder"),
                          (run, "contains the input")):
        for overwrite in ([], ["--overwrite"]):
            assert main(["export-hf", str(ckpt), str(out), *overwrite]) == 2
            one_line(capsys, f"OUT_DIR {out.resolve()} {relation} CHECKPOINT {ckpt}")
    for out, relation in ((hf, "is the input"), (hf / "mz", "lies inside the input folder"),
                          (tmp_path, "contains the input")):
        assert main(["import-hf", str(hf), str(out), "--overwrite"]) == 2
        one_line(capsys, f"OUT {out.resolve()} {relation} HF_DIR {hf}")
    assert digest(run) == before and digest(hf) == hf_before
    assert not (ckpt / "hf").exists() and not (hf / "mz").exists()


# --- 4: folders that cannot be written, a full disk ---------------------------------------------
def test_unwritable_folders_are_found_before_the_first_step(tmp_path, capsys, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("keep me\n")
    assert train(blocker) in TRAIN_REFUSED
    one_line(capsys, f"log.dir {blocker} is a file, not a folder")
    assert train(tmp_path / "r1", f"checkpoint.dir={blocker / 'ckpt'}") in TRAIN_REFUSED
    one_line(capsys, f"checkpoint.dir={blocker / 'ckpt'}: {blocker} is a file")
    assert blocker.read_text() == "keep me\n"
    assert not (tmp_path / "r1" / "metrics.jsonl").exists()  # stopped before the first step

    import megazoo.core.train.rundir as rundir

    def read_only(*args, **kwargs):  # what the kernel answers for a read-only folder (root ignores chmod)
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    monkeypatch.setattr(rundir.tempfile, "mkstemp", read_only)
    assert train(tmp_path / "r2") in TRAIN_REFUSED
    one_line(capsys, f"log.dir={tmp_path / 'r2'}: cannot write there (Permission denied)")
    monkeypatch.undo()

    monkeypatch.setattr(rundir.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9 - 4096, 4096))
    assert train(tmp_path / "r3") in TRAIN_REFUSED
    one_line(capsys, "MiB free on its disk", "no space left on device", "checkpoint.dir")
    assert not (tmp_path / "r3" / "metrics.jsonl").exists()


def test_full_disk_during_a_save_keeps_the_previous_checkpoint(run, capsys, monkeypatch):
    import torch.distributed.checkpoint.filesystem as dcp_files

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(dcp_files, "_write_item", full)
    ckpt = run / "checkpoints"
    before = digest(ckpt)
    assert train(run, "train.steps=3") != 0
    one_line(capsys, f"no space left on device while saving checkpoint {ckpt / 'iter_0000003'}",
             f"the previous checkpoint {ckpt / 'iter_0000002'} is kept")
    assert digest(ckpt) == before and not list(ckpt.glob("*.tmp"))


# --- 5: every file a checkpoint names lies inside it ---------------------------------------------
def _edit_meta(ckpt: Path, edit) -> None:
    path = ckpt / "meta.json"
    meta = json.loads(path.read_text())
    edit(meta)
    path.write_text(json.dumps(meta))


def test_crafted_manifest_is_refused_before_opening(run, tmp_path, capsys):
    secret = tmp_path / "secret.txt"
    secret.write_text("x" * 12345)
    ckpt = run / "checkpoints" / "iter_0000002"
    for name in ("../../../secret.txt", str(secret)):
        _edit_meta(ckpt, lambda m: m["files"].update({name: {"bytes": 1, "crc32": 0}}))
        assert main(["export-hf", str(ckpt), str(tmp_path / "out")]) == 2
        line = one_line(capsys, f"names the file {name!r}", "refusing to open it")
        assert "12345" not in line  # the outside file's size does not leak
        _edit_meta(ckpt, lambda m: m["files"].pop(name))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("where", ["outside", "unlisted"])
def test_crafted_dcp_metadata_is_refused(run, tmp_path, capsys, where):
    ckpt = run / "checkpoints" / "iter_0000002"
    shard = ckpt / "__0_0.distcp"
    if where == "outside":  # weights planted next to the run, named by a climbing path
        name = "../../../planted.distcp"
        shutil.copy(shard, tmp_path / "planted.distcp")
    else:  # a file inside the folder that the manifest does not list (so never checksummed)
        name = "planted.distcp"
        shutil.copy(shard, ckpt / name)
    md = safe_load_metadata(ckpt / ".metadata")
    md.storage_data = {k: replace(v, relative_path=name) for k, v in md.storage_data.items()}
    with open(ckpt / ".metadata", "wb") as f:
        pickle.dump(md, f)
    size, crc = (ckpt / ".metadata").stat().st_size, crc32_file(ckpt / ".metadata")
    _edit_meta(ckpt, lambda m: m["files"].update({".metadata": {"bytes": size, "crc32": crc}}))
    with pytest.raises(CheckpointError, match=f"names the data file {name!r}"):
        load_full_model_state(ckpt)
    assert main(["export-hf", str(ckpt), str(tmp_path / "out")]) == 2
    one_line(capsys, f"names the data file {name!r}", "refusing to read it")
    assert train(run, "train.steps=3") in TRAIN_REFUSED  # resume reads through the same reader
    one_line(capsys, f"names the data file {name!r}")


# --- 6: a run name cannot leave runs/ -------------------------------------------------------------
@pytest.mark.parametrize("name", ["../../x", "a/b", "/abs/x", ".."])
def test_run_name_cannot_leave_runs(tmp_path, capsys, monkeypatch, name):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    assert main(["train", "gpt-tiny", "--set", *TINY, f"name={name}"]) == 2
    one_line(capsys, f"name={name!r} is not a plain folder name", "log.dir")
    assert [p.name for p in tmp_path.rglob("*")] == ["a", "b"]  # nothing written anywhere


# --- 12: damaged and mismatched weights ------------------------------------------------------------
def test_corrupted_shard_is_named(run, tmp_path, capsys):
    shard = run / "checkpoints" / "iter_0000002" / "__0_0.distcp"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    assert main(["export-hf", str(run / "checkpoints"), str(tmp_path / "out")]) == 2
    one_line(capsys, "file __0_0.distcp is corrupted (crc32 checksum mismatch)")
    assert train(run, "train.steps=3") in TRAIN_REFUSED
    one_line(capsys, "file __0_0.distcp is corrupted")


@pytest.mark.parametrize("key, value, saved", [("model.num_layers", 3, 2), ("model.hidden_size", 32, 64)])
def test_checkpoint_of_another_size_or_depth(run, capsys, key, value, saved):
    before = digest(run)
    assert train(run, "train.steps=3", f"{key}={value}") in TRAIN_REFUSED
    one_line(capsys, "was saved for another model", f"{key}={saved} there, {key}={value} in this run")
    assert digest(run) == before


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory, trained) -> Path:
    out = tmp_path_factory.mktemp("hf") / "hf"
    assert main(["export-hf", str(trained / "checkpoints"), str(out)]) == 0
    return out


def test_truncated_safetensors_and_malformed_config_are_named(hf_folder, tmp_path, capsys):
    trunc = tmp_path / "trunc"
    shutil.copytree(hf_folder, trunc)
    weights = trunc / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    capsys.readouterr()
    assert main(["import-hf", str(trunc), str(tmp_path / "o1")]) == 2
    one_line(capsys, f"{weights}: cannot read the weights", "truncated or corrupted")
    assert train(tmp_path / "r1", f"train.init_from={trunc}") == 2  # checked before any rank starts
    one_line(capsys, f"train.init_from={str(trunc)!r}", f"{weights}: cannot read the weights")

    bad = tmp_path / "badcfg"
    shutil.copytree(hf_folder, bad)
    (bad / "config.json").write_text('{\n  "model_type": "gpt2",\n  "n_embd": ,\n}\n')
    assert main(["import-hf", str(bad), str(tmp_path / "o2")]) == 2
    one_line(capsys, f"{bad / 'config.json'}:3: not valid JSON")
    # an import-hf folder whose model.safetensors is cut short
    mz = tmp_path / "mz"
    assert main(["import-hf", str(hf_folder), str(mz)]) == 0
    (mz / "model.safetensors").write_bytes((mz / "model.safetensors").read_bytes()[:500])
    capsys.readouterr()
    assert main(["export-hf", str(mz), str(tmp_path / "o3")]) == 2
    one_line(capsys, f"{mz / 'model.safetensors'}: cannot read the weights")
    (mz / "model.yaml").write_text("arch: [gpt\n")
    assert main(["export-hf", str(mz), str(tmp_path / "o3")]) == 2
    one_line(capsys, f"{mz / 'model.yaml'}:2: not valid YAML")
    assert not any((tmp_path / o).exists() for o in ("o1", "o2", "o3"))


def test_hf_index_cannot_name_files_outside(hf_folder, tmp_path, capsys):
    src = tmp_path / "src"
    shutil.copytree(hf_folder, src)
    shutil.move(src / "model.safetensors", tmp_path / "outside.safetensors")
    index = {"weight_map": {"wte.weight": "../outside.safetensors"}}
    (src / "model.safetensors.index.json").write_text(json.dumps(index))
    capsys.readouterr()
    assert main(["import-hf", str(src), str(tmp_path / "out")]) == 2
    one_line(capsys, "names the file '../outside.safetensors', which is not a file inside", "refusing to read it")
    assert not (tmp_path / "out").exists()
