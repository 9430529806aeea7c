"""`megazoo generate CHECKPOINT --prompt TEXT`: continue prompts with a checkpoint, at any layout.

    megazoo generate runs/quickstart/checkpoints --prompt "The module" --max-new-tokens 40
    megazoo generate smollm2 --prompt "Hello" --do-sample --top-p 0.9 --tp 2 --pp 2    # 4 local ranks

CHECKPOINT is an `import-hf` folder or a training checkpoint (a run's checkpoints/ folder or one
iter_N in it) with its tokenizer; GPT/Llama decoders, and T5 (tensor parallelism only). With
--tp/--pp/--vpp above 1 the model is split over tp x pp local ranks (gloo on CPU, nccl on GPUs),
every rank draws the same tokens, and rank 0 prints them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from megazoo.core.argtypes import float_in, int_in, probability
from megazoo.core.fs import input_arg
from megazoo.core.plan.traits import TRAITS, arch_traits

PROG = "megazoo generate"
DTYPES = ("fp32", "bf16", "auto")
DEFAULT_NEW_TOKENS = 40
# bounds of the numeric flags: generous for real use, far below what would reach the allocator
MAX_NEW_TOKENS = 131072
MAX_TOP_K = 1 << 20  # above every vocabulary
MAX_RANKS = 64  # local processes of one generate (tp x pp)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    input_arg(parser, "checkpoint", kind="folder",
              help="an import-hf folder or a training checkpoint (with its tokenizer)")
    parser.add_argument("--prompt", action="append", required=True, help="a prompt (repeat for a batch)")
    parser.add_argument("--max-new-tokens", type=int_in(1, MAX_NEW_TOKENS), default=None,
                        help=f"tokens to add, 1 to {MAX_NEW_TOKENS} (default {DEFAULT_NEW_TOKENS}, or what the "
                             "model's context leaves)")
    parser.add_argument("--do-sample", action="store_true", help="sample (default: greedy)")
    parser.add_argument("--temperature", type=float_in(1e-4, 1e4), default=1.0, help="1e-4 to 1e4 (default 1)")
    parser.add_argument("--top-k", type=int_in(0, MAX_TOP_K), default=0, help="0: off")
    parser.add_argument("--top-p", type=probability, default=1.0, help="in (0, 1]; 1: off")
    parser.add_argument("--repetition-penalty", type=float_in(1e-4, 1e4), default=1.0, help="1e-4 to 1e4 (default 1)")
    parser.add_argument("--stop", action="append", default=None, help="a stop string (repeatable)")
    parser.add_argument("--seed", type=int_in(0, 2**63 - 1), default=0)
    parser.add_argument("--tp", type=int_in(1, MAX_RANKS), default=1, help=f"tensor-parallel ranks (1 to {MAX_RANKS})")
    parser.add_argument("--pp", type=int_in(1, MAX_RANKS), default=1, help=f"pipeline stages (1 to {MAX_RANKS})")
    parser.add_argument("--vpp", type=int_in(1, 1024), default=1, help="model chunks per pipeline rank")
    parser.add_argument("--dtype", choices=DTYPES, default="fp32",
                        help="the weights' dtype; auto: bf16 where this CPU's bf16 products beat fp32 ones "
                             "(the trainer's measured probe, core/nn/decode_linear.decode_dtype), else fp32")
    parser.add_argument("--json", action="store_true", help="print one JSON object per prompt")


def run(args) -> int:
    from megazoo.core.parallel.launch import launch_local

    # user errors are ValueErrors: one line and exit 2 at the boundary (megazoo/cli.py)
    if args.vpp > 1 and args.pp == 1:
        raise ValueError(f"--vpp {args.vpp} needs --pp > 1")
    if args.tp * args.pp > MAX_RANKS:
        raise ValueError(f"--tp {args.tp} x --pp {args.pp} = {args.tp * args.pp} local ranks; at most {MAX_RANKS}")
    payload = {k: v for k, v in vars(args).items() if k != "func"}
    try:
        check(payload)  # before any rank starts: one clear message instead of one per rank
    except (ValueError, OSError):
        raise
    except Exception as exc:  # noqa: BLE001 - a checkpoint damaged in a way no reader names: still one line
        raise ValueError(f"{args.checkpoint}: cannot be used for generation ({type(exc).__name__}: {exc})") from None
    nproc = args.tp * args.pp
    if nproc == 1:
        return generate_here(payload)
    return launch_local(rank_main, payload, nproc, PROG)


def check(payload: dict) -> None:
    """Raise if the checkpoint cannot generate at this layout (architecture, tokenizer, layout)."""
    from megazoo.zoo.hf import check_layout, config_from_dict
    from megazoo.zoo.io import model_config, tokenizer_dir

    arch, cfg_dict = model_config(payload["checkpoint"])
    if arch not in TRAITS or not TRAITS[arch].generates:
        raise ValueError(f"{payload['checkpoint']} holds a {arch!r} model; generation needs a decoder (gpt, llama) "
                         "or t5")
    tok_dir = tokenizer_dir(payload["checkpoint"])
    if tok_dir is None:
        raise ValueError(f"{payload['checkpoint']} has no tokenizer; import it with its tokenizer folder")
    cfg = config_from_dict(arch, cfg_dict)
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(str(tok_dir))
    except Exception as exc:  # noqa: BLE001 - transformers/tokenizers raise many kinds for a damaged folder
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{tok_dir}: transformers could not load the tokenizer of {payload['checkpoint']} "
                         f"({reason})") from None
    n = len(tok)
    if n > cfg.vocab_size:
        raise ValueError(f"{payload['checkpoint']}: its tokenizer has {n} tokens but the model only {cfg.vocab_size}; "
                         "it was trained on synthetic data (data.synthetic) or with another tokenizer, so it cannot "
                         "read text")
    check_layout(arch, cfg, payload["tp"], payload["pp"])
    payload["max_new_tokens"] = check_prompts(arch, cfg, tok, payload["prompt"], payload["max_new_tokens"])


def check_prompts(arch: str, cfg, tok, prompts: list[str], max_new_tokens: int | None) -> int:
    """The number of tokens to generate. Raise if a prompt is empty, or (decoders) if prompt +
    new tokens exceed the model's context: the positions past it do not exist, so say the limit
    instead of failing inside the model. Without --max-new-tokens (None): the default, or what
    the longest prompt leaves of the context (said on stderr)."""
    limit = getattr(cfg, "seq_length", None) if arch_traits(arch).causal else None
    lengths = []
    for i, text in enumerate(prompts, 1):
        lengths.append(len(tok(text, add_special_tokens=_special_tokens(arch))["input_ids"]))
        if not text.strip() or lengths[-1] == 0:
            raise ValueError(f"--prompt {i} is empty; give the text to continue")
    wanted = DEFAULT_NEW_TOKENS if max_new_tokens is None else max_new_tokens
    for i, n in enumerate(lengths, 1):
        if limit and n + wanted > limit:
            if n < limit and max_new_tokens is None:
                wanted = limit - max(lengths)
                if wanted >= 1:
                    print(f"{PROG}: note: {wanted} new tokens, all the model's context of {limit} leaves after "
                          f"the longest prompt ({max(lengths)} tokens)", file=sys.stderr)
                    return wanted
            room = f"at most {limit - n} new tokens for it" if n < limit else "a prompt under that length"
            raise ValueError(f"--prompt {i} has {n} tokens and --max-new-tokens is {wanted}: {n + wanted} "
                             f"tokens in all, more than the model's context of {limit} (model seq_length); "
                             f"use {room}")
    return wanted


def _special_tokens(arch: str) -> bool:
    """Whether a prompt is tokenised with the tokenizer's special tokens: an encoder-decoder reads it
    as an encoder input (ending with </s>); a decoder continues the raw text."""
    return arch_traits(arch).encoder_decoder


def rank_main(payload: dict) -> None:
    from megazoo.core.parallel.launch import setup_rank, teardown_rank

    _, world = setup_rank()
    try:
        if generate_here(payload) != 0:
            raise SystemExit(2)
    finally:
        teardown_rank(world)


def weights_dtype(name: str, device):
    """The weights' dtype for --dtype NAME (None: the model's own, fp32): auto picks bf16 where this
    device's bf16 products are faster (decode_dtype: the cached probe), else fp32."""
    import torch

    if name == "auto":
        from megazoo.core.nn.decode_linear import decode_dtype

        return torch.bfloat16 if decode_dtype(device) == torch.bfloat16 else None
    return torch.bfloat16 if name == "bf16" else None


