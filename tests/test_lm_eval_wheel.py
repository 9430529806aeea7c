"""The lm-eval start-up hook ships inside megazoo's wheel and sdist: megazoo-lm-eval.pth sits at the
wheel's root (site-packages for any Python version, no pythonX.Y path in the wheel) and is listed
in its RECORD, so installing the wheel makes `lm_eval --model megazoo` work and `pip uninstall
megazoo` removes the hook, after which `import lm_eval.models` still works. The wheel is built from a
copy of the sources (the checkout is left untouched) and installed into a throwaway virtual
environment that borrows this environment's packages (lm-eval, torch) through a path file."""

import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOOK = "megazoo-lm-eval.pth"
FOLDERS = ("megazoo", "core", "zoo", "eval", "tasks", "recipes", "curate")
FILES = ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md", HOOK)
PROBE = ("import lm_eval.models; from lm_eval.api.registry import model_registry as r; "
         "print('megazoo' in r, r.get('megazoo').__module__ if 'megazoo' in r else '-')")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(the wheel, the sdist) of a copy of the sources."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    for folder in FOLDERS:
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in FILES:
        shutil.copy2(ROOT / name, src / name)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                           "--disable-pip-version-check", str(src), "-w", str(tmp / "dist")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    sdist = subprocess.run([sys.executable, "-c", f"from setuptools import build_meta; "
                            f"print(build_meta.build_sdist({str(tmp / 'dist')!r}))"],
                           cwd=src, capture_output=True, text=True, timeout=300)
    assert sdist.returncode == 0, sdist.stderr[-2000:]
    return next((tmp / "dist").glob("*.whl")), tmp / "dist" / sdist.stdout.split()[-1], tmp


def test_the_wheel_and_sdist_carry_the_hook(built):
    wheel, sdist, _ = built
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        record = z.read(next(n for n in names if n.endswith(".dist-info/RECORD"))).decode()
        assert z.read(HOOK) == (ROOT / HOOK).read_bytes()
    assert HOOK in names  # the wheel's root: purelib, whatever the Python version
    assert any(line.startswith(HOOK + ",sha256=") for line in record.splitlines())
    assert not [n for n in names if ".data/" in n or "python3." in n], "no scheme- or version-specific paths"
    with tarfile.open(sdist) as t:
        assert [n for n in t.getnames() if n.endswith("/" + HOOK)], "the sdist must carry the hook to build the wheel"


def test_the_editable_wheel_carries_the_hook_too(built):
    """scripts/setup.sh's `pip install -e .` (PEP 660): the hook comes in the editable wheel, listed in
    its RECORD like every other file, so no set-up step copies it by hand and uninstall removes it."""
    _, _, tmp = built
    done = subprocess.run([sys.executable, "-c", f"from setuptools import build_meta; "
                           f"print(build_meta.build_editable({str(tmp / 'editable')!r}))"],
                          cwd=tmp / "src", capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    with zipfile.ZipFile(tmp / "editable" / done.stdout.split()[-1]) as z:
        record = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))).decode()
        assert z.read(HOOK) == (ROOT / HOOK).read_bytes()
    assert any(line.startswith(HOOK + ",sha256=") for line in record.splitlines())


def run(python, *args: str, code: str | None = None) -> subprocess.CompletedProcess:
    """pip on the throwaway venv, or its python on `code`; run from the root folder, never from the
    checkout (where `python -c` would import the checkout's megazoo/ folder first)."""
    argv = [python, "-c", code] if code else [sys.executable, "-m", "pip", "--python", python,
                                              "--disable-pip-version-check", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=Path(python).anchor)


def test_install_then_uninstall_leaves_lm_eval_working(built):
    wheel, _, tmp = built
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python"))
    site = Path(run(python, code="import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    # this environment's packages (lm-eval, torch, ...) after the venv's own; their .pth files stay unread
    (site / "zz-borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    done = run(python, "install", "-q", "--no-deps", str(wheel))
    assert done.returncode == 0, done.stderr[-2000:]
    assert (site / HOOK).is_file()
    seen = run(python, code=PROBE)
    assert seen.returncode == 0 and seen.stdout.split() == ["True", "megazoo.eval.lm_eval_adapter"], seen.stderr[-2000:]
    located = run(python, code="import megazoo, pathlib; print(pathlib.Path(megazoo.__file__).resolve())").stdout
    assert Path(located.strip()).is_relative_to(site.resolve())  # the wheel's copy, not the checkout
    done = run(python, "uninstall", "-y", "megazoo")
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (site / HOOK).exists(), "pip uninstall must remove the hook"
    after = run(python, code=PROBE)
    assert after.returncode == 0, after.stderr[-2000:]
    assert after.stdout.split() == ["False", "-"]
