"""Makes `lm_eval --model megazoo` work without lm-eval knowing about megazoo.

A one-line .pth file installed with megazoo imports this module at interpreter start-up. It costs
nothing until `lm_eval.models` is imported: then it registers "megazoo" in lm-eval's model
registry as a lazy placeholder, so the backend (and torch) load only when that model is asked for.
"""

import importlib.abc
import importlib.util
import sys

TARGET = "megazoo.eval.lm_eval_adapter:MegazooLMEval"


class _LmEvalModelsHook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "lm_eval.models":
            return None
        sys.meta_path.remove(self)
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


def install() -> None:
    if not any(isinstance(f, _LmEvalModelsHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _LmEvalModelsHook())


install()
