"""The stages of `megazoo task retrieval ...`."""

STAGES: dict[str, tuple[str, str]] = {
    "pretrain": ("megazoo.tasks.retrieval.cli_pretrain", "unsupervised pretraining (task.objective: ict) of the "
                                                          "bi-encoder: pretrain RECIPE [--set k=v ...] [--nproc N]"),
    "finetune": ("megazoo.tasks.retrieval.cli_finetune", "supervised DPR-style fine-tuning on nq-train.json: finetune "
                                                          "RECIPE [--set k=v ...] [--nproc N]"),
    "index": ("megazoo.tasks.retrieval.cli_index", "embed a psgs_w100.tsv into a faiss index: index --passages FILE.tsv "
                                                    "--checkpoint CKPT --out DIR [--index flat|ivf|hnsw]"),
    "evaluate": ("megazoo.tasks.retrieval.cli_evaluate", "top-k accuracy (DPR): evaluate --passages FILE.tsv --qas FILE "
                                                          "--checkpoint CKPT [--index DIR] --out FILE.json"),
    "reader": ("megazoo.tasks.retrieval.cli_reader", "the extractive span reader trained on fixed retrieval "
                                                      "(marginal likelihood over the top-k): reader RECIPE [--nproc N]"),
    "e2e": ("megazoo.tasks.retrieval.cli_e2e", "end-to-end reader + query encoder, individual top-k, index "
                                                "refreshed every N steps: e2e RECIPE [--set k=v ...]"),
    "mss": ("megazoo.tasks.retrieval.cli_mss", "masked salient span pretraining (REALM-style, from an ICT retriever): "
                                                "mss RECIPE [--set k=v ...]"),
    "generate": ("megazoo.tasks.retrieval.cli_generate", "write a psgs_w100.tsv collection and NQ-style question sets "
                                                          "from offline text: generate OUT_DIR [--seed N]"),
}
