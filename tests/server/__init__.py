"""The HTTP service: every endpoint, the work budget and workers, the web page in Chromium."""
