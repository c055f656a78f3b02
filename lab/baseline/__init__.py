"""Baselines the runtime is measured against (the autoregressive decode of the same weights)."""
