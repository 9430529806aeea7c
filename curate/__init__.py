"""Corpus curation (MT-NLG style): heuristic and quality filters, exact and fuzzy deduplication,
downstream-task decontamination and blending, on one process or a Dask cluster."""
