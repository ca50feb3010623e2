"""The compatibility check (`compat`, `make compat`): its comparison, tables and known failures on made-up readings,
its reader on the demo SavedModel and on scalar and 2-D inputs, and (slow) the check itself: every export loads and
answers the same in each older TensorFlow, but for the documented failures (`compat.known_failures`)."""

import numpy as np
import pytest
import tensorflow as tf

from compat import reader
from compat.check import DEFAULT_VENVS, run_check
from compat.comparison import Agreement, compare
from compat.exports import KINDS, as_array
from compat.known_failures import FULLY_CONNECTED_12, KNOWN_FAILURES, is_known, minor_version
from compat.table import Outcome, Reading, failures, oldest_serving, server_ops, serving_table, version_table
from compat.venvs import VenvUnavailable, venv_python, versions_pinned

PROBABILITIES = "session/serving_default/probabilities"
TAGS = "session/serving_default/tags"
REFERENCE = {PROBABILITIES: np.array([[0.2, 0.8]], np.float32), TAGS: np.array([[b"B-PER", b"O"]])}


def shifted(by):
    return {**REFERENCE, PROBABILITIES: REFERENCE[PROBABILITIES] + np.float32(by)}


def test_answers_agree_within_their_precisions_tolerance():
    assert compare(REFERENCE, REFERENCE, "float32") == Agreement(0.0)
    assert compare(REFERENCE, shifted(5e-6), "float32").mismatches == ()
    assert compare(REFERENCE, shifted(5e-5), "float32").mismatches == (f"{PROBABILITIES} differs by 5e-05",)
    assert compare(REFERENCE, shifted(0.01), "bf16").mismatches == ()
    assert compare(REFERENCE, shifted(0.03), "bf16").mismatches == (f"{PROBABILITIES} differs by 0.03",)
    assert compare(REFERENCE, shifted(0.015), "int8").mismatches == ()
    assert compare(REFERENCE, {**REFERENCE, TAGS: np.array([[b"B-PER", b"B-LOC"]])}, "int8").mismatches == (
        f"{TAGS} differs",)
    assert compare(REFERENCE, {TAGS: np.array([b"O"])}, "float32").mismatches == (
        f"{PROBABILITIES} is missing", f"{TAGS} has shape (1,), not (1, 2)")
    nan = {**REFERENCE, PROBABILITIES: np.array([[np.nan, 0.8]], np.float32)}
    assert compare(nan, nan, "float32").mismatches == ()
    assert compare(REFERENCE, nan, "float32").mismatches == (f"{PROBABILITIES} differs by inf",)


SAME = Outcome(loads=True, agreement=Agreement(2e-9))
UNREGISTERED = Outcome(loads=False, error="session: NotFoundError: Op type not registered 'FastWordpieceTokenizeWithOffsets'")
DIFFERENT = Outcome(loads=True, agreement=Agreement(0.5, (f"{PROBABILITIES} differs by 0.5",)))
TOO_NEW = Outcome(loads=False, error=f"tflite: ValueError: {FULLY_CONNECTED_12}")
OPS = ("FastWordpieceTokenizeWithOffsets",)
LABELS = {"classifier": "classifier", "ids-only": "classifier --ids-only", "bf16": "classifier --quantize bf16",
          "int8-ids-only": "classifier --quantize int8 --ids-only"}
READINGS = {
    "classifier": {"2.19.1": Reading(UNREGISTERED, UNREGISTERED, OPS), "2.20.0": Reading(SAME, UNREGISTERED, OPS),
                   "2.21.0": Reading(SAME, UNREGISTERED, OPS)},
    "ids-only": {"2.19.1": Reading(SAME, SAME), "2.20.0": Reading(SAME, SAME), "2.21.0": Reading(SAME, SAME)},
    "bf16": {"2.19.1": Reading(SAME, UNREGISTERED, OPS), "2.20.0": Reading(DIFFERENT, UNREGISTERED, OPS),
             "2.21.0": Reading(SAME, UNREGISTERED, OPS)},
    "int8-ids-only": {"2.19.1": Reading(TOO_NEW, TOO_NEW), "2.20.0": Reading(SAME, SAME), "2.21.0": Reading(SAME, SAME)},
}


