"""`lm_eval --model megazoo` works in a fresh interpreter that never imported megazoo: the start-up
hook (megazoo-lm-eval.pth, installed with megazoo) registers the backend when lm-eval loads its
models, without importing torch or megazoo's backend before it is asked for. A process that never
imports lm_eval pays nothing: the hook imports no module and megazoo stays unimported."""

import json
import os
import pathlib
import subprocess
import sys
import sysconfig

PTH = pathlib.Path(__file__).resolve().parents[1] / "megazoo-lm-eval.pth"
FINDER = "MegazooLmEvalHook"

PROBE = """
import sys
assert "torch" not in sys.modules, "the start-up hook must stay cheap"
assert not [m for m in sys.modules if m.split(".")[0] == "megazoo"], "the start-up hook must not import megazoo"
from lm_eval.api.registry import get_model
print(get_model("megazoo").__module__, get_model("hf").__name__)
assert not [f for f in sys.meta_path if type(f).__name__ == "MegazooLmEvalHook"], "the finder steps aside once used"
"""


def test_lm_eval_finds_the_megazoo_backend_in_a_fresh_interpreter():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["megazoo.eval.lm_eval_adapter", "HFLM"]


TASK = """task: tiny_local
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: loglikelihood
doc_to_text: "{{{{context}}}}"
doc_to_target: "{{{{target}}}}"
metric_list:
  - metric: acc
"""


def test_the_lm_eval_command_reaches_the_megazoo_backend(tmp_path):
    """The real `lm_eval` command resolves `--model megazoo` to megazoo's backend, which then reports
    the bad checkpoint path in its own words (an unknown model name would fail differently)."""
    (tmp_path / "d.jsonl").write_text('{"context": "a b", "target": " c"}\n')
    (tmp_path / "tiny.yaml").write_text(TASK.format(data=tmp_path / "d.jsonl"))
    missing = tmp_path / "no-checkpoint-here"
    done = subprocess.run([sys.executable, "-m", "lm_eval", "--model", "megazoo", "--model_args",
                           f"checkpoint={missing}", "--tasks", "tiny_local", "--include_path", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert "no model for this name" not in out
    assert f"{missing} is not a megazoo model checkpoint" in out, out[-2000:]


# What start-up leaves behind: the hook's finder (how many, its state), the megazoo modules loaded,
# and whether asking the finder about other modules imports anything.
IDLE = """
import json, sys
finders = [f for f in sys.meta_path if type(f).__name__ == "MegazooLmEvalHook"]
before = set(sys.modules)
answers = [f.find_spec(name, None) for f in finders for name in ("json", "lm_eval", "lm_eval.api", "megazoo")]
print(json.dumps({"finders": len(finders), "state": [vars(f) for f in finders], "answers": answers,
                  "megazoo": sorted(m for m in sys.modules if m.split(".")[0] == "megazoo"),
                  "new_modules": sorted(set(sys.modules) - before)}))
"""


def test_the_installed_hook_is_this_one():
    installed = pathlib.Path(sysconfig.get_paths()["purelib"]) / PTH.name
    assert installed.is_file(), f"{installed} is missing: run scripts/setup.sh"
    assert installed.read_text() == PTH.read_text(), f"{installed} is stale: run scripts/setup.sh"


def test_a_process_that_never_imports_lm_eval_pays_nothing():
    done = subprocess.run([sys.executable, "-c", IDLE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    assert seen == {"finders": 1, "state": [{}], "answers": [None] * 4, "megazoo": [], "new_modules": []}


def test_the_hook_line_imports_no_module():
    """Without site (-S), running the .pth's lines by hand adds a finder and not one module."""
    lines = [line for line in PTH.read_text().splitlines() if line.startswith("import ")]
    assert len(lines) == 1  # site runs only the lines that start with `import`
    code = ("import sys; before = set(sys.modules); exec(LINE); exec(LINE)\n"
            "print(sorted(set(sys.modules) - before), [type(f).__name__ for f in sys.meta_path].count(FINDER))")
    done = subprocess.run([sys.executable, "-S", "-c", f"LINE = {lines[0]!r}; FINDER = {FINDER!r}\n" + code],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[0] == "[] 1"  # read twice (site may), installed once


def test_start_up_imports_nothing_of_megazoo():
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"], capture_output=True, text=True,
                          timeout=120)
    modules = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line]
    assert modules and not [m for m in modules if m.split(".")[0] == "megazoo"], modules


def test_a_hook_left_behind_without_megazoo_is_harmless():
    """The hook's line with megazoo unimportable (uninstalled, or broken): lm_eval.models still loads,
    without a megazoo entry, and the finder has stepped aside."""
    line = [line for line in PTH.read_text().splitlines() if line.startswith("import ")][0]
    code = (f"import sys; exec({line!r}); sys.modules['megazoo'] = None  # as if megazoo were not installed\n"
            "import lm_eval.models\nfrom lm_eval.api.registry import model_registry\n"
            "print('megazoo' in model_registry, 'hf' in model_registry,"
            " [type(f).__name__ for f in sys.meta_path].count('MegazooLmEvalHook'))")
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(site_paths())})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "True", "0"]


def site_paths() -> list[str]:
    return [p for p in sys.path if p.endswith("site-packages")]
