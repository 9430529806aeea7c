"""The stages of `megazoo task detox ...` (SGEAT: self-generate, score, filter, train, evaluate)."""

STAGES: dict[str, tuple[str, str]] = {
    "generate": ("megazoo.tasks.detox.cli_generate", "write a RealToxicityPrompts-format prompts.jsonl from offline "
                                                      "text: generate FILE.jsonl [--corpus-prompts 60] [--seed N]"),
    "selfgen": ("megazoo.tasks.detox.cli_selfgen", "sample the model (top-p 0.9, temperature 1) to resumable JSONL: "
                                                    "selfgen --checkpoint CKPT --out FILE.jsonl [--samples N] "
                                                    "[--max-new-tokens 1000] [--prompts FILE]"),
    "filter": ("megazoo.tasks.detox.cli_filter", "score self-generations, keep the least toxic share, preprocess "
                                                  "with EOD: filter --generations FILE.jsonl --out-prefix P "
                                                  "--tokenizer T [--fraction 0.5] [--scorer profanity]"),
    "train": ("megazoo.tasks.detox.cli_train", "domain-adaptive training (whole model or adapters): train RECIPE "
                                                "[--set k=v ...] [--nproc N]"),
    "evaluate": ("megazoo.tasks.detox.cli_evaluate", "EMT and TP on RealToxicityPrompts: evaluate --prompts FILE.jsonl "
                                                      "--checkpoint CKPT --out FILE.json [--scorer profanity|hf:DIR|"
                                                      "perspective] [--samples 25]"),
    "score": ("megazoo.tasks.detox.cli_score", "EMT and TP of existing generations: score --generations FILE.jsonl "
                                                "--prompts FILE.jsonl --out FILE.json [--scorer ...] [--samples 25]"),
}
