"""The benchmarks' own code, imported as a package (benchmarks.quality.*)."""
