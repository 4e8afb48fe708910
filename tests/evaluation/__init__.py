"""The evaluation harness: metrics, loaders, the eval command, the trace sampler."""
