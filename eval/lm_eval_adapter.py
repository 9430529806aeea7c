"""lm-eval backend: `lm_eval --model megazoo --model_args checkpoint=DIR[,batch_size=8,max_length=N]`.

The class registers itself under the name "megazoo" when this module is imported. The `lm_eval`
command reaches it through the start-up hook that megazoo installs (megazoo-lm-eval.pth, which
imports nothing until lm_eval.models loads; see megazoo/lm_eval_hook.py); `megazoo eval lm-eval ...`
runs lm-eval's own command line with the backend registered, and `simple_evaluate(model="megazoo", ...)`
works after importing this module.
"""

from __future__ import annotations

import lm_eval.models  # noqa: F401  (fill lm-eval's own registry first: it only loads itself when empty)
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from megazoo.eval.scoring import generate_until, loglikelihood, loglikelihood_rolling


@register_model("megazoo")
class MegazooLMEval(LM):
    def __init__(self, checkpoint: str | None = None, batch_size: int | str = 8, max_length: int | None = None,
                 lm=None, device: str | None = None, **_ignored):
        super().__init__()
        if lm is None:
            if checkpoint is None:
                raise ValueError("the megazoo lm-eval backend needs --model_args checkpoint=DIR")
            from megazoo.eval.loading import load_lm

            lm = load_lm(checkpoint, max_length=int(max_length) if max_length else None)
        self.lm = lm
        self.batch_size = 8 if str(batch_size).startswith("auto") else int(batch_size)

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        return loglikelihood(self.lm, [r.args for r in requests], self.batch_size, progress=not disable_tqdm)

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        return loglikelihood_rolling(self.lm, [r.args[0] for r in requests], self.batch_size, progress=not disable_tqdm)

    def generate_until(self, requests, disable_tqdm: bool = False):
        return generate_until(self.lm, [(r.args[0], dict(r.args[1])) for r in requests], progress=not disable_tqdm)
