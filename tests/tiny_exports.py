"""Tiny model directories (vocabulary written here, random weights) for the export and TFLite tests."""

from pathlib import Path

import keras

import bert_tf

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "movie", "film", "is", "was", "not", "very",
         "good", "great", "bad", "dull", "who", "where", "paris", "berlin", "lives", "in", ",", ".", "!", "?",
         "##s", "##ly", "##ing"]
TEXTS = ["the film was great", "", "Where is Paris?", "héllo wörld ✓", "the movie " * 40, "a dull film, not good!"]
PAIRS = ["a film", "the movie is not very good " * 6, "", "who lives in berlin", "great", "x"]


def write_vocab(directory: Path, tokens=VOCAB) -> Path:
    path = Path(directory) / "vocab.txt"
    path.write_text("".join(f"{token}\n" for token in tokens))
    return path


def tiny_encoder(vocab_size=len(VOCAB), hidden_size=32, seed=0, **overrides) -> bert_tf.BertModel:
    keras.utils.set_random_seed(seed)
    config = dict(vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=2 * hidden_size, max_position_embeddings=64)
    return bert_tf.BertModel(bert_tf.BertConfig(**{**config, **overrides}))

