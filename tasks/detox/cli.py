"""The stages of `megazoo task detox ...` (SGEAT: self-generate, score, filter, train, evaluate).

The four verbs every task shares (data, sample, train, evaluate) plus this package's EXTRAS; the
stage names it had before the shared vocabulary are ALIASES, so scripts written for them still run.
"""

from megazoo.core.train.stages import recipe_stage

STAGES = {
    "data": ("megazoo.tasks.detox.cli_data", "write a RealToxicityPrompts-format prompts.jsonl from offline text: "
                                             "data FILE.jsonl [--corpus-prompts 60] [--seed N]"),
    "sample": ("megazoo.tasks.detox.cli_sample", "self-generation: sample the model (top-p 0.9, temperature 1) to "
                                                 "resumable JSONL: sample --checkpoint CKPT --out FILE.jsonl "
                                                 "[--samples N] [--max-new-tokens 1000] [--prompts FILE]"),
    "filter": ("megazoo.tasks.detox.cli_filter", "score self-generations, keep the least toxic share, preprocess "
                                                  "with EOD: filter --generations FILE.jsonl --out-prefix P "
                                                  "--tokenizer T [--fraction 0.5] [--scorer profanity]"),
    "train": recipe_stage("detox", "domain-adaptive training (whole model or adapters): train RECIPE [--set k=v ...] "
                                   "[--nproc N]", recipe="detox, detox-adapter",
                          set_example="data.path=runs/detox/kept train.init_from=runs/detox/smollm2"),
    "evaluate": ("megazoo.tasks.detox.cli_evaluate", "EMT and TP on RealToxicityPrompts: evaluate --prompts FILE.jsonl "
                                                      "--checkpoint CKPT --out FILE.json [--scorer profanity|hf:DIR|"
                                                      "perspective] [--samples 25]"),
    "score": ("megazoo.tasks.detox.cli_score", "EMT and TP of existing generations: score --generations FILE.jsonl "
                                                "--prompts FILE.jsonl --out FILE.json [--scorer ...] [--samples 25]"),
}

# stages outside the four verbs, and why each is one of its own
EXTRAS = {
    "filter": "SGEAT's step between sample and train: scores the self-generations and keeps the least toxic share "
              "as training data (.bin/.idx); `data` writes the evaluation prompts",
    "score": "evaluate's scoring half on generations made elsewhere (Megatron's, another tool's): the same metrics "
             "and record without a model",
}

# the names these stages had before the shared vocabulary
ALIASES = {"generate": "data", "selfgen": "sample"}
