"""`lm_eval --model megazoo` works in a fresh interpreter that never imported megazoo: the start-up
hook (megazoo-lm-eval.pth, installed with megazoo) registers the backend when lm-eval loads its
models, without importing torch or megazoo's backend before it is asked for."""

import subprocess
import sys

PROBE = """
import sys
assert "torch" not in sys.modules, "the start-up hook must stay cheap"
from lm_eval.api.registry import get_model
print(get_model("megazoo").__module__, get_model("hf").__name__)
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
