"""Data pipelines built on bert_tf: text corpora and training data (bert_tf never imports this package)."""
