"""Tiny models and a small vocabulary for the inspection tests (embeddings, fill-mask, attention, their CLI)."""

from pathlib import Path

import bert_tf
from bert_tf import BertConfig, BertModel, BertPretrainer

WORDS = ("the a woman went to store and bought pair of shoes i opened bank account we sat on river "
         "play run . ,").split()
TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", *WORDS, "##s", "##ing", "##er")
MAX_LENGTH = 24
CONFIG = BertConfig(vocab_size=len(TOKENS), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=48, max_position_embeddings=MAX_LENGTH)


def write_vocab(path: Path) -> Path:
    path.write_text("".join(f"{token}\n" for token in TOKENS), encoding="utf-8")
    return path


def save_tiny(model, directory: Path, **metadata) -> Path:
    """`model` (built on CONFIG) saved as a bert-tf directory with the tiny vocabulary."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    vocab = write_vocab(directory.parent / f"{directory.name}-vocab.txt")
    return bert_tf.save_pretrained(model, directory, vocab_file=vocab, lower_case=True, **metadata)


def tiny_pretrainer() -> BertPretrainer:
    return BertPretrainer(BertModel(CONFIG))
