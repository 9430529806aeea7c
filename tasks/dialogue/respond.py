"""A fine-tuned dialogue model on held-out conversations: the perplexity of their responses and the
model's own responses, with or without the persona reference / retrieved knowledge.

The pairs are prompts.py's, so the model sees what it was trained on. Perplexity is exp of the mean
negative log-likelihood of the response tokens and the end-of-document token after each response
(the tokens the fine-tuning loss covers), prompt and response tokenised apart as task sft does.
"""

from __future__ import annotations

import math

import torch


def add_pair_arguments(parser) -> None:
    from megazoo.core.argtypes import int_in
    from megazoo.core.fs import input_arg
    from megazoo.tasks.dialogue.stage import MAX_ITEMS, MAX_SENTENCES, MAX_TURNS

    input_arg(parser, "--data", kind="file", required=True, help="conversation JSONL (held-out conversations)")
    input_arg(parser, "--checkpoint", required=True, help="the decoder: a training run or checkpoint, an "
                                                          "import-hf folder, a Hugging Face folder")
    parser.add_argument("--kind", required=True, choices=("actor", "knowledge"))
    input_arg(parser, "--references", kind="file",
              help="actor: the conversations references come from (the training set)")
    parser.add_argument("--reference-turns", type=int_in(1, MAX_TURNS), default=3,
                        help="turns of the speaker's reference (actor)")
    input_arg(parser, "--documents", kind="folder", help="knowledge: the document set folder")
    parser.add_argument("--knowledge-sentences", type=int_in(1, MAX_SENTENCES), default=2,
                        help="retrieved sentences in a prompt (knowledge)")
    parser.add_argument("--without", action="store_true", help="leave out the reference / knowledge (the baseline)")
    parser.add_argument("--limit", type=int_in(1, MAX_ITEMS), help="only the first N conversations of --data")


def pairs_of(args) -> list:
    from megazoo.tasks.dialogue.builder import DialogueTask, build_pairs
    from megazoo.tasks.dialogue.data import read_conversations

    if args.kind == "actor" and not args.without and not args.references:
        raise ValueError("--kind actor needs --references (the training conversations) unless --without")
    if args.kind == "knowledge" and not args.without and not args.documents:
        raise ValueError("--kind knowledge needs --documents DIR unless --without")
    settings = DialogueTask(kind=args.kind, reference_turns=args.reference_turns, reference=not args.without,
                            documents=args.documents, knowledge_sentences=args.knowledge_sentences,
                            knowledge=not args.without)
    train = read_conversations(args.references) if args.references else []
    return build_pairs(settings, read_conversations(args.data)[: args.limit], train)


@torch.no_grad()
def response_perplexity(model, tokenizer, pairs: list) -> dict:
    """{"perplexity", "nll", "tokens", "n"} of the responses given their prompts."""
    eod = tokenizer.eos_token_id
    total, count = 0.0, 0
    for p in pairs:
        prompt = tokenizer.encode(p.prompt, add_special_tokens=False)
        response = tokenizer.encode(p.response, add_special_tokens=False) + [eod]
        ids = torch.tensor([prompt + response])[:, -model.cfg.seq_length - 1:]
        logits = model(input_ids=ids[:, :-1]).float()
        targets = ids[0, 1:]
        logp = torch.log_softmax(logits[0], dim=-1).gather(1, targets[:, None])[:, 0]
        total -= float(logp[-len(response):].sum())
        count += len(response)
    return {"perplexity": math.exp(total / count), "nll": total / count, "tokens": count, "n": len(pairs)}
