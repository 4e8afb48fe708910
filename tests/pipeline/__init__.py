"""The answer pipeline: ask branch by branch, quotebound.defaults, regressions."""
