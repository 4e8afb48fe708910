"""The store on both backends: migrations, retrieval and its ranking, traces, integrity, access."""
