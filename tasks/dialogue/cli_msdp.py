"""`megazoo task dialogue msdp --stage knowledge|response --data FILE --checkpoint CKPT --out FILE.jsonl`

Multi-stage prompting of a frozen decoder (msdp.py). --data: the samples to answer (flattened TSV, WoW
.json, ...); --examples: the training samples the prompts' examples come from (default train.tsv or
train.json beside --data). Stage response reads --knowledge: the knowledge stage's FILE.jsonl,
`gold` (the data's own knowledge, an upper bound) or `none` (the baseline prompted without knowledge).
Writes one {"line", "text", "examples"} per sample, in data order (`evaluate --generations` reads it):
`examples` lists the example samples of its prompt ({"sample": index in --examples, "line"/"item"}),
in prompt order; FILE.selection.json beside it records how they were chosen.

--selection megatron (default): Megatron-LM's selection (selection.py, response_selection.py): the pool
filters of --data-type, the query `( topic ) last three turns` embedded by --query-encoder (a retriever
checkpoint of `task retrieval train`: its query tower, as MSDP's fine-tuned DPR question encoder) or, without
one, by the sentence encoder --embedder (all-MiniLM-L6-v2 by default), stage-2 examples chosen by how much of
the knowledge their response copies and drawn with --seed (default 1234), stage-2 texts word-tokenised
(--no-word-tokenize: as written). --selection simple: msdp.py's selection (MiniLM, last turn, any grounded
sample, --seed default 0), the texts as written.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.argtypes import int_in
    from megazoo.core.fs import input_arg, output_arg
    from megazoo.tasks.dialogue.selection import DATA_TYPES, UNSEEN_ORDERS
    from megazoo.tasks.dialogue.stage import MAX_BATCH, MAX_ITEMS, MAX_NEW_TOKENS, MAX_SEED, MAX_SHOTS

    parser.add_argument("--stage", required=True, choices=("knowledge", "response"))
    input_arg(parser, "--data", kind="file", hf=True, required=True,
              help="the samples: flattened TSV, WoW .json or .jsonl")
    input_arg(parser, "--checkpoint", required=True, help="the frozen decoder (import-hf folder, HF folder, "
                                                          "training checkpoint)")
    output_arg(parser, "--out", kind="file", also=lambda out: [prompt_path(out), selection_path(out)], required=True,
               help="FILE.jsonl: one {line, text, examples} per sample, in data order (the first prompt in "
                    "FILE.prompt.txt, the selection settings in FILE.selection.json)")
    input_arg(parser, "--examples", kind="file", hf=True, help="training samples for the prompts' examples (default "
                                                      "train.tsv or train.json beside --data)")
    # a path, or the words gold / none (a missing path is not checked by the policy: nothing to protect)
    input_arg(parser, "--knowledge", kind="file",
              help="stage response: the knowledge stage's FILE.jsonl, gold or none")
    parser.add_argument("--selection", choices=("megatron", "simple"), default="megatron",
                        help="megatron: Megatron-LM's filters, query and copy-ratio examples (default); simple: msdp.py's")
    input_arg(parser, "--query-encoder", kind="folder",
              help="stage knowledge: a bi-encoder checkpoint (`megazoo task retrieval train`); its query tower embeds "
                   "queries and examples, as MSDP's DPR question encoder")
    input_arg(parser, "--embedder", kind="folder", help="stage knowledge without --query-encoder: a sentence encoder "
                                                        "folder (default the offline all-MiniLM-L6-v2)")
    parser.add_argument("--data-type", choices=("auto", *DATA_TYPES), default="auto",
                        help="Megatron's pool filters: wow_seen (test_random_split), wow_unseen (test_topic_split) or "
                             "woi; auto: wow_seen when every --data topic has grounded examples, else wow_unseen")
    parser.add_argument("--unseen-order", choices=UNSEEN_ORDERS, default="megatron",
                        help="unseen topics: megatron walks the pool from the least similar (as its code sorts), "
                             "nearest from the most similar (as the paper says)")
    parser.add_argument("--no-word-tokenize", dest="word_tokenize", action="store_false",
                        help="selection megatron: stage-2 texts as written, not as nltk word tokens")
    parser.add_argument("--shots", type=int_in(1, MAX_SHOTS),
                        help="examples per prompt (default 10 knowledge, 20 response)")
    parser.add_argument("--max-new-tokens", type=int_in(1, MAX_NEW_TOKENS), default=64)
    parser.add_argument("--batch", type=int_in(1, MAX_BATCH), default=4)
    parser.add_argument("--limit", type=int_in(1, MAX_ITEMS), help="only the first N samples")
    parser.add_argument("--seed", type=int_in(0, MAX_SEED),
                        help="the order the fixed response examples are drawn in (default 1234 megatron, 0 simple)")


def prompt_path(out):
    """FILE.prompt.txt beside FILE.jsonl: the first prompt as the model saw it."""
    from pathlib import Path

    return Path(out).with_suffix(".prompt.txt")


def selection_path(out):
    """FILE.selection.json beside FILE.jsonl: how the examples were chosen."""
    from pathlib import Path

    return Path(out).with_suffix(".selection.json")


def _examples_path(args):
    from pathlib import Path

    from megazoo.eval.readers.common import MissingFile

    if args.examples:
        return Path(args.examples)
    folder = Path(args.data).parent
    for name in ("train.tsv", "train.json", "train.jsonl"):
        if (folder / name).is_file():
            return folder / name
    raise MissingFile(f"no --examples given and no train.tsv / train.json beside {args.data}; give --examples FILE")


def _embedder(args) -> tuple:
    """(embed(texts) -> vectors, a record of the encoder) for the knowledge stage."""
    from megazoo.zoo.assets import default_embedder_dir
    from megazoo.zoo.embed import Embedder

    if args.query_encoder and args.embedder:
        raise ValueError("give --query-encoder (a bi-encoder checkpoint) or --embedder (a sentence encoder), not both")
    if args.query_encoder:
        from megazoo.eval.question_tower import QuestionTower

        tower = QuestionTower(args.query_encoder, flag="--query-encoder")
        record = {"kind": "bi-encoder query tower", "path": str(args.query_encoder), "pooling": tower.pooling,
                  "similarity": tower.similarity, "separate_towers": tower.separate}
        return (lambda texts: tower.encode(list(texts))), record
    folder = args.embedder or default_embedder_dir()
    emb = Embedder(folder)
    return (lambda texts: emb.encode(list(texts), pooling="mean", normalize=True)), \
        {"kind": "sentence encoder", "path": str(args.embedder or "all-MiniLM-L6-v2"), "pooling": "mean",
         "similarity": "cosine"}


def _knowledge(args, samples) -> list[str] | None:
    from megazoo.tasks.dialogue.evaluate import read_generations

    if args.knowledge is None:
        raise ValueError("--stage response needs --knowledge FILE.jsonl (the knowledge stage's output), gold or none")
    if args.knowledge == "none":
        return None
    if args.knowledge == "gold":
        return [s.knowledge for s in samples]
    return read_generations(args.knowledge, len(samples), args.data)


def _where(pool, indices) -> list[dict]:
    return [{"sample": i, **pool[i].where} for i in indices]


def _prompts(args, samples, all_samples, pool) -> tuple[list[str], list[list[dict]], dict]:
    """(prompts, per sample its examples, the selection record)."""
    from megazoo.tasks.dialogue import msdp, response_selection, selection

    record = {"selection": args.selection, "stage": args.stage, "examples": str(_examples_path(args))}
    if args.selection == "simple":
        seed = 0 if args.seed is None else args.seed
        if args.stage == "knowledge":
            embed, record["encoder"] = _embedder(args)
            prompts, chosen = msdp.knowledge_choices(samples, pool, embed, args.shots or msdp.KNOWLEDGE_SHOTS)
            return prompts, [_where(pool, c) for c in chosen], record
        fixed = msdp.response_example_indices(pool, args.shots or msdp.RESPONSE_SHOTS, seed)
        prompts = msdp.response_prompts(samples, _knowledge(args, samples), [pool[i] for i in fixed])
        return prompts, [_where(pool, fixed)] * len(samples), {**record, "seed": seed}
    data_type = args.data_type if args.data_type != "auto" else selection.guess_data_type(all_samples, pool)
    config = selection.SelectionConfig(data_type=data_type, unseen_order=args.unseen_order,
                                       word_tokenize=args.word_tokenize,
                                       seed=selection.SelectionConfig.seed if args.seed is None else args.seed)
    if args.stage == "knowledge":
        if args.shots:
            config.knowledge_shots = args.shots
        embed, record["encoder"] = _embedder(args)
        prompts, chosen = selection.knowledge_prompts(samples, pool, embed, config,
                                                      test_topics={s.topic for s in all_samples})
        record.update(data_type=data_type, unseen_order=config.unseen_order, shots=config.knowledge_shots)
        return prompts, [_where(pool, c) for c in chosen], record
    n = args.shots or config.response_shots
    fixed = response_selection.response_examples(pool, n, config.seed)
    prompts = response_selection.response_prompts(samples, _knowledge(args, samples), [pool[i] for i in fixed],
                                                  config.word_tokenize)
    record.update(seed=config.seed, shots=n, word_tokenize=config.word_tokenize)
    return prompts, [_where(pool, fixed)] * len(samples), record


def run(args) -> int:
    import json
    from pathlib import Path

    from megazoo.core.fs import write_text_atomic
    from megazoo.eval.taskkit import load_decoder
    from megazoo.tasks.dialogue.data import read_any
    from megazoo.tasks.dialogue.decode import greedy_lines

    all_samples = read_any(args.data)
    samples = all_samples[: args.limit]
    pool = read_any(_examples_path(args))
    prompts, chosen, record = _prompts(args, samples, all_samples, pool)
    model, tok = load_decoder(args.checkpoint, use="dialogue generation")

    def progress(done, total):
        print(f"\r{args.stage}: {done}/{total}", end="", file=sys.stderr, flush=True)

    texts = greedy_lines(model, tok, prompts, args.max_new_tokens, args.batch, progress)
    print(file=sys.stderr)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = ({**s.where, "text": t, "examples": c} for s, t, c in zip(samples, texts, chosen))
    write_text_atomic(out, "".join(json.dumps(r) + "\n" for r in rows))
    if prompts:  # the first prompt as the model saw it, to read
        write_text_atomic(prompt_path(out), prompts[0] + "\n")
    write_text_atomic(selection_path(out), json.dumps(record, indent=1) + "\n")
    print(f"{len(texts)} {args.stage} generations written to {out} ({args.selection} selection)")
    return 0
