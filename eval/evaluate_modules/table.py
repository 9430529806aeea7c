"""The metric table: one row per megazoo metric offered as a Hugging Face ``evaluate`` module.

A row names the input columns the metric accepts, what it says about itself, and the plain
function of megazoo.eval.metrics that computes it (so both routes give the same numbers). The
module scripts are generated from the row names (megazoo.eval.evaluate_modules.module_path), so a
new metric costs its function in eval/metrics and one row here. This file needs neither
``evaluate`` nor ``datasets``; base.py turns a row into an ``evaluate.Metric``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from megazoo.eval import metrics as m


@dataclass(frozen=True)
class Spec:
    compute: Callable[..., dict]  # called with the input columns and the caller's options as keywords
    inputs: tuple[dict, ...]  # accepted layouts: column -> "string" | "int64" | "float64" | [type] (a sequence)
    description: str
    usage: str  # evaluate's inputs_description: the arguments and what comes back
    citation: str = ""


def _toxicity(predictions, references, threshold=0.5, strict=True):
    k = len(predictions[0]) if predictions else 1
    return m.toxicity_scores(predictions, k=k, prompt_toxicity=references, threshold=threshold, strict=strict)


ONE_EACH = {"predictions": "string", "references": "string"}
LIST_EACH = {"predictions": ["string"], "references": ["string"]}  # per item, a list on both sides
TEXT_VS_REFERENCES = ({"predictions": "string", "references": ["string"]}, ONE_EACH)  # one or several references

SPECS: dict[str, Spec] = {
    "accuracy": Spec(
        compute=lambda predictions, references: {"accuracy": m.accuracy(predictions, references)},
        inputs=({"predictions": "int64", "references": "int64"}, ONE_EACH),
        description="Fraction of predictions equal to their references (RACE, GLUE, MT-NLG tasks).",
        usage="""
Args:
    predictions: predicted labels (ints or strings).
    references: gold labels of the same type.
Returns:
    accuracy: float in [0, 1].
"""),
    "bioasq_factoid": Spec(
        compute=lambda predictions, references, top_k=5: m.bioasq_factoid_scores(predictions, references, top_k=top_k),
        inputs=(LIST_EACH,),
        description="BioASQ factoid strict accuracy, lenient accuracy and MRR over the top 5 candidates.",
        usage="""
Args:
    predictions: per question, the ranked candidate answers.
    references: per question, the gold synonyms (flat list).
    top_k: candidates that count (default 5).
Returns:
    strict_accuracy, lenient_accuracy, mrr: floats in [0, 1].
""",
        citation="Tsatsaronis et al. 2015, An overview of the BIOASQ large-scale biomedical "
                 "semantic indexing and question answering competition."),
    "bleu": Spec(
        compute=lambda predictions, references, tokenize="13a", lowercase=False: {
            "bleu": m.bleu(predictions, references, tokenize=tokenize, lowercase=lowercase)},
        inputs=TEXT_VS_REFERENCES,
        description="sacrebleu corpus BLEU as a fraction in [0, 1] (Post 2018).",
        usage="""
Args:
    predictions: generated strings.
    references: one reference string, or a list of references, per prediction.
    tokenize: sacrebleu tokenizer (default "13a"); lowercase: bool.
