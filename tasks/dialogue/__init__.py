"""Dialogue on the Megatron line (issue 21): multi-actor generative dialogue (Boyd et al., ACL 2020),
local-knowledge conversational agents (Santhanam et al. 2020) and multi-stage prompting, MSDP (Liu et
al., Findings of ACL 2022), with ParlAI's F1/KF1 and BLEU, ROUGE-L, METEOR from their libraries.

    from megazoo.tasks.dialogue import read_wow, read_woi, read_conversations, read_tsv, write_tsv
    samples = read_wow("train.json")            # Megatron's flattened samples (topic, turns, knowledge, response)
    write_tsv(samples, "train.tsv")             # topic \\t turns [SEP] \\t knowledge \\t response
    dialogue_metrics(responses, samples)        # {"metrics": {"f1", "kf1", "bleu", "rouge_l", "meteor"}, ...}

Fine-tuning is a recipe for the core trainer (`task: dialogue`, builder.py: kind actor or knowledge);
the stages are `megazoo task dialogue data|train|sample|evaluate` and the extras
flatten|msdp|perplexity|chat (see cli.py).
"""

from megazoo.tasks.dialogue.data import (Conversation, Sample, Turn, iter_wow, read_any, read_conversations,
                                          read_tsv, read_woi, read_wow, write_tsv)
from megazoo.tasks.dialogue.evaluate import dialogue_metrics, read_generations

__all__ = ["Conversation", "Sample", "Turn", "dialogue_metrics", "iter_wow", "read_any", "read_conversations",
           "read_generations", "read_tsv", "read_woi", "read_wow", "write_tsv"]
