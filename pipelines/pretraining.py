"""The pre-training input pipeline: text files → NSP pairs → in-graph WordPiece → dynamic masks → batches.

Everything after reading the files runs in the TensorFlow graph, in `tf.data`:

    files ─ shard per worker ─ read ─ documents (blank-line separated) ─ shuffle
      ─ windows of documents ─ BertTokenizer ─ NSP pairs (pipelines.sentence_pairs)
      ─ shuffle pairs ─ batch ─ [CLS] A [SEP] B [SEP] ─ dynamic masks (pipelines.masking) ─ pad ─ prefetch

Input files are in BERT's text format (one sentence per line, a blank line between
documents; `bert-tf prepare-corpus` writes it), or TFRecords of ready examples
(`pipelines.pretraining_records`, compatible with google-research/bert's
`create_pretraining_data.py`).

Example:
    >>> dataset = pretraining_dataset(["corpus/book.txt"], "vocab.txt", seq_length=128,
    ...                               max_predictions_per_seq=20, batch_size=32)   # doctest: +SKIP
    >>> sorted(next(iter(dataset)))                                                # doctest: +SKIP
    ['input_mask', 'input_type_ids', 'input_word_ids', 'masked_lm_ids', 'masked_lm_positions',
     'masked_lm_weights', 'next_sentence_labels']
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.tokenizer import BertTokenizer
from bert_tf.training import PretrainingConfig
from pipelines.masking import MlmMasker
from pipelines.pretraining_records import read_pretraining_records
from pipelines.sentence_pairs import build_pairs

AUTOTUNE = tf.data.AUTOTUNE


def _documents(content):
    """A file's text → ragged [documents, (sentences)] of non-empty lines."""
    content = tf.strings.regex_replace(content, "\r\n?", "\n")
    documents = tf.strings.split(tf.strings.regex_replace(content, r"\n[ \t]*\n\s*", "\n\n"), "\n\n")
    sentences = tf.strings.split(tf.strings.strip(documents), "\n")
    sentences = tf.ragged.map_flat_values(tf.strings.strip, sentences)
    sentences = tf.ragged.boolean_mask(sentences, tf.strings.length(sentences) > 0)
    return tf.ragged.boolean_mask(sentences, sentences.row_lengths() > 0)


def _check_files(files: Sequence[str]) -> list[str]:
    paths = [str(p) for pattern in files for p in (sorted(Path().glob(pattern)) if any(c in str(pattern) for c in "*?[") else [Path(pattern)])]
    if not paths:
        raise FileNotFoundError(f"No pre-training files match {list(files)}.")
    missing = [p for p in paths if not Path(p).is_file()]
    if missing:
        raise FileNotFoundError(f"Pre-training files not found: {missing}")
    return paths


def _feature_shape(name: str, seq_length: int, max_predictions_per_seq: int) -> list:
    if name == "next_sentence_labels":
        return [None]
    return [None, max_predictions_per_seq if name.startswith("masked_lm") else seq_length]


