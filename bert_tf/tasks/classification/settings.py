"""`ClassificationSettings`: the settings of the classification task (`bert-tf finetune --task classify`).

Example:
    >>> ClassificationSettings(multi_label=True).to_metadata()["multi_label"]
    True
    >>> ClassificationSettings(focal_gamma=-1.0)
    Traceback (most recent call last):
    ...
    ValueError: focal_gamma must be >= 0, got -1.0.
"""

from __future__ import annotations

import dataclasses

from bert_tf.tasks.settings import TaskSettings, setting

COLUMN_FLAGS = ("--text-column", "--text-pair-column", "--label-column")  # the three entries of `columns`


@dataclasses.dataclass(frozen=True)
class ClassificationSettings(TaskSettings):
    """How examples are read and classified; the loss's options (`class_weights`, `focal_loss`, `focal_gamma`)."""

    multi_label: bool = setting(False, flag="--multi-label", help="any number of labels per example")
    multi_label_threshold: float = 0.5  # a class is predicted when its sigmoid is at least this
    # The data files' text, text pair and label columns; None: GLUE's and common column names
    # (bert_tf.tasks.classification.data), and what the training file had is saved with the model.
    columns: tuple[str | None, ...] = (None, None, None)
    label_separator: str = setting("|", flag="--label-separator", help="between labels in a CSV/TSV cell (multi-label)")
    class_weights: bool = setting(False, flag="--class-weights", help="weight classes by n / (k * count)")
    focal_loss: bool = setting(False, flag="--focal-loss", help="focal loss instead of cross-entropy")
    focal_gamma: float = setting(2.0, flag="--focal-gamma", type=float, help="the focal loss's gamma")

    def check(self):
        if len(self.columns) != 3:
            raise ValueError(f"columns must be three: text, text pair and label, got {self.columns!r}.")
        if self.focal_gamma < 0:
            raise ValueError(f"focal_gamma must be >= 0, got {self.focal_gamma!r}.")
        if self.multi_label and (self.class_weights or self.focal_loss):
            raise ValueError("class_weights and focal_loss apply to single-label classification.")

    @classmethod
    def flags(cls):
        return {**super().flags(), "columns": "/".join(COLUMN_FLAGS)}

    @classmethod
    def add_arguments(cls, parser):
        parser.add_argument(COLUMN_FLAGS[0], dest="text_column",
                            help="default: GLUE's and common names (sentence, #1 String, text, ...)")
        parser.add_argument(COLUMN_FLAGS[1], dest="text_pair_column", help="second text, for sentence-pair tasks")
        parser.add_argument(COLUMN_FLAGS[2], dest="label_column")
        super().add_arguments(parser)

    @classmethod
    def from_arguments(cls, args):
        given = {name: value for name, value in super().from_arguments(args).items() if name != "columns"}
        columns = tuple(getattr(args, name, None) for name in ("text_column", "text_pair_column", "label_column"))
        return {**given, "columns": columns} if any(columns) else given
