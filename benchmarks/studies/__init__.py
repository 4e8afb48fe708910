"""Finished one-off measurements, kept runnable; each docstring names the figure it recorded
and where in docs/ it is written: ``budget`` (the working-set budget), ``heading_retrieval``
(headings in the index, measured before building), ``relevance_price`` and ``relevance_drops``
(what the relevance rule drops).
"""
