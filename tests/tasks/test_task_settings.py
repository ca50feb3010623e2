"""Each task's own settings: saved and read back in `bert_tf.json` (also the earlier layout's, every task's settings
side by side), changed through `TaskSpec.replace`, given on the command line, and checked."""

import argparse
import json
from pathlib import Path

import pytest

from bert_tf.tasks.registry import TASKS, task_named
from bert_tf.tasks.spec import TaskSpec

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "previous_layout"


@pytest.mark.parametrize("task", ["classify", "ner", "squad", "embed"])
def test_a_spec_of_the_earlier_layout_keeps_only_its_own_settings(task):
    recorded = json.loads((FIXTURES / task / "bert_tf.json").read_text())["task"]
    spec = TaskSpec.from_metadata(recorded)
    own = task_named(task).settings_class.names()
    saved = spec.to_metadata()["settings"]
    assert sorted(saved) == sorted(own)
    assert {name: saved[name] for name in own if name in recorded} == {
        name: value for name, value in recorded.items() if name in own}
    assert TaskSpec.from_metadata(spec.to_metadata()) == spec


def test_no_two_tasks_save_each_others_settings():
    saved = {name: set(TaskSpec.of(name, seq_length=384).to_metadata()["settings"]) for name in TASKS}
    assert saved["squad"] == {"doc_stride", "max_query_length", "max_answer_length", "n_best_size",
                              "null_score_threshold", "version_2"}
    assert saved["ner"] == {"label_scheme"} and saved["encoder"] == set() and saved["pretrainer"] == set()
    assert not saved["classify"] & saved["embed"] and not saved["classify"] & saved["squad"]


def test_unknown_and_other_tasks_settings_are_errors_naming_them():
    with pytest.raises(ValueError, match=r"Unknown settings \['pooling'\] for task 'squad'"):
        TaskSpec.of("squad", seq_length=384, pooling="cls")
    with pytest.raises(ValueError, match=r"Unknown task settings \['stride'\]"):
        TaskSpec.from_metadata({"task": "squad", "seq_length": 384, "settings": {"stride": 8}})
    with pytest.raises(ValueError, match=r"Unknown task settings \['bogus'\]"):
        TaskSpec.from_metadata({"task": "ner", "seq_length": 128, "bogus": 1})  # the earlier layout
    with pytest.raises(ValueError, match="Unknown task 'tagging'; use one of"):
        TaskSpec(task="tagging", seq_length=128)
    with pytest.raises(AttributeError, match="A ner TaskSpec has no setting 'doc_stride'"):
        TaskSpec(task="ner", seq_length=128).doc_stride


def test_replace_changes_shared_fields_and_the_tasks_own():
    spec = TaskSpec.of("classify", seq_length=16, label_names=("a", "b"))
    changed = spec.replace(multi_label=True, text_pair=True, columns=("q", "d", "y"))
    assert changed.text_pair and changed.settings.multi_label and changed.columns == ("q", "d", "y")
    assert spec.settings.multi_label is False  # frozen: a copy
    assert spec.replace(task="encoder").settings == task_named("encoder").settings_class()


def test_the_checks_are_the_tasks_own():
    with pytest.raises(ValueError, match="doc_stride must be a positive integer, got 0"):
        TaskSpec.of("squad", seq_length=384, doc_stride=0)
    with pytest.raises(ValueError, match="null_score_threshold must be a finite number, got inf"):
        TaskSpec.of("squad", seq_length=384, null_score_threshold=float("inf"))
    with pytest.raises(ValueError, match="seq_length 40 is too short for task 'squad' \\(at least 75\\)"):
        TaskSpec(task="squad", seq_length=40)
    with pytest.raises(ValueError, match="Unknown pooling 'sum'"):
        TaskSpec.of("embed", seq_length=16, pooling="sum")


@pytest.mark.parametrize("task, argv, expected", [
    ("squad", ["--doc-stride", "64"], {"doc_stride": 64}),
    ("embed", ["--no-normalize", "--matryoshka-dims", "8,4", "--score-range", "0", "1"],
     {"normalize": False, "matryoshka_dims": (8, 4), "score_range": [0.0, 1.0]}),
    ("classify", ["--label-column", "y", "--multi-label"], {"multi_label": True, "columns": (None, None, "y")}),
    ("classify", [], {}),
])
def test_the_command_line_options_come_from_the_settings(task, argv, expected):
    settings = task_named(task).settings_class
    parser = argparse.ArgumentParser()
    settings.add_arguments(parser)
    given = settings.from_arguments(parser.parse_args(argv))
    assert given == expected
    assert settings(**given).to_metadata() == {**settings().to_metadata(), **{
        name: list(value) if isinstance(value, tuple) else value for name, value in expected.items()}}
