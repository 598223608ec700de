"""Helpers for scripts/bench.py: synthetic data, servers, timing, raw-SQL baselines, report.

Kept out of the ``memstore`` package on purpose: benchmarks are not part of the
library and their dependencies (pgserver, LangGraph) are only in the ``bench`` extra.
"""
