"""BERT encoders: Megatron's pre-LN layout and the original post-LN one (Hugging Face BERT)."""
from megazoo.zoo.bert.config import TINY, BertConfig, megatron_bert, original_bert
from megazoo.zoo.bert.model import BertModel, BertOutput

__all__ = ["BertConfig", "BertModel", "BertOutput", "TINY", "megatron_bert", "original_bert"]
