"""Training: distribution strategies and the pre-training loop."""

from bert_tf.training.pretraining import PretrainingConfig, PretrainingResult, build_pretrainer, run_pretraining
from bert_tf.training.strategy import is_chief, make_strategy, worker_directory

__all__ = ["PretrainingConfig", "PretrainingResult", "build_pretrainer", "is_chief", "make_strategy", "run_pretraining",
           "worker_directory"]
