"""Fuzzers for infill's servers (not shipped): `python -m lab.fuzz.lsp_fuzz --help`."""
