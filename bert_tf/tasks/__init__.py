"""The fine-tuning tasks, each one unit in TensorFlow ops that every path calls, so that no two disagree.

- `spec`: `TaskSpec`, the task definition saved with a model (labels, seq_length, every setting
  that shapes text → features → outputs).
- `classification`: texts or pairs → packed ids (pairs cut by the spec's truncation); logits →
  probabilities.
- `ner`: words → windows of whole words (a long sentence gets several); per-token logits →
  tags; a word's tag is its first piece's.
- `squad`: question + context → doc-stride windows; the windows' logits → the best answer span.
Fine-tuning and evaluation (`pipelines`, which also read the data files and score), `bert-tf
predict`, and the SavedModel and TFLite exports (`serving`) all use these.

Example:
    >>> from bert_tf.tasks import TaskSpec
    >>> TaskSpec(task="ner", seq_length=128).label_scheme
    'BIO'
"""

from bert_tf.tasks.spec import DEFAULT_SEQ_LENGTH, FINETUNED_TASKS, TASKS, TaskSpec

__all__ = ["DEFAULT_SEQ_LENGTH", "FINETUNED_TASKS", "TASKS", "TaskSpec"]
