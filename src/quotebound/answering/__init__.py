"""What ``ask`` runs beside verification to shape an answer, each a model of its own:

- ``check``: the answer check, whether the kept claims' verified quotes answer the question
  (the fast logistic check on MiniLM and lexical features, the judge's, or both);
- ``fallback``: the extractive provider asked when the answer would be an abstention;
- ``rerank``: BM25's hits re-ordered by MiniLM's cosine to the question before packing.

The support tier (does a quote entail its claim) is ``entailment``'s; these read its encoder
and judge, and nothing of them reads these.
"""
