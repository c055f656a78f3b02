"""Soak runs of infill's servers (not shipped): `python -m lab.soak.run --help`."""
