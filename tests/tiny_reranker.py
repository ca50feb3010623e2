"""A stand-in reranker task for the serving, search and evaluation tests: a tiny BERT encoder and a one-logit head on
its pooled output, reading `[CLS] query [SEP] document [SEP]` (the `rerank` task's model, inputs and outputs), added
through the task registry with the shared reranker signature (`bert_tf.tasks.rerank_serving`).

`registered_reranker(folder)` registers the task, writes a model directory and yields it; the registry is as it was
afterwards. `tiny_rerank_model(folder)` writes a model directory of the `rerank` task itself (what `bert-tf predict`
reads)."""

import contextlib
import dataclasses

import keras
import tensorflow as tf

import bert_tf
from bert_tf.tasks import registry
from bert_tf.tasks.base import Task
from bert_tf.tasks.rerank_serving import SCORES, RerankTextServing
from bert_tf.tasks.settings import SETTINGS_CLASSES, TaskSettings
from bert_tf.tasks.spec import TaskSpec
from bert_tf.tasks.task_model import BertTaskModel
from tiny_finetune_files import VOCAB, write_vocab

SEQ_LENGTH = 24


@keras.saving.register_keras_serializable(package="bert_tf_test_reranker")
class PairScorer(BertTaskModel):
    """The encoder's pooled output → one logit per (query, document) pair: logits [batch]."""

    text_padding = "longest"

    def __init__(self, encoder, **kwargs):
        super().__init__(encoder, **kwargs)
        self.scorer = keras.layers.Dense(1, kernel_initializer="glorot_uniform", dtype="float32", name="scorer")
        self.scorer.build((None, encoder.config.hidden_size))
        self.built = True

    def head(self, features, inputs, training=None):
        return tf.squeeze(self.scorer(tf.cast(features, tf.float32)), -1)

    def default_loss(self):
        return keras.losses.BinaryCrossentropy(from_logits=True)

    def default_metrics(self):
        return []


@dataclasses.dataclass(frozen=True)
class PairScorerSettings(TaskSettings):
    def text_inputs(self, text_pair):
        return ("query", "document")  # the rerank task's names

    def shortest_seq_length(self, text_pair):
        return 5


class PairScorerTask(Task):
    name = "standin_rerank"
    model_class = PairScorer
    settings_class = PairScorerSettings
    text_padding = "longest"
    reads_text_pairs = True
    text_serving_class = RerankTextServing

    @classmethod
    def serving_outputs(cls, model, spec, ids):
        return {SCORES: tf.cast(model(ids, training=False), tf.float32)}


def tiny_pair_scorer(hidden_size=16, seed=3) -> PairScorer:
    """A random stand-in reranker (seed 3: on tests/test_cli_evaluate_rerank.py's data it reorders the first stage)."""
    keras.utils.set_random_seed(seed)
    encoder = bert_tf.BertModel(bert_tf.BertConfig(vocab_size=len(VOCAB), hidden_size=hidden_size, num_hidden_layers=1,
                                                   num_attention_heads=2, intermediate_size=2 * hidden_size,
                                                   max_position_embeddings=SEQ_LENGTH, initializer_range=0.5))
    return PairScorer(encoder)


@contextlib.contextmanager
def registered_reranker(folder, hidden_size=16):
    """The stand-in task registered while the block runs; yields a model directory of it in `folder` (`hidden_size`
    64: weight matrices large enough for int8 quantization, which leaves tensors under 1024 values float32)."""
    saved = [dict(table) for table in (registry.TASKS, registry.FOLDER_FORMATS, SETTINGS_CLASSES)]
    registry.register_task(PairScorerTask)
    try:
        spec = TaskSpec(task=PairScorerTask.name, seq_length=SEQ_LENGTH, text_pair=True)
        yield bert_tf.save_pretrained(tiny_pair_scorer(hidden_size), folder / "reranker", vocab_file=write_vocab(folder), task=spec)
    finally:
        for table, before in zip((registry.TASKS, registry.FOLDER_FORMATS, SETTINGS_CLASSES), saved):
            table.clear()
            table.update(before)


def local_scores(model_dir, query: str, documents: list[str]):
    """The Keras model's logits for (query, document) pairs, packed as training packs them: float [documents]."""
    directory = bert_tf.load_model_directory(model_dir)
    spec = directory.task
    preprocessor = bert_tf.BertPreprocessor(bert_tf.BertTokenizer(directory.require_vocab_file()), spec.seq_length,
                                            truncation=spec.truncation)
    ids = preprocessor([tf.constant([query] * len(documents)), tf.constant(documents)])
    return directory.model(ids).numpy()


def tiny_rerank_model(folder, seed=5):
    """A model directory of the `rerank` task itself (a random `BertReranker` of the tests' vocabulary), in `folder`:
    what `bert-tf predict` and `evaluate` read as a model directory and as its export."""
    keras.utils.set_random_seed(seed)
    spec = TaskSpec.of("rerank", seq_length=SEQ_LENGTH)
    encoder = bert_tf.BertModel(bert_tf.BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1,
                                                   num_attention_heads=2, intermediate_size=32,
                                                   max_position_embeddings=SEQ_LENGTH, initializer_range=0.5))
    model = registry.task_from_spec(spec, None).build_model(encoder, dropout=0.0)
    return bert_tf.save_pretrained(model, folder / "rerank", vocab_file=write_vocab(folder), task=spec)
