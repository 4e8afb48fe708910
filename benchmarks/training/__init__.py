"""The fits the package ships, each reproducible from the repository root:

- ``train_fast_checker --write``: the fast checker's weights,
  ``src/quotebound/entailment/fast_checker.json`` (``quotebound.entailment.learned.REFIT``);
- ``answer_check train-fast``: the fast answer check's weights,
  ``src/quotebound/answering/answer_checker.json`` (``quotebound.answering.check.REFIT``);
  ``answer_check fit`` / ``fit-served``: the judge's ``answers`` threshold (or, with
  ``--check fast``, the fast check's) on served answers;
- ``judge_quality fit``: the scored judge's threshold, ``calibration.json`` (``judge``);
- ``cascade_curve fit``: the cascade's band, ``calibration.json`` (``cascade``).

Each entry it writes says what it was fitted on and by which command (``fitted_on``,
``script``); tests refit the two sets of weights and compare them with the shipped files.
``train_nli_minilm`` trains a small attribution model for the ``nli`` backend into a folder
outside the repository: a measuring aid, nothing shipped.
"""
