"""The core: verify() by topic (ids, the four formats, abstention, quotes, support, policy,
hostile input, sources and verify's own arguments, the seeds' worked examples), its property
tests, coverage, options, the verdict's JSON and the reason codes. ``kits.verifykit`` holds the
shared working set and the ``check`` helper."""
