"""Issue #41 point 3: outputs respect the user's umask, atomic writes kept.

Under umask 022 the folders that export-hf, import-hf and tokenizer train write are 0755 with 0644
files (safetensors writes its files 0600 and mkdtemp made scratch folders 0700: colleagues could
not read them); under umask 077 nothing is widened."""

import os
import stat

import pytest

from megazoo.cli import main
from megazoo.core.fs import atomic_folder


@pytest.fixture
def umask():
    """Set the process umask for one test, restored after it."""
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


def modes(root) -> dict[str, int]:
    """relative path ('.' for the root) -> permission bits, for every folder and file under root."""
    out = {".": stat.S_IMODE(os.stat(root).st_mode)}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = os.path.join(folder, name)
            out[os.path.relpath(path, root)] = stat.S_IMODE(os.lstat(path).st_mode)
    return out


def private_writes(tmp) -> None:
    """What private writers leave: a safetensors file (0600), an os.open(0o600) file, a mkdtemp folder."""
    import tempfile

    import torch
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(2)}, str(tmp / "model.safetensors"))
    os.close(os.open(tmp / "secret.txt", os.O_WRONLY | os.O_CREAT, 0o600))
    sub = tempfile.mkdtemp(dir=tmp)
    (tmp / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(tmp / "run.sh", 0o750)
    open(os.path.join(sub, "inner.txt"), "w").close()


def test_atomic_folder_output_follows_umask_022(tmp_path, umask):
    out = tmp_path / "out"
    with atomic_folder(out) as tmp:
        private_writes(tmp)
        assert tmp.name.startswith(".out.tmp-")
    got = modes(out)
    assert got.pop("run.sh") == 0o755  # executable stays executable, readable by group and others
    assert len(got) == 5 and ".megazoo-scratch" not in got
    for name, mode in got.items():
        assert mode == (0o755 if (out / name).is_dir() else 0o644), (name, oct(mode))
    assert not [p for p in tmp_path.iterdir() if p.name != "out"]  # no scratch left beside it


def test_umask_077_widens_nothing(tmp_path, umask):
    umask(0o077)
    out = tmp_path / "out"
    with atomic_folder(out) as tmp:
        private_writes(tmp)
    got = modes(out)
    assert got.pop("run.sh") == 0o750
    assert got["."] == 0o700 and got["model.safetensors"] == 0o600 and got["secret.txt"] == 0o600


def test_failed_folder_write_leaves_nothing(tmp_path, umask):
    with pytest.raises(RuntimeError):
        with atomic_folder(tmp_path / "out") as tmp:
            (tmp / "half.txt").write_text("x")
            raise RuntimeError("stop")
    assert list(tmp_path.iterdir()) == []


def test_commands_write_group_readable_outputs(tmp_path, umask, monkeypatch, capsys):
    monkeypatch.setenv("MEGAZOO_PEAK_TFLOPS", "1")
    monkeypatch.chdir(tmp_path)
    text = tmp_path / "t.txt"
    text.write_text("the quick brown fox jumps over the lazy dog\nhello world again and again\n")
    assert main(["tokenizer", "train", "--kind", "wordpiece", "--input", str(text), "--vocab-size", "60",
                 "--out", "tok", "--quiet"]) == 0
    assert main(["train", "gpt-tiny", "--set", "train.steps=1", "train.global_batch=2", "train.micro_batch=2",
                 "model.seq_length=16", "train.eval_iters=1", "log.progress=false", "log.plot=false",
                 "log.dir=run"]) == 0
    assert main(["export-hf", "run/checkpoints", "hf"]) == 0
    assert main(["import-hf", "hf", "imported"]) == 0
    for folder in ("tok", "hf", "imported"):
        got = modes(tmp_path / folder)
        assert "model.safetensors" in got or folder == "tok"
        for name, mode in got.items():
            is_dir = (tmp_path / folder / name).is_dir()
            assert mode == (0o755 if is_dir else 0o644), (folder, name, oct(mode))
