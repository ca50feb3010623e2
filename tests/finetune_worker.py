"""One `bert_tf.training.finetune.finetune` run in a process of its own, started by tests/test_finetune_strategies.py.

Usage: python finetune_worker.py CONFIG_JSON WEIGHTS_OUT [--logical-cpus N]

CONFIG_JSON holds the `FinetuneConfig` fields. The process splits its CPU into N logical devices first (they
must be configured before TensorFlow runs any op), then fine-tunes, writes the trained model's weights to
WEIGHTS_OUT (.npz, in `model.weights` order) and prints "LOSSES [epoch losses]" as its last line.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("config_json")
    parser.add_argument("weights_out")
    parser.add_argument("--logical-cpus", type=int, default=1)
    args = parser.parse_args()
    if args.logical_cpus > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * args.logical_cpus)

    from bert_tf.training.finetune import finetune
    from bert_tf.training.finetune_config import FinetuneConfig

    result = finetune(FinetuneConfig(**json.loads(args.config_json)), progress=False)
    np.savez(args.weights_out, *[weight.numpy() for weight in result.model.weights])
    print("LOSSES", json.dumps(result.history["loss"]), flush=True)


if __name__ == "__main__":
    sys.exit(main())
