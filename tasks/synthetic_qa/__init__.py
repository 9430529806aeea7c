"""Training question-answering models from synthetic data (Puri et al., EMNLP 2020).

Stages (`megazoo task synthetic_qa STAGE`), each reading and writing SQuAD-format JSON so that any
stage can be rerun or swapped:

    data       paragraphs of the embedded corpus and a template-question SQuAD set to bootstrap with
    train      the core trainer on a recipe: the QA model (kind qa), the answer extractor (kind
               answers), the question generator (task sft on SmolLM2)
    corpus     paragraphs sampled from a decoder prompted by titles or opening sentences, cut and
               deduplicated against the source (the synthetic corpus; or supply paragraphs yourself)
    answers    the extractor's top candidate spans per paragraph (questions left empty)
    sample     sampled questions per candidate answer (top-k / top-p), several per answer; the
               generator reads the whole paragraph with the answer marked (or, as an option, its sentence)
    filter     roundtrip: the QA model answers each question; kept when it matches the proposed answer
    evaluate   a QA checkpoint on a SQuAD dev file: exact_match, f1 (v2: has_ans_* and no_ans_*),
               the predictions {id: answer} in FILE.predictions.json
    score      a predictions file {id: answer} alone, as the official scripts score it

corpus, answers, filter and score are extras (cli.EXTRAS); `generate` and `questions` are the old names of
data and sample (cli.ALIASES).

Modules: squad.py (reader/writer), score.py (the official v1.1/v2.0 evaluation), builder.py (the
span-head trainer task) with decode.py (SQuAD features, n-best and null-answer decoding),
predict.py (a checkpoint in one process), corpus.py and corpus_filter.py (the sampled corpus),
answers.py (candidate spans), prompts.py and
questions.py (question generation), roundtrip.py (filtration), templates.py and generate.py
(bootstrap data), evaluate_stage.py, leaderboard.py, cli.py (the stage table) and cli_*.py. data/dev.json is the
hand-written dev set: 66 questions, as people ask them, about 33 corpus paragraphs.
"""
