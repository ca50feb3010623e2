"""What BERT attends to: attention matrices per layer and head, as a text table or a heat-map PNG.

Row i of a matrix is where token i looks (the query), column j how much it takes from token j
(the key); every row sums to 1 and padding columns get exactly 0. Heads can be averaged.

Example:
    >>> maps = attention_maps(model.encoder, model.tokenizer, "the cat sat on the mat")   # doctest: +SKIP
    >>> print(format_attention_table(maps.tokens, maps.matrix(layer=-1, head=0)))          # doctest: +SKIP
              [CLS]   the   cat   sat ...
    [CLS]      0.12  0.09  0.10  0.08 ...
    >>> plot_attention(maps.tokens, maps.matrix(layer=-1, head="mean"), "attention.png")  # doctest: +SKIP
    >>> plot_attention_grid(maps, "all_heads.png")                                          # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path

import numpy as np
import tensorflow as tf

from bert_tf.model import BertModel
from bert_tf.preprocessor import BertPreprocessor
from bert_tf.tokenizer import BertTokenizer

logger = logging.getLogger(__name__)

MEAN_OF_HEADS = "mean"
GRID_TILE_INCHES_PER_TOKEN = 0.15  # plot_attention_grid: a tile's side per token (11 points: room for a label)
GRID_TILE_MIN_INCHES = 2.0


@dataclasses.dataclass
class AttentionMaps:
    """One text's tokens and the attention probabilities of every layer and head."""

    tokens: list[str]
    probs: np.ndarray  # [layers, heads, tokens, tokens]

    def matrix(self, layer: int = -1, head: int | str = MEAN_OF_HEADS) -> np.ndarray:
        """[tokens, tokens]: one head of one layer (negative indices count from the end), or the mean of its heads."""
        num_layers, num_heads = self.probs.shape[:2]
        if not -num_layers <= layer < num_layers:
            raise ValueError(f"layer {layer} does not exist: the model has {num_layers} layers "
                             f"(0..{num_layers - 1}, or -{num_layers}..-1).")
        if head == MEAN_OF_HEADS:
            return self.probs[layer].mean(axis=0)
        if not isinstance(head, (int, np.integer)) or not -num_heads <= head < num_heads:
            raise ValueError(f"head must be '{MEAN_OF_HEADS}' or an index in 0..{num_heads - 1} "
                             f"(or -{num_heads}..-1), got {head!r}.")
        return self.probs[layer, head]


def attention_probabilities(encoder: BertModel, inputs: dict) -> np.ndarray:
    """Attention probabilities of a batch: [batch, layers, heads, seq, seq]."""
    if not isinstance(encoder, BertModel):
        raise ValueError(f"Attention needs the model's weights (a BertModel), not a {type(encoder).__name__}: an "
                         "exported SavedModel has no attention outputs; use the model directory or checkpoint.")
    outputs = encoder(inputs, training=False, output_attentions=True)
    return np.stack([probs.numpy() for probs in outputs["attention_probs"]], axis=1)


def attention_maps(encoder: BertModel, tokenizer: BertTokenizer, text: str, text_pair: str | None = None,
                   max_length: int | None = None) -> AttentionMaps:
    """The attention maps of one text, or a pair packed `[CLS] A [SEP] B [SEP]`; cut to `max_length` with a warning."""
    max_length = max_length or encoder.config.max_position_embeddings
    segments = [text] if text_pair is None else [text, text_pair]
    num_tokens = sum(len(ids) for ids in tokenizer.tokenize(segments).to_list())
    if num_tokens > max_length - len(segments) - 1:
        logger.warning("The input has %d tokens; cut to fit max_length %d.", num_tokens, max_length)
    inputs = BertPreprocessor(tokenizer, seq_length=max_length, padding="longest")(
        tuple(tf.constant([segment]) for segment in segments))
    tokens = [tokenizer.vocabulary.tokens[i] for i in inputs["input_word_ids"][0].numpy()]
    return AttentionMaps(tokens, attention_probabilities(encoder, inputs)[0])


