"""The model adapters: the HTTP providers (faked at the HTTP layer), the embedded local
model."""
