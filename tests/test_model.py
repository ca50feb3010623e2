import numpy as np
import pytest
import tensorflow as tf
import keras

from bert_tf import BertConfig, BertModel
from bert_tf.layers.token_rows import TokenRows

CONFIG = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=64, max_position_embeddings=16)


def batch(seq=6):
    ids = np.array([[2, 5, 6, 7, 3, 0][:seq], [2, 9, 3, 0, 0, 0][:seq]], dtype=np.int32)
    return {"input_word_ids": ids, "input_mask": (ids > 0).astype(np.int32), "input_type_ids": np.zeros_like(ids)}


@pytest.fixture(scope="module")
def model():
    return BertModel(CONFIG)


def test_output_shapes(model):
    outputs = model(batch(), output_attentions=True)
    assert outputs["sequence_output"].shape == (2, 6, 32)
    assert outputs["pooled_output"].shape == (2, 32)
    assert [o.shape for o in outputs["encoder_outputs"]] == [(2, 6, 32)] * 2
    assert [p.shape for p in outputs["attention_probs"]] == [(2, 4, 6, 6)] * 2
    assert "attention_probs" not in model(batch())
    np.testing.assert_array_equal(outputs["encoder_outputs"][-1], outputs["sequence_output"])
    inputs = batch()
    embedded = model.embeddings(inputs["input_word_ids"], inputs["input_type_ids"], training=False)
    np.testing.assert_array_equal(outputs["embedding_output"], embedded)
    np.testing.assert_allclose(model.blocks[0](embedded, inputs["input_mask"])[0], outputs["encoder_outputs"][0], atol=1e-6)


def test_encode_at_positions_equals_the_gathered_sequence_output(model):
    positions = np.array([[0, 3, 3, 1], [0, 2, 1, 4]], np.int32)  # repeats, and a padded position
    full = model(batch())["sequence_output"]
    np.testing.assert_allclose(model.encode_at_positions(batch(), positions),
                               tf.gather(full, positions, batch_dims=1), atol=1e-6)


def test_pooled_output_alone_equals_the_full_call(model):
    only_word_ids = {"input_word_ids": batch()["input_word_ids"]}
    holes = {**batch(), "input_mask": np.array([[1, 0, 1, 1, 0, 1], [1, 1, 0, 1, 0, 0]], np.int32)}
    for inputs in (batch(), only_word_ids, holes):
        # The real tokens' rows (pooled_output at inference) against the padded grid (the full call).
        np.testing.assert_allclose(model.pooled_output(inputs), model(inputs)["pooled_output"], atol=1e-6)
    no_tokens = {**batch(), "input_mask": np.zeros((2, 6), np.int32)}  # meaningless, but finite
    assert np.all(np.isfinite(model.pooled_output(no_tokens)))
    for compiled in (tf.function(model.pooled_output), tf.function(model.pooled_output, jit_compile=True)):
        np.testing.assert_allclose(compiled(holes), model(holes)["pooled_output"], atol=1e-6)
    with pytest.raises(ValueError, match="takes a dict"):
        model.pooled_output(batch()["input_word_ids"])


def test_sequence_output_alone_equals_the_full_call_at_real_tokens(model):
    holes = {**batch(), "input_mask": np.array([[1, 0, 1, 1, 0, 1], [1, 1, 1, 0, 0, 0]], np.int32)}
    for inputs in (batch(), holes):
        real = inputs["input_mask"][..., None].astype(bool)
        alone = model.sequence_output(inputs).numpy()  # inference: the blocks on the real tokens' rows
        np.testing.assert_allclose(np.where(real, alone, 0), np.where(real, model(inputs)["sequence_output"], 0),
                                   atol=1e-6)
        assert np.all(alone[~real[..., 0]] == 0.0)
    for compiled in (tf.function(model.sequence_output), tf.function(model.sequence_output, jit_compile=True)):
        np.testing.assert_allclose(compiled(holes), model.sequence_output(holes), atol=1e-6)
    padded_grid = BertModel(CONFIG)
    padded_grid.set_weights(model.get_weights())
    padded_grid.skip_padding = False  # every position computed, as in the full call
    np.testing.assert_allclose(padded_grid.sequence_output(holes), model(holes)["sequence_output"], atol=1e-6)


def test_token_rows_keep_real_tokens_and_cls_and_restore_the_grid():
    rows = TokenRows.from_mask(tf.constant([[1, 1, 0], [0, 0, 0], [1, 0, 1]]))
    grid = tf.reshape(tf.range(18.0), [3, 3, 2])
    kept = rows.gather(grid)
    np.testing.assert_array_equal(kept, [[0, 1], [2, 3], [6, 7], [12, 13], [16, 17]])
    expected = grid.numpy() * np.array([[1, 1, 0], [1, 0, 0], [1, 0, 1]])[..., None]
    np.testing.assert_array_equal(rows.to_grid(kept), expected)
    np.testing.assert_array_equal(rows.at_positions(kept, tf.constant([[1], [0], [2]])), [[[2, 3]], [[6, 7]], [[16, 17]]])


def test_attention_rows_sum_to_one_and_ignore_padding(model):
    probs = model(batch(), output_attentions=True)["attention_probs"][0].numpy()
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-6)
    assert np.all(probs[1, :, :, 3:] == 0.0)  # padded key positions of the second sequence


