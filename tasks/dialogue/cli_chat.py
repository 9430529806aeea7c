"""`megazoo task dialogue chat CKPT [--knowledge DIR]`: talk to a dialogue model in the terminal.

Each line you type is a turn; the model answers greedily up to the first newline, with the conversation
so far as its context (the last --history turns), in the fine-tuning prompts' format (prompts.py):
you are A, the model B. With --knowledge DIR, the BM25 sentences of that document set for the last two
turns go in front, as the knowledge-grounded fine-tune saw them. /reset forgets the conversation;
/quit, an empty line at the end of input (Ctrl-D) or Ctrl-C ends it.
"""

from __future__ import annotations

import argparse

USER, MODEL = "you", "model"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.argtypes import int_in
    from megazoo.core.fs import input_arg
    from megazoo.tasks.dialogue.stage import MAX_NEW_TOKENS, MAX_SENTENCES, MAX_TURNS

    input_arg(parser, "checkpoint", help="a fine-tuned dialogue model (training run or checkpoint) or any decoder")
    input_arg(parser, "--knowledge", kind="folder",
              help="a document set (folder of .txt files) to ground the answers in")
    parser.add_argument("--sentences", type=int_in(1, MAX_SENTENCES), default=2, help="knowledge sentences per answer")
    parser.add_argument("--history", type=int_in(1, MAX_TURNS), default=8, help="turns of the conversation kept")
    parser.add_argument("--max-new-tokens", type=int_in(1, MAX_NEW_TOKENS), default=48)
    parser.add_argument("--show-prompt", action="store_true", help="print the prompt the model sees")


def build_prompt(turns: list, documents, sentences: int) -> str:
    from megazoo.tasks.dialogue.data import Turn
    from megazoo.tasks.dialogue.prompts import context_block, retrieval_query

    turns = turns + [Turn(MODEL, "")]
    head = ""
    if documents is not None:
        found = documents.retrieve([retrieval_query(turns, len(turns) - 1)], sentences)[0]
        head = f"Knowledge: {' '.join(found)}\n" if found else ""
    return head + context_block(turns, len(turns) - 1)


def run(args) -> int:
    from megazoo.eval.taskkit import load_decoder
    from megazoo.tasks.dialogue.data import Turn
    from megazoo.tasks.dialogue.decode import greedy_lines
    from megazoo.tasks.dialogue.knowledge import DocumentSet

    documents = DocumentSet(args.knowledge) if args.knowledge else None
    model, tok = load_decoder(args.checkpoint, use="dialogue generation")
    grounded = f", grounded in {len(documents.sentences)} sentences of {args.knowledge}" if documents else ""
    print(f"chatting with {args.checkpoint}{grounded}. /reset forgets, /quit ends.", flush=True)
    turns: list = []
    while True:
        try:
            line = input(f"{USER}> ").strip()
        except (EOFError, KeyboardInterrupt):
            print()
            return 0
        if line == "/quit":
            return 0
        if line == "/reset":
            turns = []
            print("(conversation forgotten)", flush=True)
            continue
        if not line:
            continue
        turns = (turns + [Turn(USER, line)])[-args.history:]
        while turns[0].speaker != USER:  # the kept history starts with you, so you stay A
            turns = turns[1:]
        prompt = build_prompt(turns, documents, args.sentences)
        if args.show_prompt:
            print("[prompt]\n" + prompt + "\n[/prompt]", flush=True)
        try:
            reply = greedy_lines(model, tok, [prompt], args.max_new_tokens, 1)[0]
        except KeyboardInterrupt:
            print()
            return 0
        turns.append(Turn(MODEL, reply))
        print(f"{MODEL}> {reply}", flush=True)