def format_attention_table(tokens: list[str], matrix: np.ndarray, decimals: int = 2, max_label: int = 10) -> str:
    """The matrix as text: one row per attending token, one column per attended token (labels cut to `max_label`)."""
    labels = [token if len(token) <= max_label else token[:max_label - 1] + "…" for token in tokens]
    row_label_width = max(map(len, labels))
    width = max(decimals + 3, *map(len, labels))
    lines = [" " * row_label_width + "".join(f" {label:>{width}}" for label in labels)]
    for label, row in zip(labels, matrix):
        lines.append(f"{label:<{row_label_width}}" + "".join(f" {value:>{width}.{decimals}f}" for value in row))
    return "\n".join(lines)


def plot_attention(tokens: list[str], matrix: np.ndarray, path, title: str = "",
                   figsize: tuple[float, float] | None = None, dpi: int = 100) -> Path:
    """A heat map of one attention matrix with token labels, as a PNG of figsize × dpi pixels.

    Colours run from 0 to the matrix's largest weight (the colour bar shows the scale).
    """
    side = min(max(4.0, 0.3 * len(tokens) + 2.0), 30.0)
    figure = _figure(figsize or (side + 1.0, side), dpi)
    axes = figure.add_subplot()
    image = axes.imshow(matrix, cmap="viridis", vmin=0.0, vmax=float(np.max(matrix)))
    _label_axes(axes, tokens, fontsize=8)
    axes.set_xlabel("attended to (key)")
    axes.set_ylabel("attending (query)")
    axes.set_title(title)
    figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04)
    return _save_png(figure, path)


def plot_attention_grid(maps: AttentionMaps, path, dpi: int = 100, max_pixels: int = 40_000_000) -> Path:
    """Every layer (rows, labelled on the left) and head (columns, labelled on top) in one PNG, on one colour scale
    (0 to the largest weight); token labels on the left column and bottom row.

    The figure grows with the grid and the text: each tile is `GRID_TILE_INCHES_PER_TOKEN` per token,
    at least `GRID_TILE_MIN_INCHES` (12 × 12 heads of 20 tokens: about 37 × 37 inches). Above
    `max_pixels`, the resolution is lowered to fit.
    """
    num_layers, num_heads, num_tokens = maps.probs.shape[:3]
    tile = max(GRID_TILE_MIN_INCHES, GRID_TILE_INCHES_PER_TOKEN * num_tokens)
    figsize = (tile * num_heads + 1.5, tile * num_layers + 0.5)  # and room for the labels and colour bar
    dpi = min(dpi, (max_pixels / (figsize[0] * figsize[1])) ** 0.5)
    figure = _figure(figsize, dpi)
    grid = figure.subplots(num_layers, num_heads, squeeze=False)
    largest = float(maps.probs.max())
    token_fontsize = min(8.0, 0.8 * tile * 72 / num_tokens)  # points: a tick label fits its row
    for layer in range(num_layers):
        for head in range(num_heads):
            axes = grid[layer, head]
            image = axes.imshow(maps.probs[layer, head], cmap="viridis", vmin=0.0, vmax=largest)
            _label_axes(axes, maps.tokens, fontsize=token_fontsize)
            if layer == 0:
                axes.set_title(f"head {head}", fontsize=11)
            if head == 0:
                axes.set_ylabel(f"layer {layer}", fontsize=11)
            else:
                axes.set_yticklabels([])
            if layer != num_layers - 1:
                axes.set_xticklabels([])
    figure.colorbar(image, ax=grid, shrink=0.6)
    return _save_png(figure, path)


def _figure(figsize, dpi):
    # The object-oriented API with the Agg canvas: no pyplot state, no display needed.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=figsize, dpi=dpi, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _label_axes(axes, tokens, fontsize):
    axes.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=fontsize)
    axes.set_yticks(range(len(tokens)), tokens, fontsize=fontsize)


def _save_png(figure, path) -> Path:
    """Writes the PNG next to `path` and moves it into place, so a failure leaves no partial image."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.partial")
    try:
        figure.savefig(staging, format="png")
        os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
    return path
