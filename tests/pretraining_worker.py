"""A small pre-training run on synthetic features, started as its own process by the loop tests.

Usage: python pretraining_worker.py OUTPUT_DIR STEPS STRATEGY [--logical-cpus N] [--weights-out FILE.npz]
           [--checkpoint-every N] [--checkpoint-minutes M] [--stop-after N] [--hidden-size H] [--vocab-size V]

It logs at INFO ("Resuming from step ...") and ends with "FINISHED step=N", or "STOPPED by SIGTERM at
step=N" and exit status 128 + the signal's number, as `bert-tf pretrain` does.
"""

import argparse
import logging
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

CONFIG_FIELDS = dict(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
GLOBAL_BATCH = 8


def synthetic_features(count=512, seq=12, predictions=3):
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 50, (count, seq)).astype(np.int32)
    positions = np.sort(rng.permuted(np.tile(np.arange(1, seq), (count, 1)), axis=1)[:, :predictions], axis=1)
    return {
        "input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids),
        "masked_lm_positions": positions.astype(np.int32),
        "masked_lm_ids": np.take_along_axis(ids, positions, axis=1) % 7,
        "masked_lm_weights": (rng.random((count, predictions)) > 0.2).astype(np.float32),
        "next_sentence_labels": (ids[:, 0] % 2).astype(np.int32),
    }


def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
    dataset = tf.data.Dataset.from_tensor_slices(synthetic_features())
    dataset = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
    return dataset.repeat().batch(context.get_per_replica_batch_size(GLOBAL_BATCH))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("output_dir")
    parser.add_argument("steps", type=int)
    parser.add_argument("strategy")
    parser.add_argument("--logical-cpus", type=int, default=1)
    parser.add_argument("--weights-out")
    parser.add_argument("--checkpoint-every", type=int, default=2)
    parser.add_argument("--checkpoint-minutes", type=float)
    parser.add_argument("--stop-after", type=int)
    parser.add_argument("--hidden-size", type=int, default=CONFIG_FIELDS["hidden_size"])
    parser.add_argument("--vocab-size", type=int, default=CONFIG_FIELDS["vocab_size"])
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stdout)
    if args.logical_cpus > 1:  # before TensorFlow runs any op
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * args.logical_cpus)

    import bert_tf
    from bert_tf.training import PretrainingConfig, run_pretraining

    config_file = os.path.join(args.output_dir, "bert_config.json")
    os.makedirs(args.output_dir, exist_ok=True)
    bert_tf.BertConfig(**{**CONFIG_FIELDS, "hidden_size": args.hidden_size, "vocab_size": args.vocab_size}
                       ).write_json(config_file)
    config = PretrainingConfig(
        output_dir=args.output_dir, model=config_file, seq_length=12, max_predictions_per_seq=3,
        global_batch_size=GLOBAL_BATCH, num_train_steps=args.steps, num_warmup_steps=1, learning_rate=1e-3,
        strategy=args.strategy, checkpoint_every=args.checkpoint_every, checkpoint_minutes=args.checkpoint_minutes,
        log_every=1)
    result = run_pretraining(config, dataset_fn, progress=False, stop_after_steps=args.stop_after)
    if result.stopped_by:
        print(f"STOPPED by {result.stopped_by.name} at step={result.step}", flush=True)
        return 128 + result.stopped_by
    print(f"FINISHED step={result.step}", flush=True)
    if args.weights_out:
        np.savez(args.weights_out, **{name: v.numpy() for name, v in result.model.google_weights().items()})


if __name__ == "__main__":
    sys.exit(main())