def test_the_tables_say_which_versions_serve_each_export_and_what_the_server_needs():
    assert [oldest_serving(READINGS[kind]) for kind in LABELS] == [
        "2.20.0", "2.19.1 (the oldest checked)", "2.21.0", "2.20.0"]
    assert [server_ops(READINGS[kind]) for kind in LABELS] == [
        "tensorflow-text's: FastWordpieceTokenizeWithOffsets", "none", "tensorflow-text's: FastWordpieceTokenizeWithOffsets",
        "none"]
    rows = version_table(LABELS, READINGS).splitlines()
    assert rows[0] == "| export | TF 2.19.1 | TF 2.20.0 | TF 2.21.0 | ops beyond TensorFlow's |"
    assert rows[2].startswith("| `classifier` | does not load: session: NotFoundError: Op type not registered")
    assert "| same (max difference 2e-09); the same without tensorflow-text |" in rows[3]
    assert f"| DIFFERENT: {PROBABILITIES} differs by 0.5 |" in rows[4]
    assert serving_table(LABELS, READINGS).splitlines()[3] == (
        "| `classifier --ids-only` | 2.19.1 (the oldest checked) | none |")
    assert failures(READINGS) == [("classifier", "2.19.1", UNREGISTERED), ("bf16", "2.20.0", DIFFERENT),
                                  ("int8-ids-only", "2.19.1", TOO_NEW)]


def test_only_the_documented_failures_are_known():
    assert is_known("int8", "2.15.1", TOO_NEW) and is_known("int8-ids-only", "2.16.2", TOO_NEW)
    assert not is_known("int8", "2.17.1", TOO_NEW)
    assert not is_known("classifier", "2.16.2", TOO_NEW)
    assert not is_known("int8", "2.16.2", UNREGISTERED)
    assert not is_known("int8", "2.16.2", DIFFERENT)


def test_the_reader_runs_every_signature_as_tf_serving_and_as_python_do(demo_model_dir, demo_signatures):
    path = str(demo_model_dir / "1")
    inputs = {"text": np.array([b"a fine film", b"dull"]), "ids": np.array([[1, 2, 3], [4, 5, 6]], np.int32)}
    session, functions = reader.read_session(path, inputs), reader.read_functions(path, inputs)
    assert set(session) == set(functions) == {"serving_default/probabilities", "serving_default/label_names",
                                              "serve_ids/scores"}
    assert compare(session, functions, "float32").mismatches == ()
    expected = demo_signatures["serving_default"](text=tf.constant(inputs["text"]))["probabilities"].numpy()
    np.testing.assert_allclose(session["serving_default/probabilities"], expected, atol=1e-6, rtol=0)
    assert reader.saved_model_foreign_ops(path) == []


def test_the_reader_feeds_scalar_and_two_dimensional_inputs_both_ways(tmp_path):
    """As the search index's `mode`, `fusion`, `dense_weight` and the reranker's `document` [batch, documents]."""
    module = tf.Module()
    module.search = tf.function(
        lambda mode, dense_weight, document: {
            "joined": tf.strings.join([document[:, 0], mode, document[:, 1]]),
            "weighted": dense_weight * tf.cast(tf.strings.length(document, "UTF8_CHAR"), tf.float32)},
        input_signature=[tf.TensorSpec([], tf.string, name="mode"), tf.TensorSpec([], tf.float32, name="dense_weight"),
                         tf.TensorSpec([None, None], tf.string, name="document")])
    tf.saved_model.save(module, str(tmp_path), signatures={"search": module.search})
    inputs = reader.inputs_of("index", {"mode": as_array("hybrid"), "index/mode": as_array("+"),
                                        "dense_weight": as_array(0.5), "document": as_array([["a", "é"], ["bc", ""]])})
    session, functions = reader.read_session(str(tmp_path), inputs), reader.read_functions(str(tmp_path), inputs)
    for answers in (session, functions):
        np.testing.assert_array_equal(answers["search/joined"], [b"a+\xc3\xa9", b"bc+"])
        np.testing.assert_array_equal(answers["search/weighted"], [[0.5, 0.5], [1.0, 0.0]])


def test_a_version_without_constraints_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"No constraints for TensorFlow 2\.3: the check pins 2\.15, "):
        venv_python("2.3", tmp_path)


@pytest.mark.slow
def test_every_export_loads_and_answers_the_same_in_each_older_tensorflow_but_the_documented_failures(tmp_path):
    try:
        older = [venv_python(version, DEFAULT_VENVS) for version in versions_pinned()]
    except VenvUnavailable as error:
        pytest.skip(str(error))
    readings = run_check(tmp_path, older)
    found = failures(readings)
    assert [failure for failure in found if not is_known(*failure)] == []
    assert {(kind, minor_version(version)) for kind, version, _ in found} == set(KNOWN_FAILURES)
    assert {len(by_version) for by_version in readings.values()} == {len(older) + 1}
    without_text_ops = {kind for kind, by_version in readings.items() if server_ops(by_version) == "none"}
    # no WordPiece tokenizer in the graph: token ids in, or BM25 alone (its words split by TensorFlow's own ops)
    assert without_text_ops == {kind for kind, export in KINDS.items()
                                if export.options.get("ids_only") or export.model is None}
