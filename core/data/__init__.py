"""megazoo.core.data: tokenizers, Megatron .bin/.idx files, GPT/BERT/T5 samples, blending, the corpus.

What the trainer calls
----------------------
    from megazoo.core.data import build_tokenizer, build_gpt_datasets, micro_batches

    tok = build_tokenizer("gpt2")            # or "bert-wordpiece", "sentencepiece:PATH", "hf:DIR"
    splits = build_gpt_datasets(cfg.data, tok, seq_length=cfg.model.seq_length, seed=cfg.train.seed,
                                num_samples=(steps * global_batch, eval_samples, test_samples))
    splits.train[i] -> {"tokens": int64[seq_length + 1]}   input = tokens[:-1], labels = tokens[1:]
    for batch in micro_batches(splits.train, micro_batch, dp_rank, dp_size, consumed_samples,
                               as_torch=True):
        batch["tokens"]                     # [micro_batch, seq_length + 1]

build_gpt_datasets(config, tokenizer, seq_length, seed, num_samples=None) -> Splits(train, valid, test)
    config: a DataConfig, a dict or any object with `path` (None: the embedded corpus; a prefix; or
    weights and prefixes alternating, like Megatron's --data-path), `split` ("949,50,1"),
    `cache_dir` (sample-index cache, default $MEGAZOO_CACHE/indices, $MEGAZOO_CACHE defaulting to
    ~/.cache/megazoo). num_samples: (train, valid, test) sample counts wanted, None entries meaning
    one epoch; a split is None when its weight is 0 or it is too small for a sample (train: error).
    Samples are deterministic for a seed and identical on every rank; indices are cached on disk.
build_bert_datasets(config, tokenizer, seq_length, seed, num_samples=None, masking_prob=0.15,
                    short_seq_prob=0.1, binary_head=True)   items: text, types, labels (-1 = not
    predicted), loss_mask, padding_mask, is_random (sentence order swapped), truncated
build_t5_datasets(config, tokenizer, encoder_seq_length, seed, num_samples=None,
                  decoder_seq_length=None)   items: text_enc, text_dec, labels (-1 = pad),
    loss_mask, enc_mask, dec_mask; the tokenizer needs sentinels (build_tokenizer(..., extra_ids=100))
DistributedBatchSampler(total_samples, consumed_samples, micro_batch, dp_rank, dp_size,
                        drop_last=True, loop=False)  -> lists of sample indices, disjoint per DP rank;
    each micro-batch step consumes micro_batch * dp_size samples (its `step_size`), so a resumed run
    passes consumed_samples = steps_done * global_batch.
micro_batches(dataset, micro_batch, dp_rank=0, dp_size=1, consumed_samples=0, loop=False,
              as_torch=False) -> iterator of collated dicts ([micro_batch, ...] int64 arrays/tensors)

Other pieces
------------
    Tokenizer (encode, encode_batch, decode, vocab_size, eod/pad/cls/sep/mask/bos/eos/unk,
        sentinels), build_tokenizer(kind, path_or_name=None, extra_ids=0), train_sentencepiece(...)
    IndexedDataset(prefix) reader (memmap, validated), IndexedDatasetWriter(prefix, dtype),
        merge_datasets(prefixes, out)
    preprocess_files(inputs, tokenizer, output_prefix, workers, append_eod, ...)  (`megazoo preprocess`)
    parse_data_path(value), parse_split("949,50,1"), BlendedDataset(datasets, weights, size)
    corpus.documents(name="stdlib") -> list[str]; corpus.corpus_prefix(tokenizer) -> cached prefix
    DataError: every bad-input error (its message names the file, and the line where there is one)

Heavy libraries (transformers, sentencepiece) load only when a tokenizer needs them.
"""

from megazoo.core.data.blend import BlendedDataset, parse_data_path, parse_split
from megazoo.core.data.builders import DataConfig, Splits, build_bert_datasets, build_gpt_datasets, build_t5_datasets
from megazoo.core.data.errors import DataError
from megazoo.core.data.indexed import IndexedDataset, IndexedDatasetWriter, merge_datasets
from megazoo.core.data.preprocess import preprocess as preprocess_files
from megazoo.core.data.sampler import DistributedBatchSampler, collate, micro_batches
from megazoo.core.data.tokenizers import Tokenizer, build_tokenizer, train_sentencepiece

__all__ = [
    "BlendedDataset", "DataConfig", "DataError", "DistributedBatchSampler", "IndexedDataset",
    "IndexedDatasetWriter", "Splits", "Tokenizer", "build_bert_datasets", "build_gpt_datasets",
    "build_t5_datasets", "build_tokenizer", "collate", "merge_datasets", "micro_batches",
    "parse_data_path", "parse_split", "preprocess_files", "train_sentencepiece",
]
