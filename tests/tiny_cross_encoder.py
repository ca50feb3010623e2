"""A tiny random sentence-transformers CrossEncoder (a BERT of 2 layers, hidden 32, one label), made from a
transformers `BertConfig` and the tests' vocabulary: nothing is downloaded."""

from pathlib import Path

from tiny_finetune_files import VOCAB

PAIRS = [("who lives in paris ?", "mary lives in paris ."), ("who lives in paris ?", "john works at acme ."),
         ("where is acme ?", "acme is in london ."), ("where is acme ?", "the film was good"),
         ("where did mary go ?", "mary lives in berlin and john works at acme in paris .")]


def make_cross_encoder(folder: Path, max_length: int = 48, seed: int = 3):
    """A random CrossEncoder, saved in `folder` by sentence-transformers (its own layout); returns it (on the CPU, in
    evaluation mode)."""
    import torch
    import transformers
    from sentence_transformers import CrossEncoder

    torch.manual_seed(seed)
    base = folder.parent / f"{folder.name}_base"
    base.mkdir(parents=True, exist_ok=True)
    (base / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    config = transformers.BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=64, num_labels=1,
                                     initializer_range=0.3)  # weights far from zero: scores that differ
    model = transformers.BertForSequenceClassification(config)
    model.save_pretrained(base)
    transformers.BertTokenizerFast(str(base / "vocab.txt"), do_lower_case=True).save_pretrained(base)
    cross_encoder = CrossEncoder(str(base), max_length=max_length, device="cpu")
    cross_encoder.save(str(folder))
    cross_encoder.eval()
    return cross_encoder


def logits(cross_encoder, pairs=PAIRS):
    """The CrossEncoder's raw scores (logits, no sigmoid) of `pairs`, float32 NumPy."""
    import torch

    return cross_encoder.predict(pairs, activation_fn=torch.nn.Identity(), convert_to_numpy=True)
