"""Retrieval over a corpus: lexical (BM25), dense (a sentence-embedding model's vectors), their fusion, and the
mining of hard negatives for training from them."""
