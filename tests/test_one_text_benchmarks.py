"""The one-text benchmarks: the profile sorts a served graph's ops into what they do, and the race judges its targets.

They measure nothing here: the figures come from `python -m benchmarks.one_text_profile` and
`python -m benchmarks.run --only one_text_race` (benchmarks/RESULTS.md).
"""

import collections

import bert_tf
import tensorflow as tf

from benchmarks.cpu_serving import ORT, ORT_INT8, SAVED_TEXT, SAVED_TEXT_BF16, SERVED_INT8, TEXT_TFLITE
from benchmarks.harness import Timing
from benchmarks.one_text_profile import CATEGORIES, category, traced_ops
from benchmarks.one_text_race import targets
from tiny_exports import tiny_encoder, write_vocab


def test_the_trace_of_a_served_text_call_finds_every_dense_product_and_the_tokenizer(tmp_path):
    from serving.export.saved_model import export_saved_model

    encoder = tiny_encoder()
    classifier = bert_tf.BertClassifier(encoder, num_classes=2)
    model_dir = bert_tf.save_pretrained(classifier, tmp_path / "model", vocab_file=write_vocab(tmp_path),
                                        lower_case=True, task="classify", seq_length=16)
    signature = tf.saved_model.load(str(export_saved_model(model_dir, tmp_path / "serving", "tiny"))).signatures[
        "serving_default"]
    call = lambda: signature(text=tf.constant(["the film was great"]))  # noqa: E731
    call()
    ops, wall = traced_ops(call, 2, tmp_path / "trace")
    kinds = collections.Counter(category(name, op_type) for name, op_type, _ in ops)
    # Per call: 6 dense layers per block (Q, K, V, attention output, intermediate, output), the pooler, the head.
    assert kinds[CATEGORIES[0]] == 2 * (6 * encoder.config.num_hidden_layers + 2)
    assert kinds[CATEGORIES[1]] == 2 * 2 * encoder.config.num_hidden_layers  # QKᵀ and AV per block
    assert kinds[CATEGORIES[5]] > 0 and kinds[CATEGORIES[3]] > 0
    assert wall > 0 and all(duration >= 0 for _, _, duration in ops)


def timing(name: str, seconds: float, cpu_seconds: float) -> Timing:
    return Timing(name, 10, [seconds] * 3, [cpu_seconds] * 3)


def test_a_target_is_met_only_when_both_wall_clock_and_cpu_time_reach_it():
    timings = {SAVED_TEXT: timing(SAVED_TEXT, 1.0, 1.2), TEXT_TFLITE: timing(TEXT_TFLITE, 0.5, 1.0),
               SAVED_TEXT_BF16: timing(SAVED_TEXT_BF16, 2.0, 2.0), ORT: timing(ORT, 0.5, 1.5),
               SERVED_INT8: timing(SERVED_INT8, 0.2, 0.5), ORT_INT8: timing(ORT_INT8, 0.25, 0.4)}
    rows = {(row[0], row[1].split(" against ")[0]): row for row in targets(timings, avx512=False)}
    # float32: the .tflite (the faster bert-tf export) against ONNX Runtime: 1.00× wall, 1.50× CPU.
    assert rows[("float32: fastest bert-tf export", TEXT_TFLITE)][2:4] == ["1.00×", "1.50×"]
    assert rows[("float32: fastest bert-tf export", TEXT_TFLITE)][5] == "**met**"
    assert rows[("SavedModel TF Serving loads", SAVED_TEXT)][5] == "met by CPU time only"  # 0.50× wall, 1.25× CPU
    assert rows[("int8 on an AVX2-only CPU", SERVED_INT8)][5] == "met by wall clock only"  # 1.25× wall, 0.80× CPU
    assert ("bf16: fastest bert-tf export", SAVED_TEXT_BF16) not in rows  # no bf16 peer among the timings
    assert not any(row[0] == "int8 on an AVX2-only CPU" for row in targets(timings, avx512=True))
