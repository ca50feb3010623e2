"""Benchmarks, runnable as modules: `python -m benchmarks.tokenizer`."""
