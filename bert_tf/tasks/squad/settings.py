"""`SquadSettings`: the settings of extractive question answering (`bert-tf finetune --task squad`); the defaults are
BERT's `run_squad.py`'s.

The context is read in windows `doc_stride` tokens apart, and the answer is the best span over all of them.

Example:
    >>> settings = SquadSettings()
    >>> settings.doc_stride, settings.text_inputs(False), settings.shortest_seq_length(False)
    (128, ('question', 'context'), 75)
"""

from __future__ import annotations

import dataclasses

from bert_tf.tasks.settings import TaskSettings, positive_integers, setting

SHORTEST_CONTEXT = 8  # context tokens a window holds at least


@dataclasses.dataclass(frozen=True)
class SquadSettings(TaskSettings):
    """The context windows and the answers considered."""

    doc_stride: int = setting(128, flag="--doc-stride", type=int,
                              help="tokens between the starts of consecutive context windows")
    max_query_length: int = setting(64, flag="--max-query-length", type=int, help="question tokens kept")
    max_answer_length: int = setting(30, flag="--max-answer-length", type=int,
                                     help="tokens of the longest answer considered")
    n_best_size: int = setting(20, flag="--n-best-size", type=int,
                               help="start and end candidates considered per window")
    null_score_threshold: float = setting(0.0, flag="--null-score-threshold", type=float,
                                          help="SQuAD 2.0: answer \"\" when the null score minus the best span's "
                                               "exceeds it")
    version_2: bool = False  # SQuAD 2.0: unanswerable questions are possible (learned from the training file)

    def check(self):
        positive_integers(self, "doc_stride", "max_query_length", "max_answer_length", "n_best_size")

    def shortest_seq_length(self, text_pair):
        """[CLS], the question, two [SEP] and `SHORTEST_CONTEXT` context tokens."""
        return self.max_query_length + 3 + SHORTEST_CONTEXT

    def text_inputs(self, text_pair):
        return ("question", "context")
