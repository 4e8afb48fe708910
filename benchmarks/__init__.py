"""The benchmarks, by kind. Every script is a module, run from the repository root as

    .venv/bin/python -m benchmarks.KIND.NAME [--help]

- ``benchmarks.speed``: how fast verify, parsing, the page view, the store and the service are
  (``make bench`` runs ``speed.verify_speed``);
- ``benchmarks.quality``: what the pipeline, the support tier and the checks get right on
  public sets (CLAPNQ, SQuAD 2.0, NoMIRACL, the Contoso PDFs, AttributionBench, the vendors'
  published responses), rerun when what they measure changes;
- ``benchmarks.training``: the fits whose results the package ships (the fast checker's and
  the fast answer check's weights, the judge's and the cascade's thresholds in
  ``calibration.json``), each named by the source that reads it (``REFIT``,
  ``fitted_on``), and one measuring aid that ships nothing (``train_nli_minilm``);
- ``benchmarks.studies``: finished one-off measurements, kept runnable; each docstring names
  the figure it recorded and where in docs/ that figure is written;
- ``benchmarks.common``: what several of them share (paths, intervals, the sets more than one
  reads, the logistic fit).

The public sets are read in place from ``../shared/data``; caches of model calls go to
``benchmarks/results/`` (not in git). The helpers the tests share with the benchmarks (a
throwaway PostgreSQL cluster, PDFs made in code) are the top-level ``kits`` package.
"""
