"""The tasks, each one folder that every path calls (training, evaluation, `predict`, the exports), so no two disagree.

- `classification`: texts or pairs → packed ids (pairs cut by the spec's truncation); logits → classes
  (`--task classify`, `BertClassifier`).
- `ner`: words → windows of whole words (a long sentence gets several); per-token logits → tags; a word's tag
  is its first piece's (`--task ner`, `BertTokenClassifier`).
- `squad`: question + context → doc-stride windows; the windows' logits → the best answer span (`--task squad`,
  `BertSpanLabeler`).
- `embedding`: texts → pooled, normalised sentence vectors (`--task embed`, `BertEmbedder`).
- `encoder`: the encoder alone and with its pre-training heads (`BertModel`, `BertPretrainer`): exported and
  inspected, not fine-tuned.

Each folder holds its `Task` (`base`), its own settings (`settings.py`, a `TaskSettings`), model and metrics;
`registry` is the one list of them (`register_task` adds another). `spec.TaskSpec` is what a model directory
saves of its task: the shared settings and the task's own.

Example:
    >>> from bert_tf.tasks import TaskSpec
    >>> TaskSpec(task="ner", seq_length=128).label_scheme
    'BIO'
"""

from bert_tf.tasks.spec import TaskSpec

__all__ = ["TaskSpec"]
