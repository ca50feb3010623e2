"""Model directories written by earlier layouts (before the task folders; before each task owned its settings) still
load and answer the same.

The fixtures (`tests/fixtures/previous_layout/`, see its README) were saved by the earlier layout, whose `.keras`
files name modules that no longer exist (`bert_tf.tasks.classification.model`, ...): the registered class names carry them.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from bert_tf.prediction import Predictor

FIXTURES = Path(__file__).parent / "fixtures" / "previous_layout"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())


def assert_close(actual, expected):
    if isinstance(expected, dict):
        assert sorted(actual) == sorted(expected)
        for key in expected:
            assert_close(actual[key], expected[key])
    elif isinstance(expected, list):
        assert len(actual) == len(expected)
        for mine, theirs in zip(actual, expected):
            assert_close(mine, theirs)
    elif isinstance(expected, float):
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)
    else:
        assert actual == expected


@pytest.mark.parametrize("task", ["classify", "ner", "squad", "embed"])
def test_a_directory_of_the_previous_layout_predicts_the_same(task):
    predictor = Predictor(FIXTURES / task)
    inputs = EXPECTED["inputs"][task]
    answer = {"classify": lambda: predictor.classify(inputs["texts"]),
              "ner": lambda: predictor.recognize(inputs["texts"]),
              "squad": lambda: predictor.answer(inputs["questions"], inputs["contexts"]),
              "embed": lambda: predictor.predict([{"text": text} for text in inputs["texts"]])}[task]
    assert_close(answer(), EXPECTED["predictions"][task])
