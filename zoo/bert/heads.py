"""Names of a pretrained BERT's tensors that a fine-tuned model leaves out.

A task model (zoo/heads: sequence, token, span, choice) is built without the masked-LM head
(`lm_dense`, `lm_norm`, `head`, `lm_bias`) and the sentence-order / next-sentence head
(`binary_head`); the span and token heads also go without the pooler, as Hugging Face's
*ForQuestionAnswering / *ForTokenClassification do. A builder lists them as `unused_ok` so that
`train.init_from` (zoo/pretrained.py) reports them as unused instead of refusing the folder.
"""

# prefixes of the pretraining heads' parameter names (zoo/bert/model.py)
PRETRAINING_HEADS = ("lm_dense.", "lm_norm.", "lm_bias", "head.", "binary_head.")
# the pooler (dense + tanh on [CLS]); only the sequence and choice heads read it
POOLER = ("pooler.",)
