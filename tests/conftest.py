"""Shared test set-up: quiet TensorFlow, the team data folder, small configs."""

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

SHARED_DATA = Path(os.environ.get("BERT_TF_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.hookimpl(trylast=True)  # after the terminal reporter is set up
def pytest_configure(config):
    """Quiet runs (`make test`: -q, pytest-xdist) say as each test file finishes (tests/file_progress.py)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if config.option.verbose < 0 and terminal is not None and not hasattr(config, "workerinput"):
        from file_progress import FileProgress

        config.pluginmanager.register(FileProgress(terminal), "file_progress")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The team data folder (`../shared/data`, or $BERT_TF_DATA); tests using it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"team data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="module")
def demo_model_dir(tmp_path_factory) -> Path:
    """A TF Serving model folder `demo/` with version 1 of the tiny demo SavedModel (one per test module)."""
    from serving.export.demo_model import save_demo_model

    base = tmp_path_factory.mktemp("models") / "demo"
    base.mkdir()
    save_demo_model(base, version=1)
    return base


@pytest.fixture(scope="module")
def demo_signatures(demo_model_dir):
    """The signatures of version 1 of `demo_model_dir`, loaded in this process: what the server must answer."""
    import tensorflow as tf

    return tf.saved_model.load(str(demo_model_dir / "1")).signatures


@pytest.fixture(scope="module")
def embedder_dir(tmp_path_factory) -> Path:
    """A sentence-embedding model directory (tiny, random weights spread out so that vectors differ), built through
    the task registry, with the vocabulary of `tiny_finetune_files`."""
    import keras

    import bert_tf
    from bert_tf.tasks.registry import task_from_spec
    from bert_tf.tasks.spec import TaskSpec
    from tiny_finetune_files import VOCAB, write_vocab

    folder = tmp_path_factory.mktemp("embedder")
    vocab = write_vocab(folder)
    keras.utils.set_random_seed(3)
    encoder = bert_tf.BertModel(bert_tf.BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1,
                                                   num_attention_heads=2, intermediate_size=32,
                                                   max_position_embeddings=32, initializer_range=0.5))
    spec = TaskSpec(task="embed", seq_length=16)
    model = task_from_spec(spec, bert_tf.BertTokenizer(vocab)).build_model(encoder, dropout=0.0)
    return bert_tf.save_pretrained(model, folder / "model", vocab_file=vocab, task=spec)
