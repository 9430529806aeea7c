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
    from megazoo.tasks.dialogue.prompts import HISTORY_OF, UNITS
    from megazoo.tasks.dialogue.stage import MAX_ITEMS, MAX_SENTENCES, MAX_TURNS

    input_arg(parser, "--data", kind="file", hf=True, required=True, help="conversation JSONL (held-out conversations)")
    input_arg(parser, "--checkpoint", required=True, help="the decoder: a training run or checkpoint, an "
                                                          "import-hf folder, a Hugging Face folder")
    parser.add_argument("--kind", required=True, choices=("actor", "knowledge"))
    input_arg(parser, "--references", kind="file", hf=True,
              help="the training conversations: actor references come from them, user histories (knowledge) "
                   "from them and the other threads of --data")
    parser.add_argument("--reference-unit", choices=UNITS, default="conversation",
                        help="actor: the reference is the speaker's previous conversations, each whole (default), "
                             "or single turns")
    parser.add_argument("--reference-conversations", type=int_in(1, MAX_TURNS), default=2,
                        help="whole conversations of the speaker's reference (actor, unit conversation)")
    parser.add_argument("--reference-turns", type=int_in(1, MAX_TURNS), default=3,
                        help="turns of the speaker's reference (actor, unit turn)")
    input_arg(parser, "--documents", kind="folder", help="knowledge: the document set folder")
    parser.add_argument("--knowledge-sentences", type=int_in(1, MAX_SENTENCES), default=2,
                        help="retrieved sentences in a prompt (knowledge)")
    input_arg(parser, "--links", help="knowledge: the linked documents, a folder with urls.jsonl or the index file "
                                      '({"url", "file"|"text"} per line)')
    parser.add_argument("--link-sentences", type=int_in(1, MAX_SENTENCES), default=2,
                        help="the best sentences of the documents linked so far (knowledge, with --links)")
    parser.add_argument("--user-history", type=int_in(0, MAX_TURNS), default=0,
                        help="knowledge: the user's last N turns in other threads (0: none)")
    parser.add_argument("--history-of", choices=HISTORY_OF, default="user",
                        help="whose history: the user answered (default) or the responder")
    parser.add_argument("--without", action="store_true",
                        help="leave out the reference / all knowledge (the baseline)")
    parser.add_argument("--limit", type=int_in(1, MAX_ITEMS), help="only the first N conversations of --data")


def settings_of(args):
    """The builder's settings (DialogueTask) the flags ask for."""
    from megazoo.tasks.dialogue.builder import DialogueTask

    if args.kind == "actor" and not args.without and not args.references:
        raise ValueError("--kind actor needs --references (the training conversations) unless --without")
    if args.kind == "knowledge" and not args.without and not (args.documents or args.links or args.user_history):
        raise ValueError("--kind knowledge needs --documents DIR, --links PATH or --user-history N unless --without")
    return DialogueTask(kind=args.kind, reference_unit=args.reference_unit,
                        reference_conversations=args.reference_conversations, reference_turns=args.reference_turns,
                        reference=not args.without, documents=args.documents,
                        knowledge_sentences=args.knowledge_sentences, links=args.links,
                        link_sentences=args.link_sentences, user_history=args.user_history,
                        history_of=args.history_of, knowledge=not args.without)


def conditioning(settings) -> dict:
    """What the prompts were conditioned on, for the output records."""
    s = settings
    if s.kind == "actor":
        if not s.reference:
            return {"reference": None}
        k = {"conversations": s.reference_conversations} if s.reference_unit == "conversation" else {
            "turns": s.reference_turns}
        return {"reference": {"unit": s.reference_unit, **k}}
    if not s.knowledge:
        return {"documents": None, "links": None, "user_history": None}
    return {"documents": {"path": s.documents, "sentences": s.knowledge_sentences} if s.documents else None,
            "links": {"path": s.links, "sentences": s.link_sentences} if s.links else None,
            "user_history": {"turns": s.user_history, "of": s.history_of} if s.user_history else None}


def pairs_of(args, settings=None) -> list:
    from megazoo.tasks.dialogue.builder import build_pairs
    from megazoo.tasks.dialogue.data import read_conversations

    settings = settings or settings_of(args)
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