def load(payload: dict, ctx):
    """(arch, this rank's model or chunks, tokenizer) of the checkpoint at this rank's layout."""
    import torch
    from transformers import AutoTokenizer

    from megazoo.core.parallel.pipeline import build_chunks
    from megazoo.zoo.hf import build_model, config_from_dict, load_full_state
    from megazoo.zoo.io import load_model, tokenizer_dir

    arch, cfg_dict, state = load_model(payload["checkpoint"])  # run() has check()ed it
    tok_dir = tokenizer_dir(payload["checkpoint"])
    cfg = config_from_dict(arch, cfg_dict)
    dtype = weights_dtype(payload["dtype"], ctx.device)
    if ctx.pp == 1:
        model = load_full_state(build_model(arch, cfg, ctx, dtype=dtype), state, ctx).eval()
    else:
        model = build_chunks(lambda **kw: build_model(arch, cfg, ctx, dtype=dtype, **kw), cfg.num_layers, ctx)
        model = [load_full_state(c, state, ctx).eval() for c in model]
    return arch, model, AutoTokenizer.from_pretrained(str(tok_dir))


def generate_here(payload: dict) -> int:
    """Generate on this rank (alone, or one rank of an initialised world); rank 0 prints."""
    import torch.distributed as dist

    from megazoo.core.parallel.context import ParallelConfig, ParallelContext
    from megazoo.zoo.generate import generate
    from megazoo.zoo.hf import HFImportError, LayoutError
    from megazoo.zoo.io import CheckpointError

    distributed = dist.is_available() and dist.is_initialized()
    ctx = (ParallelContext.build(ParallelConfig(tp=payload["tp"], pp=payload["pp"], vpp=payload["vpp"]))
           if distributed else ParallelContext.single())
    try:
        arch, model, tok = load(payload, ctx)
    except (CheckpointError, HFImportError, LayoutError, ValueError, FileNotFoundError) as e:
        from megazoo.core.train.user_errors import debug

        if debug():
            raise  # MEGAZOO_DEBUG=1: the traceback behind the line
        if ctx.rank == 0:
            print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    prompts = [tok(p, add_special_tokens=_special_tokens(arch))["input_ids"] for p in payload["prompt"]]
    start = time.perf_counter()
    out = generate(model, prompts, payload["max_new_tokens"], do_sample=payload["do_sample"],
                   temperature=payload["temperature"], top_k=payload["top_k"], top_p=payload["top_p"],
                   repetition_penalty=payload["repetition_penalty"], eos_token_id=tok.eos_token_id,
                   pad_token_id=tok.pad_token_id, stop_strings=payload["stop"], tokenizer=tok, seed=payload["seed"])
    seconds = time.perf_counter() - start
    if ctx.rank == 0:
        for prompt, new in zip(payload["prompt"], out):
            text = tok.decode(new, skip_special_tokens=True)
            if payload["json"]:
                print(json.dumps({"prompt": prompt, "continuation": text, "tokens": new}))
            else:
                print(f"{prompt}\033[1m{text}\033[0m" if sys.stdout.isatty() else prompt + text)
        n = sum(len(o) for o in out)
        layout = f"tp {ctx.tp} x pp {ctx.pp}" + (f", vpp {ctx.vpp}" if ctx.vpp > 1 else "")
        print(f"{n} new tokens in {seconds:.2f} s ({n / max(seconds, 1e-9):.1f} tokens/s; {layout})", file=sys.stderr)
    return 0
