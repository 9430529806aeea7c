# Sourced by every recipes/*.sh: the Python that has megazoo, so that a recipe runs without an
# activated virtual environment (`bash recipes/race.sh` from a new shell). The first of these that can
# import megazoo:
#   $MEGAZOO_PYTHON, if set (then only it: a wrong setting is an error, not silently passed over);
#   .venv/bin/python of the repository the recipe is in (what ./scripts/setup.sh makes);
#   python3, then python, on PATH (an activated environment, or megazoo installed for that Python).
# None: one line saying to run ./scripts/setup.sh, exit 2. `megazoo ...` and `python ...` in the
# recipe then run that interpreter. `bash recipes/NAME.sh --help` prints the recipe's usage (its
# opening comment) and the interpreter it found.
megazoo_imports() { [ -n "$1" ] && "$1" -c "import megazoo.core" >/dev/null 2>&1; }
if [ -n "${MEGAZOO_PYTHON:-}" ]; then
  MEGAZOO_PY=$MEGAZOO_PYTHON
  if ! megazoo_imports "$MEGAZOO_PY"; then
    echo "error: MEGAZOO_PYTHON=$MEGAZOO_PY cannot import megazoo; set MEGAZOO_PYTHON to a Python that has" \
         "megazoo installed, or unset it to use the repository's .venv (./scripts/setup.sh makes it)" >&2
    exit 2
  fi
else
  MEGAZOO_PY=
  for candidate in "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv/bin/python" \
                   "$(command -v python3 || true)" "$(command -v python || true)"; do
    if megazoo_imports "$candidate"; then
      MEGAZOO_PY=$candidate
      break
    fi
  done
  if [ -z "$MEGAZOO_PY" ]; then
    echo "error: no Python with megazoo found (not .venv/bin/python, python3 or python on PATH); run" \
         "./scripts/setup.sh (it makes .venv), or set MEGAZOO_PYTHON to a Python that has megazoo installed" >&2
    exit 2
  fi
fi
python() { "$MEGAZOO_PY" "$@"; }
megazoo() { "$MEGAZOO_PY" -m megazoo "$@"; }
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  echo "usage (from the recipe's opening comment):"
  sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
  echo "interpreter: $MEGAZOO_PY"
  exit 0
fi
