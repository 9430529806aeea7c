"""Makes `lm_eval --model megazoo` work without lm-eval knowing about megazoo.

lm-eval 0.4.13 finds models only in its own registry (lm_eval/models/__init__.py's MODEL_MAPPING and
@register_model); it reads no entry points for models, so a plugin has to register itself when
lm_eval.models loads. megazoo-lm-eval.pth, which the megazoo wheel puts in site-packages (setup.py's
build_py; listed in the wheel's RECORD, so `pip uninstall megazoo` removes it), puts a tiny finder
first on sys.meta_path at interpreter start-up. It imports nothing and steps aside for every module
but `lm_eval.models`; only then does it import this module and call find_spec (and when megazoo
cannot be imported, it steps aside and returns None: lm-eval loads as if the hook were not there).
So a process that never imports lm_eval never imports megazoo. Here the finder is taken off
sys.meta_path and, once lm-eval's own models module has run, "megazoo" is registered in lm-eval's
model registry as a lazy placeholder, so the backend (and torch) load only when that model is asked for.
"""

import importlib.util
import sys

TARGET = "megazoo.eval.lm_eval_adapter:MegazooLMEval"
FINDER = "MegazooLmEvalHook"  # the class name of the .pth line's finder


def find_spec(name: str):
    """The spec of `name` (lm_eval.models) whose loader registers the megazoo backend after it runs."""
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != FINDER]  # once is enough
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return spec
    run = spec.loader.exec_module

    def exec_module(module):
        run(module)
        try:
            from lm_eval.api.registry import model_registry

            if "megazoo" not in model_registry:
                model_registry.register("megazoo", target=TARGET)
        except Exception:  # an lm-eval without this registry API: leave it untouched
            pass

    spec.loader.exec_module = exec_module
    return spec
