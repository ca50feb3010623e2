"""The package version, alone in a module that setup.py reads without importing bert_tf (nor TensorFlow)."""

__version__ = "0.1.0"
