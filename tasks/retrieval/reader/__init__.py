"""The reader project over the retriever (Sachan et al., ACL 2021): an extractive BERT span reader
over each question's top-k retrieved passages, trained by the answer's marginal likelihood on fixed
retrieval (`reader`), end to end with the retriever's query tower (`e2e`, "individual top-k", or
"joint top-k" with `task.top_k_mode: joint`), or on masked salient spans (`mss`, REALM-style
pretraining of the query tower). It reads the retriever of the package above (its checkpoints,
encoder, faiss index); the package above reaches it through `task.component` (../builder.py),
the train stage (../stages.py) and the salient-span tagger its question generator uses
(../generate.py).

    span.py      reader rows, the span head, marginal likelihood, best span
    task.py      the stages' task.* settings (ReaderTask)
    model.py     the trained chunk: reader and, end to end, the query tower
    data.py      the evidence (passage vectors, index), retrieved top-k, trainer sources, collate
    loss.py      the marginal likelihood on a micro-batch
    joint.py     joint top-k (task.top_k_mode: joint): one normalisation over the k passages' spans
    builder.py   the task builder on the core trainer (re-retrieval before steps end to end)
    evaluate.py  SQuAD EM/F1 (eval/metrics), answer recall and DPR top-k; the e2e retriever written out
    train.py     the train stage's run of a reader recipe: the trainer, then reader.json and its predictions
    salient.py   the rule-based salient-span tagger (also the generator's answers)
    mss.py       masked salient span examples
"""
