"""Benchmarks: `python -m bench.<name> --data PATH`; each prints its figures."""