Returns:
    bleu: float in [0, 1] (sacrebleu's score / 100).
""",
        citation="Post 2018, A Call for Clarity in Reporting BLEU Scores."),
    "chemprot": Spec(
        compute=lambda predictions, references: m.chemprot_scores(predictions, references),
        inputs=(ONE_EACH,),
        description="Micro P/R/F1 over the five positive ChemProt classes; the `false` class is excluded.",
        usage="""
Args:
    predictions: predicted labels ("CPR:3", ..., "CPR:9" or "false").
    references: gold labels.
Returns:
    precision, recall, f1: floats in [0, 1].
""",
        citation="Peng et al. 2019, Transfer Learning in Biomedical NLP (BLUE)."),
    "dialogue_f1": Spec(
        compute=lambda predictions, references: m.unigram_f1_scores(predictions, references),
        inputs=(ONE_EACH,),
        description="ParlAI unigram F1; pairs with an empty reference (or no_passages_used) are skipped.",
        usage="""
Args:
    predictions: generated responses.
    references: gold responses (F1) or gold knowledge (KF1).
Returns:
    precision, recall, f1: means in [0, 1]; count: pairs scored.
""",
        citation="Miller et al. 2017, ParlAI; Liu et al. 2022, Multi-Stage Prompting for "
                 "Knowledgeable Dialogue Generation."),
    "diversity": Spec(
        compute=lambda predictions, n=4: {"distinct_n": m.distinct_n(predictions, n),
                                          "repeat_n": m.repeat_n(predictions, n)},
        inputs=({"predictions": "string"},),
        description="distinct-n (unique / all n-grams over all generations) and repeat-n (share with a "
                    "repeated n-gram).",
        usage="""
Args:
    predictions: generated texts (split on whitespace).
    n: n-gram order (default 4).
Returns:
    distinct_n, repeat_n: floats in [0, 1].
""",
        citation="Li et al. 2016, A Diversity-Promoting Objective Function; Xu et al. 2020, MEGATRON-CNTRL."),
    "dpr_top_k": Spec(
        compute=lambda predictions, references, ks=(1, 5, 20, 100), match="string": (
            m.retrieval_top_k_accuracy(references, predictions, ks=ks, match=match)),
        inputs=(LIST_EACH,),
        description="Fraction of questions with an answer-bearing passage among the top k (DPR matching).",
        usage="""
Args:
    predictions: per question, the ranked retrieved passage texts.
    references: per question, the gold answers.
    ks: cut-offs (default 1, 5, 20, 100); match: "string" (default) or "regex".
Returns:
    top<k>: float in [0, 1] for each k (top1, top5, ...).
""",
        citation="Karpukhin et al. 2020, Dense Passage Retrieval for Open-Domain Question Answering."),
    "ner": Spec(
        compute=lambda predictions, references: m.ner_scores(predictions, references),
        inputs=(LIST_EACH,),
        description="Micro entity-level precision, recall and F1 with conlleval chunking (seqeval's default mode).",
        usage="""
Args:
    predictions: per sentence, the predicted tags.
    references: per sentence, the gold tags.
Returns:
    precision, recall, f1: floats in [0, 1]; per_type: {type: {precision, recall, f1, support}}.
""",
        citation="Tjong Kim Sang and Buchholz 2000 (conlleval); Nakayama 2018, seqeval."),
    "perplexity": Spec(
        compute=lambda nll, num_tokens: {"perplexity": m.perplexity(sum(nll), sum(num_tokens))},
        inputs=({"nll": "float64", "num_tokens": "int64"},),
        description="Perplexity exp(total NLL / total scored tokens) from per-text summed NLLs (nats).",
        usage="""
Args:
    nll: per text, the summed negative log-likelihood of its scored tokens (nats).
    num_tokens: per text, the number of scored tokens.
Returns:
    perplexity: float.
"""),
    "roc_auc": Spec(
        compute=lambda predictions, references: {"roc_auc": m.roc_auc(predictions, references)},
        inputs=({"predictions": "float64", "references": "int64"},),
        description="Area under the ROC curve of scores against binary labels (ties count one half).",
        usage="""
Args:
    predictions: scores, higher meaning more likely positive (e.g. normalised p("Yes")).
    references: binary gold labels (0/1).
Returns:
    roc_auc: float in [0, 1].
""",
        citation="Hanley and McNeil 1982, The meaning and use of the area under a ROC curve."),
    "rouge_l": Spec(
        compute=lambda predictions, references, use_stemmer=False: m.rouge_l(predictions, references,
                                                                              use_stemmer=use_stemmer),
        inputs=TEXT_VS_REFERENCES,
        description="Mean rouge-score rougeL precision, recall and F-measure over pairs.",
        usage="""
Args:
    predictions: generated strings.
    references: one reference string, or a list of references, per prediction.
    use_stemmer: Porter stemming in rouge-score (default False).
Returns:
    precision, recall, fmeasure: floats in [0, 1].
""",
        citation="Lin 2004, ROUGE: A Package for Automatic Evaluation of Summaries."),
    "squad": Spec(
        compute=lambda predictions, references, squad_v2=False: m.squad_scores(predictions, references,
                                                                                squad_v2=squad_v2),
        inputs=({"predictions": "string", "references": ["string"]},),
        description="SQuAD exact match and token F1 (official v1.1/v2.0 scripts), max over gold answers, in [0, 1].",
        usage="""
Args:
    predictions: predicted answer strings.
    references: per question, the gold answer texts (empty = unanswerable with squad_v2=True).
    squad_v2: follow evaluate-v2.0.py for empty answers (default False).
Returns:
    exact_match, f1: floats in [0, 1]; with squad_v2 also has_ans_exact_match, has_ans_f1,
    no_ans_exact_match, no_ans_f1 where such questions exist.
""",
        citation="Rajpurkar et al. 2016, SQuAD: 100,000+ Questions for Machine Comprehension of Text."),
    "toxicity": Spec(
        compute=_toxicity,
        inputs=({"predictions": ["float64"], "references": "float64"},),
        description="EMT and toxicity probability over k generations per prompt, for Full/Toxic/Nontoxic prompts.",
        usage="""
Args:
    predictions: per prompt, the toxicity scores of its k generations (None for an empty one).
    references: per prompt, the prompt's own toxicity (None if unknown).
    threshold: toxic above this score (default 0.5); strict: False counts scores equal to it too.
Returns:
    full, toxic, nontoxic: {emt, emt_std, tp, n}: expected maximum toxicity, its std, toxicity probability,
    prompts.
""",
        citation="Gehman et al. 2020, RealToxicityPrompts; Wang et al. 2022, Exploring the Limits "
                 "of Domain-Adaptive Training for Detoxifying Large-Scale Language Models."),
    "wikitext_perplexity": Spec(
        compute=lambda nll, num_tokenized_tokens, num_original_tokens: m.adjusted_perplexity(
            sum(nll), sum(num_tokenized_tokens), sum(num_original_tokens)),
        inputs=({"nll": "float64", "num_tokenized_tokens": "int64", "num_original_tokens": "int64"},),
        description="ppl = exp(L/(N-1)) over BPE targets; adjusted ppl = exp(L/(N_orig-1)) per original word; "
                    "capped at exp(20).",
        usage="""
Args:
    nll: per document (usually one: the whole file), the summed NLL of all its N-1 targets.
    num_tokenized_tokens: per document, N, its tokenised length.
    num_original_tokens: per document, its word-level count len(raw.strip().split(" ")).
Returns:
    avg_loss, ppl, adjusted_ppl, token_ratio (of the summed counts).
""",
        citation="Shoeybi et al. 2019, Megatron-LM: Training Multi-Billion Parameter Language "
                 "Models Using Model Parallelism."),
}

