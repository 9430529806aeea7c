"""The stages of `megazoo task dialogue ...` (multi-actor, local-knowledge and MSDP dialogue).

The four verbs every task shares (data, train, sample, evaluate) plus this package's EXTRAS; the
stage names it had before the shared vocabulary are ALIASES, so scripts written for them still run.
"""

from megazoo.core.train.stages import recipe_stage

STAGES = {
    "data": ("megazoo.tasks.dialogue.cli_data", "write the offline sets (WoW-format dialogues with the hand-made "
                                                "test splits, multi-actor conversations, documents): data OUT_DIR "
                                                "[--seed N] [--wow-test handmade|generated]"),
    "flatten": ("megazoo.tasks.dialogue.cli_flatten", "Wizard of Wikipedia/Internet or conversation JSONL to "
                                                       "Megatron's TSV: flatten FILE --out FILE.tsv"),
    "train": recipe_stage("dialogue", "multi-actor or knowledge-grounded fine-tuning: train RECIPE [--set k=v ...] "
                                      "[--nproc N]", recipe="dialogue-actor, dialogue-knowledge",
                          set_example="data.path=runs/dialogue/data/actors train.init_from=runs/dialogue/smollm2"),
    "msdp": ("megazoo.tasks.dialogue.cli_msdp", "multi-stage prompting of a frozen LM: msdp --stage "
                                                 "knowledge|response --data FILE --checkpoint CKPT --out FILE.jsonl"),
    "sample": ("megazoo.tasks.dialogue.cli_sample", "responses of a fine-tuned model: sample --data FILE.jsonl "
                                                     "--checkpoint CKPT --kind actor|knowledge --out FILE.jsonl"),
    "perplexity": ("megazoo.tasks.dialogue.cli_perplexity", "perplexity of held-out responses with or without the "
                                                             "reference / knowledge: perplexity --data FILE.jsonl "
                                                             "--checkpoint CKPT --kind actor|knowledge --out FILE.json"),
    "evaluate": ("megazoo.tasks.dialogue.cli_evaluate", "F1, KF1, BLEU, ROUGE-L, METEOR: evaluate --data FILE "
                                                         "--generations FILE --out FILE.json"),
    "chat": ("megazoo.tasks.dialogue.cli_chat", "talk to a model in the terminal: chat CKPT [--knowledge DIR]"),
}

# stages outside the four verbs, and why each is one of its own
EXTRAS = {
    "flatten": "converts data the user has (Wizard of Wikipedia/Internet, conversation JSONL) to Megatron's TSV; "
               "`data` generates the offline sets",
    "msdp": "MSDP's two prompting stages (knowledge, then response) on a frozen LM: the paper's method, not a "
            "fine-tuned model's sampling",
    "perplexity": "held-out response perplexity of a fine-tuned model with or without its reference/knowledge "
                  "(the multi-actor figure); `evaluate` scores generated text",
    "chat": "interactive: talk to a model in the terminal; writes nothing",
}

# the names these stages had before the shared vocabulary
ALIASES = {"generate": "data", "finetune": "train", "respond": "sample"}
