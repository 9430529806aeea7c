"""Open-domain neural retrievers (Sachan et al., ACL 2021) on the core trainer: a BERT bi-encoder
(shared or separate query/context towers) trained with the inverse cloze task or DPR-style
supervision, a faiss evidence index, DPR's top-k evaluation, and an extractive span reader over the
retrieved passages, trained on fixed retrieval, end to end with the query encoder, or on masked
salient spans (REALM-style pretraining).

    from megazoo.tasks.retrieval import read_passages, read_qas, has_answer, top_k_accuracy
    passages = read_passages("psgs_w100.tsv")        # id<TAB>text<TAB>title, header skipped
    questions = read_qas("nq-test.csv")              # or nq-*.json
    has_answer(["Mary Shelley"], passage.text)       # DPR's tokenised sub-sequence match

At Wikipedia scale the collection is a memory-mapped store (store.py), embedded in shards across
ranks (embed.py, vectors.py) and indexed from the shards with any faiss factory string (index_build.py):
`megazoo task retrieval store|embed|index`.

Training is a recipe for the core trainer (`task: retrieval`, megazoo.tasks.retrieval.builder);
the stages are `megazoo task retrieval data|train|store|embed|index|evaluate ...` (cli.py). `train` trains what
its recipe names (stages.py): the bi-encoder (`task.objective: ict|supervised`) or, in the reader/
subpackage, the span reader (`task.component: reader|e2e|mss`), all on the core trainer.
"""

from megazoo.eval.metrics import has_answer, top_k_accuracy
from megazoo.eval.metrics import simple_tokenize as simple_tokens
from megazoo.tasks.retrieval.data import (Passage, Question, RetrievalFormatError, iter_dpr_json, iter_passages,
                                          iter_qas_csv, read_dpr_json, read_passages, read_qas, read_qas_csv)
from megazoo.tasks.retrieval.store import build_store, open_store

__all__ = ["Passage", "Question", "RetrievalFormatError", "build_store", "has_answer", "iter_dpr_json", "iter_passages",
           "iter_qas_csv", "open_store", "read_dpr_json", "read_passages", "read_qas", "read_qas_csv", "simple_tokens",
           "top_k_accuracy"]