def pretraining_dataset(
    files: Sequence[str],
    vocab_file: str,
    seq_length: int = 128,
    max_predictions_per_seq: int = 20,
    batch_size: int = 32,
    masked_lm_prob: float = 0.15,
    short_seq_prob: float = 0.1,
    whole_word_masking: bool = False,
    lower_case: bool | None = None,
    seed: int | None = None,
    repeat: bool = True,
    documents_per_window: int = 4,
    shuffle_buffer: int = 2048,
    input_context: tf.distribute.InputContext | None = None,
) -> tf.data.Dataset:
    """Batches of BERT pre-training features (the names of google-research/bert) with fresh masks each pass.

    Args:
        files: text files in BERT's format, or `.tfrecord` files of ready examples (glob patterns work).
        vocab_file: the WordPiece vocabulary; `lower_case` None infers the casing from it.
        seq_length, max_predictions_per_seq: example length and masked positions per example.
        batch_size: examples per batch (per replica, under a distribution strategy).
        seed: makes the document order and the pairs reproducible (masks stay random per pass).
        repeat: loop over the data forever (training loops count steps) or make one pass.
        documents_per_window: documents tokenized together; NotNext segments come from
            another document of the same window.
        input_context: from `strategy.distribute_datasets_from_function`: this worker's shard.
    """
    paths = _check_files(files)
    if all(p.endswith((".tfrecord", ".tfrecords")) for p in paths):
        return read_pretraining_records(paths, seq_length, max_predictions_per_seq, batch_size, seed=seed,
                                        repeat=repeat, input_context=input_context)
    tokenizer = BertTokenizer(vocab_file, lower_case=lower_case)
    vocabulary = tokenizer.vocabulary
    masker = MlmMasker(vocabulary, max_predictions_per_seq, masked_lm_prob, whole_word_masking=whole_word_masking)
    max_num_tokens = seq_length - 3

    dataset = tf.data.Dataset.from_tensor_slices(paths)
    if input_context and input_context.num_input_pipelines > 1:
        if len(paths) < input_context.num_input_pipelines:
            raise ValueError(f"{len(paths)} file(s) cannot be shared by {input_context.num_input_pipelines} workers: "
                             "split the corpus into at least one file per worker.")
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    dataset = dataset.map(tf.io.read_file).map(_documents).unbatch()  # one element per document
    if repeat:
        dataset = dataset.repeat()
    dataset = dataset.shuffle(256, seed=seed)

    def make_pairs(documents, pair_seed):
        tokens = tokenizer(documents)  # [documents, (sentences), (tokens)]
        segment_a, segment_b, labels = build_pairs(tokens, max_num_tokens, short_seq_prob, pair_seed)
        return {"segment_a": segment_a, "segment_b": segment_b, "next_sentence_labels": labels}

    def mask_and_pad(pairs):
        ids, type_ids = tf_text.combine_segments(
            [pairs["segment_a"], pairs["segment_b"]], vocabulary.cls_id, vocabulary.sep_id
        )
        masked_ids, positions, labels = masker(ids)
        word_ids, input_mask = tf_text.pad_model_inputs(masked_ids, seq_length, pad_value=vocabulary.pad_id)
        type_ids, _ = tf_text.pad_model_inputs(type_ids, seq_length)
        positions, weights = tf_text.pad_model_inputs(positions, max_predictions_per_seq)
        labels, _ = tf_text.pad_model_inputs(labels, max_predictions_per_seq)
        features = {
            "input_word_ids": word_ids,
            "input_mask": input_mask,
            "input_type_ids": type_ids,
            "masked_lm_positions": tf.cast(positions, tf.int32),
            "masked_lm_ids": tf.cast(labels, tf.int32),
            "masked_lm_weights": tf.cast(weights, tf.float32),
            "next_sentence_labels": pairs["next_sentence_labels"],
        }
        return {name: tf.ensure_shape(value, _feature_shape(name, seq_length, max_predictions_per_seq))
                for name, value in features.items()}

    windows = dataset.ragged_batch(documents_per_window)
    pair_seeds = tf.data.Dataset.random(seed=seed).batch(2)
    dataset = tf.data.Dataset.zip(windows, pair_seeds).map(make_pairs, num_parallel_calls=AUTOTUNE).unbatch()
    dataset = dataset.shuffle(shuffle_buffer, seed=seed)
    dataset = dataset.ragged_batch(batch_size, drop_remainder=repeat)
    return dataset.map(mask_and_pad, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)


def pretraining_dataset_fn(config: PretrainingConfig):
    """The `dataset_fn` that `bert_tf.training.run_pretraining` takes, for the files and settings of `config`."""
    if not config.vocab_file:
        raise ValueError("PretrainingConfig.vocab_file is needed to tokenize the training text.")

    def dataset_fn(input_context: tf.distribute.InputContext) -> tf.data.Dataset:
        return pretraining_dataset(
            config.train_files,
            config.vocab_file,
            seq_length=config.seq_length,
            max_predictions_per_seq=config.max_predictions_per_seq,
            batch_size=input_context.get_per_replica_batch_size(config.global_batch_size),
            masked_lm_prob=config.masked_lm_prob,
            short_seq_prob=config.short_seq_prob,
            whole_word_masking=config.whole_word_masking,
            lower_case=config.lower_case,
            seed=config.seed,
            input_context=input_context,
        )

    return dataset_fn
