"""Benchmarks of bertfeat against its peers: run as modules with PYTHONPATH=. (see bench_encode.py)."""
