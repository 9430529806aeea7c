"""MEGATRON-CNTRL (Xu et al., EMNLP 2020): controllable story generation with keywords, an external
knowledge base and a contextual knowledge ranker, on the core trainer.

A story is written one sentence at a time from its first sentence: a keyword predictor proposes the
next sentence's keywords, a retriever looks them up in a ConceptNet-format knowledge base and turns
the triples into sentences, a BERT ranker orders them against the story so far, and a conditional
decoder writes the next sentence from the story, the top knowledge and the keywords. Swapping the
keywords (for their WordNet antonyms: `--antonyms`) steers the story.

ROCStories is not available offline: the package writes a ROCStories-format set from templates and
word lists (`megazoo task story data`) and ships a hand-written set of stories for evaluation; both
stand in for ROCStories, and figures on them are not the paper's benchmark.
"""
