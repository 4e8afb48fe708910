"""How fast: ``verify_speed`` (verify against a naive baseline; ``make bench``),
``verify_against`` (this build against another), ``parse_speed`` (linear in the answer),
``page_speed`` (the first highlighted PDF page), ``store_speed`` (SQLite and PostgreSQL:
ingest, retrieval, traces), ``server_load`` (the service under load), ``soak`` (mixed traffic
with a worker killed). ``workload`` is verify's working set and answer, and how they are timed.
"""
