"""T5 encoder-decoder (tensor- and sequence-parallel; pipeline parallelism is refused, as in Megatron-LM)."""
from megazoo.zoo.t5.config import TINY, T5Config
from megazoo.zoo.t5.model import T5Cache, T5Model, relative_position_bucket

__all__ = ["T5Cache", "T5Config", "T5Model", "TINY", "relative_position_bucket"]
