"""GPT / Llama-style decoders."""
from megazoo.zoo.gpt.config import GPTConfig, TINY, flops_per_iteration, flops_per_token, gpt2_layout, llama_layout, num_parameters
from megazoo.zoo.gpt.model import GPTModel

__all__ = ["GPTConfig", "GPTModel", "TINY", "flops_per_iteration", "flops_per_token", "gpt2_layout", "llama_layout", "num_parameters"]
