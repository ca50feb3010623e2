"""`bert_tf.with_precision`: the same model under another dtype policy, for every model class."""

import numpy as np
import pytest

import bert_tf
from tiny_exports import tiny_encoder

IDS = {"input_word_ids": np.array([[2, 5, 7, 9, 3, 0]], np.int32), "input_mask": np.array([[1, 1, 1, 1, 1, 0]], np.int32),
       "input_type_ids": np.zeros([1, 6], np.int32)}


def models():
    return {"encoder": tiny_encoder(), "classifier": bert_tf.BertClassifier(tiny_encoder(), num_classes=3),
            "tagger": bert_tf.BertTokenClassifier(tiny_encoder(), num_labels=4),
            "span labeler": bert_tf.BertSpanLabeler(tiny_encoder())}


def outputs(model) -> dict[str, np.ndarray]:
    result = model(IDS, training=False)
    result = result if isinstance(result, dict) else {"logits": result}
    return {name: np.asarray(value, np.float32) for name, value in result.items() if name != "encoder_outputs"}


@pytest.mark.parametrize("name", list(models()))
def test_bfloat16_stores_what_mixed_bfloat16_computes(name):
    model = models()[name]
    mixed, stored = bert_tf.with_precision(model, "mixed_bfloat16"), bert_tf.with_precision(model, "bfloat16")
    assert type(stored) is type(model) and stored.compute_dtype == mixed.compute_dtype == "bfloat16"
    assert {variable.dtype for variable in mixed.weights} == {"float32"}
    dtypes = {variable.path: variable.dtype for variable in stored.weights}
    assert dtypes[next(path for path in dtypes if "query" in path)] == "bfloat16"
    layer_norms = [dtype for path, dtype in dtypes.items() if "layer_norm" in path]
    assert layer_norms and set(layer_norms) == {"float32"}
    expected, rounded = outputs(model), outputs(mixed)
    for key, value in outputs(stored).items():
        np.testing.assert_allclose(value, rounded[key], atol=1e-6, rtol=0)  # the same arithmetic
        np.testing.assert_allclose(value, expected[key], atol=0.1, rtol=0)  # close to float32
    raw = stored(IDS, training=False)
    if name != "encoder":  # task heads answer in float32
        assert {value.dtype.name for value in (raw.values() if isinstance(raw, dict) else [raw])} == {"float32"}


def test_an_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="policy must be one of"):
        bert_tf.with_precision(tiny_encoder(), "float16")
