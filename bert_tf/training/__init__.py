"""Training: distribution strategies, the pre-training loop, and Keras' `fit` under any strategy."""

from bert_tf.training.distributed_fit import TrainingStopped, distributed_fit
from bert_tf.training.pretraining import PretrainingConfig, PretrainingResult, build_pretrainer, run_pretraining
from bert_tf.training.strategy import is_chief, make_strategy, worker_directory

__all__ = ["PretrainingConfig", "PretrainingResult", "TrainingStopped", "build_pretrainer", "distributed_fit", "is_chief",
           "make_strategy", "run_pretraining", "worker_directory"]