def test_padding_does_not_change_real_tokens(model):
    padded = model(batch())["sequence_output"].numpy()
    short = {k: v[1:, :3] for k, v in batch().items()}
    np.testing.assert_allclose(model(short)["sequence_output"].numpy()[0], padded[1, :3], atol=1e-5)


def test_mask_and_type_ids_default(model):
    ids = batch()["input_word_ids"][:1, :5]
    full = model({"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)})
    np.testing.assert_allclose(model({"input_word_ids": ids})["pooled_output"], full["pooled_output"], atol=1e-6)


def test_tf_function_and_xla_agree_with_eager(model):
    eager = model(batch())["pooled_output"].numpy()
    graph = tf.function(lambda x: model(x)["pooled_output"])(batch()).numpy()
    xla = tf.function(lambda x: model(x)["pooled_output"], jit_compile=True)(batch()).numpy()
    np.testing.assert_allclose(graph, eager, atol=1e-5)
    np.testing.assert_allclose(xla, eager, atol=1e-4)


def test_dropout_only_in_training(model):
    a = model(batch(), training=True)["pooled_output"].numpy()
    b = model(batch(), training=True)["pooled_output"].numpy()
    assert not np.allclose(a, b)
    np.testing.assert_array_equal(model(batch())["pooled_output"], model(batch())["pooled_output"])


def test_fit_reduces_loss():
    encoder = BertModel(CONFIG.replace(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in batch()}
    logits = keras.layers.Dense(1)(encoder(inputs)["pooled_output"])
    model = keras.Model(inputs, logits)
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss=keras.losses.BinaryCrossentropy(from_logits=True))
    x, y = batch(), np.array([[1.0], [0.0]])
    history = model.fit(x, y, epochs=30, verbose=0)
    assert history.history["loss"][-1] < 0.2 * history.history["loss"][0]


@pytest.mark.parametrize("suffix", [".keras", ".weights.h5"])
def test_keras_save_and_load(tmp_path, model, suffix):
    path = tmp_path / f"encoder{suffix}"
    if suffix == ".keras":
        model.save(path)
        loaded = keras.saving.load_model(path)
        assert loaded.config == CONFIG
    else:
        model.save_weights(path)
        loaded = BertModel(CONFIG)
        loaded.load_weights(path)
    np.testing.assert_array_equal(loaded(batch())["sequence_output"], model(batch())["sequence_output"])


def test_google_weight_names_cover_every_variable(model):
    names = model.google_weights()
    assert len(names) == len(model.weights) == 5 + 16 * 2 + 2
    assert "encoder/layer_1/attention/self/query/kernel" in names and "pooler/dense/bias" in names


def test_every_random_weight_is_drawn_on_its_own():
    """Keras 3 repeats an unseeded initializer's values on every call: no two weights may share one."""
    from bert_tf import BertClassifier, BertPretrainer

    pretrainer = BertPretrainer(BertModel(CONFIG))
    classifier = BertClassifier(pretrainer.encoder, num_classes=3)
    random = {w.path: np.asarray(w).ravel() for w in pretrainer.weights + classifier.weights if np.asarray(w).std() > 0}
    assert len(random) == 3 + 6 * 2 + 1 + 2 + 1  # embeddings, 6 kernels per block, pooler, MLM, NSP, classifier
    leading = {path: tuple(values[:8]) for path, values in random.items()}
    assert len(set(leading.values())) == len(leading)
    for path, values in random.items():
        assert abs(values.std() - 0.0176) < 0.003 and np.abs(values).max() <= 2 * CONFIG.initializer_range, path


def test_mixed_precision_keeps_softmax_and_layer_norm_in_float32():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        mixed = BertModel(CONFIG)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    reference = BertModel(CONFIG)
    for target, source in zip(mixed.weights, reference.weights):
        target.assign(source)
    outputs = mixed(batch(), output_attentions=True)
    assert outputs["sequence_output"].dtype == tf.float16
    assert outputs["attention_probs"][0].dtype == tf.float32
    np.testing.assert_allclose(outputs["sequence_output"].numpy(), reference(batch())["sequence_output"], atol=2e-2)


def test_sequence_longer_than_max_positions_is_a_clear_error(model):
    too_long = {"input_word_ids": np.ones((1, 17), dtype=np.int32)}
    with pytest.raises(ValueError, match="longer than max_position_embeddings"):
        model(too_long)
    with pytest.raises(tf.errors.InvalidArgumentError, match="longer than max_position_embeddings"):
        tf.function(model, input_signature=[{"input_word_ids": tf.TensorSpec([None, None], tf.int32)}])(too_long)


@pytest.mark.parametrize("bad_id, name", [(100, "input_word_ids"), (-1, "input_word_ids")])
def test_ids_out_of_vocabulary_are_a_clear_error(model, bad_id, name):
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"{name} has ids outside"):
        model({"input_word_ids": np.array([[2, bad_id, 3]])})


def test_type_ids_out_of_range_is_a_clear_error(model):
    with pytest.raises(tf.errors.InvalidArgumentError, match="input_type_ids has ids outside"):
        model({"input_word_ids": np.array([[2, 4, 3]]), "input_type_ids": np.array([[0, 2, 0]])})


def test_wrong_inputs_are_clear_errors(model):
    with pytest.raises(ValueError, match="takes a dict"):
        model(np.array([[2, 3]]))
    with pytest.raises(ValueError, match="unknown input names"):
        model({"input_word_ids": np.array([[2, 3]]), "token_ids": np.array([[2, 3]])})
