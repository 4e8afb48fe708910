"""How good, on public sets: ``answer_quality`` (the pipeline on CLAPNQ: validity, repairs,
both abstention rates), ``abstention_sets`` (``ask``'s defaults on four sets, with the gate
that turned each answer away), ``answer_replay`` (traced answers verified again under other
settings), ``served_labels`` (the served claims read by hand; labels in ``labels/``),
``contoso`` (end to end on the Contoso PDFs), ``retrieval`` (CLAPNQ pooled: the orders ``ask``
can pack), ``entailment_quality`` (the support tier's backends on AttributionBench),
``attribution_drops`` (what the code checks drop from labelled claims), ``vendor_citations``
(the vendors' published responses, verified).
"""
