"""Attention maps: rows sum to 1, padding gets no weight, head selection, the table and the PNGs."""

import numpy as np
import pytest
from matplotlib import image as mpimg

from bert_tf import BertModel, BertTokenizer
from bert_tf.inspection.attention_view import GRID_TILE_INCHES_PER_TOKEN, GRID_TILE_MIN_INCHES
from bert_tf.inspection import (
    AttentionMaps,
    attention_maps,
    attention_probabilities,
    format_attention_table,
    plot_attention,
    plot_attention_grid,
)
from tiny_inspection_models import CONFIG, TOKENS


@pytest.fixture(scope="module")
def encoder():
    return BertModel(CONFIG)


@pytest.fixture(scope="module")
def maps(encoder):
    return attention_maps(encoder, BertTokenizer(list(TOKENS)), "we sat on the river bank", text_pair="i opened")


def test_rows_sum_to_one_and_padding_gets_no_weight(encoder):
    ids = np.array([[2, 10, 11, 12, 3, 0, 0], [2, 13, 3, 0, 0, 0, 0]])
    mask = (ids != 0).astype(np.int32)
    probs = attention_probabilities(encoder, {"input_word_ids": ids, "input_mask": mask})
    assert probs.shape == (2, CONFIG.num_hidden_layers, CONFIG.num_attention_heads, 7, 7)
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, atol=1e-5)
    padded_columns = probs * (1 - mask)[:, None, None, None, :]
    assert np.all(padded_columns == 0.0)
    assert np.all(probs[..., :5][0] > 0) and np.all(probs[1][..., :3] > 0)


def test_maps_of_a_pair_and_head_selection(maps):
    assert maps.tokens == ["[CLS]", "we", "sat", "on", "the", "river", "bank", "[SEP]", "i", "opened", "[SEP]"]
    assert maps.probs.shape == (CONFIG.num_hidden_layers, CONFIG.num_attention_heads, 11, 11)
    np.testing.assert_array_equal(maps.matrix(layer=-1, head=1), maps.probs[1, 1])
    np.testing.assert_allclose(maps.matrix(layer=0), maps.probs[0].mean(axis=0))
    np.testing.assert_allclose(maps.matrix(0, "mean").sum(axis=-1), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="layer 2 does not exist: the model has 2 layers"):
        maps.matrix(layer=2)
    with pytest.raises(ValueError, match="head must be 'mean' or an index in 0..1"):
        maps.matrix(head=2)


def test_table_has_a_row_and_column_per_token_with_two_decimals():
    maps = AttentionMaps(["[CLS]", "a", "##verylongtoken", "[SEP]"], np.full((1, 1, 4, 4), 0.25))
    table = format_attention_table(maps.tokens, maps.matrix(0, 0))
    lines = table.splitlines()
    assert len(lines) == 5
    assert lines[0].split() == ["[CLS]", "a", "##verylon…", "[SEP]"]
    assert lines[2].split() == ["a", "0.25", "0.25", "0.25", "0.25"]
    assert len({len(line) for line in lines}) == 1  # aligned columns


def test_heat_map_png_has_the_requested_size(tmp_path, maps):
    path = plot_attention(maps.tokens, maps.matrix(), tmp_path / "head.png", title="mean", figsize=(6, 5), dpi=80)
    pixels = mpimg.imread(path)
    assert pixels.shape[:2] == (5 * 80, 6 * 80) and pixels.std() > 0  # height × width, not blank
    assert [p.name for p in tmp_path.iterdir()] == ["head.png"]


def test_grid_png_shows_every_layer_and_head(tmp_path, maps):
    path = plot_attention_grid(maps, tmp_path / "grid.png", dpi=50)
    height, width = mpimg.imread(path).shape[:2]
    tile = max(GRID_TILE_MIN_INCHES, GRID_TILE_INCHES_PER_TOKEN * len(maps.tokens))
    assert (height, width) == (int((tile * 2 + 0.5) * 50), int((tile * 2 + 1.5) * 50))


def random_maps(layers, heads, tokens):
    probs = np.random.default_rng(0).random((layers, heads, tokens, tokens))
    return AttentionMaps([f"t{i}" for i in range(tokens)], probs / probs.sum(axis=-1, keepdims=True))


def test_grid_png_grows_with_layers_heads_and_tokens_up_to_a_pixel_cap(tmp_path):
    def pixels(maps, **settings):
        return mpimg.imread(plot_attention_grid(maps, tmp_path / "grid.png", dpi=20, **settings)).shape[:2]

    tile = GRID_TILE_MIN_INCHES * 20  # pixels, for 5 tokens
    small = pixels(random_maps(2, 2, 5))
    assert pixels(random_maps(2, 4, 5)) == (small[0], small[1] + 2 * tile)  # two more heads: two tiles wider
    assert pixels(random_maps(4, 2, 5)) == (small[0] + 2 * tile, small[1])  # two more layers: two tiles taller
    longer = GRID_TILE_INCHES_PER_TOKEN * 40 * 20  # pixels, for 40 tokens
    assert pixels(random_maps(2, 2, 40)) == (small[0] + 2 * (longer - tile), small[1] + 2 * (longer - tile))
    height, width = pixels(random_maps(4, 4, 40), max_pixels=200_000)
    assert 190_000 < height * width <= 200_000
