"""The stages of `megazoo task dialogue ...` (multi-actor, local-knowledge and MSDP dialogue)."""

STAGES: dict[str, tuple[str, str]] = {
    "generate": ("megazoo.tasks.dialogue.cli_generate", "write the offline sets (WoW-format dialogues with the "
                                                         "hand-made test splits, multi-actor conversations, documents): "
                                                         "generate OUT_DIR [--seed N] [--wow-test handmade|generated]"),
    "flatten": ("megazoo.tasks.dialogue.cli_flatten", "Wizard of Wikipedia/Internet or conversation JSONL to "
                                                       "Megatron's TSV: flatten FILE --out FILE.tsv"),
    "finetune": ("megazoo.tasks.dialogue.cli_finetune", "multi-actor or knowledge-grounded fine-tuning: finetune "
                                                         "RECIPE [--set k=v ...] [--nproc N]"),
    "msdp": ("megazoo.tasks.dialogue.cli_msdp", "multi-stage prompting of a frozen LM: msdp --stage "
                                                 "knowledge|response --data FILE --checkpoint CKPT --out FILE.jsonl"),
    "respond": ("megazoo.tasks.dialogue.cli_respond", "responses of a fine-tuned model: respond --data FILE.jsonl "
                                                       "--checkpoint CKPT --kind actor|knowledge --out FILE.jsonl"),
    "perplexity": ("megazoo.tasks.dialogue.cli_perplexity", "perplexity of held-out responses with or without the "
                                                             "reference / knowledge: perplexity --data FILE.jsonl "
                                                             "--checkpoint CKPT --kind actor|knowledge --out FILE.json"),
    "evaluate": ("megazoo.tasks.dialogue.cli_evaluate", "F1, KF1, BLEU, ROUGE-L, METEOR: evaluate --data FILE "
                                                         "--generations FILE --out FILE.json"),
    "chat": ("megazoo.tasks.dialogue.cli_chat", "talk to a model in the terminal: chat CKPT [--knowledge DIR]"),
}
