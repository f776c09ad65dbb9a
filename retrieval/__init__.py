"""Embedders, text analysis, hybrid search, scoring, context assembly, the prefetch cache."""
