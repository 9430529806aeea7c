"""The stages of `megazoo task retrieval ...`: the verbs of tasks/cli.py VERBS, plus the extra below.
The retriever (ICT/DPR) lives in this package, the reader, end-to-end and salient-span project in
reader/; one `train` stage trains any of them, as its recipe says (stages.py)."""

from megazoo.tasks.retrieval.stages import TRAINING, TrainStage

STAGES: dict[str, object] = {
    "data": ("megazoo.tasks.retrieval.cli_data", "write a psgs_w100.tsv collection and NQ-style question sets from "
                                                 "offline text: data OUT_DIR [--seed N]"),
    "train": TrainStage("retrieval", "train the bi-encoder (task.objective: ict|supervised) or the span reader "
                                     "(task.component: reader|e2e|mss), as the recipe says: train RECIPE "
                                     "[--set k=v ...] [--nproc N]",
                        recipe=", ".join(row.recipe for row in TRAINING.values())),
    "store": ("megazoo.tasks.retrieval.cli_store", "stream a psgs_w100.tsv into a memory-mapped passage store: store "
                                                    "--passages FILE.tsv --out STORE"),
    "embed": ("megazoo.tasks.retrieval.cli_embed", "embed a store's passages in shards across ranks: embed --store "
                                                    "STORE --checkpoint CKPT --out VEC [--nproc N]"),
    "index": ("megazoo.tasks.retrieval.cli_index", "build a faiss index from a vectors folder (or embed a .tsv in "
                                                    "process): index --vectors VEC | --passages FILE.tsv --checkpoint "
                                                    "CKPT --out DIR [--index-factory SPEC] [--index-shards K]"),
    "evaluate": ("megazoo.tasks.retrieval.cli_evaluate", "top-k accuracy (DPR): evaluate --passages FILE.tsv --qas FILE "
                                                          "--checkpoint CKPT [--index DIR] --out FILE.json"),
}

# stages that are none of data / train / evaluate / sample
EXTRAS = {"store": "turn a psgs_w100.tsv into a memory-mapped passage store that any rank reads by row: a "
                   "collection prepared for the other stages, not a data set in an official format",
          "embed": "embed every passage of a store with a trained encoder into shards of vectors, resumable and "
                   "shared across ranks: a model's artifact the index is built from",
          "index": "embed a passage collection with a trained encoder into a faiss index (flat, IVF or HNSW) that "
                   "evaluate --index and the reader's retrieval search: a model's artifact, not a data set in an "
                   "official format, a training run, an evaluation or a sample"}

# older stage names, still accepted (the dispatcher prints a one-line note); the recipe, not the old
# name, says what `train` trains
ALIASES = {"generate": "data", "pretrain": "train", "finetune": "train", "reader": "train", "e2e": "train",
           "mss": "train"}
