"""The entailment tier: the heuristic, the fast checker, the judge, nli, the cascade, on
verdicts."""
