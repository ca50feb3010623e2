"""What `resolve_model_directory` says of folders that are not model directories: one line naming what they are."""

import pytest

from bert_tf.model_directory import resolve_model_directory


@pytest.mark.parametrize("version_file", ["saved_model.pb", "model.tflite"])
def test_an_export_for_serving_is_named_as_such(tmp_path, version_file):
    version = tmp_path / "models" / "sst2" / "3"
    version.mkdir(parents=True)
    (version / version_file).write_bytes(b"")
    for given in (version, version.parent):
        with pytest.raises(FileNotFoundError) as raised:
            resolve_model_directory(given)
        message = str(raised.value)
        assert "\n" not in message
        assert f"{given} is an export for serving (version 3 of {version.parent})" in message
        assert f"bert-tf serve --model_base_path {version.parent}" in message and "--server" in message


def test_other_folders_keep_their_messages(tmp_path):
    with pytest.raises(FileNotFoundError, match="Model directory not found"):
        resolve_model_directory(tmp_path / "absent")
    (tmp_path / "7").mkdir()  # a numbered folder without an export is nothing special
    (tmp_path / "model.keras.txt").write_text("")
    for given in (tmp_path, tmp_path / "model.keras.txt"):
        with pytest.raises(FileNotFoundError, match="is not a bert-tf model directory"):
            resolve_model_directory(given)
