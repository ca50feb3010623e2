"""`NerSettings`: the settings of the NER task (`bert-tf finetune --task ner`).

Example:
    >>> NerSettings().to_metadata()
    {'label_scheme': 'BIO'}
"""

from __future__ import annotations

import dataclasses

from bert_tf.tasks.settings import TaskSettings

LABEL_SCHEMES = ("BIO",)


@dataclasses.dataclass(frozen=True)
class NerSettings(TaskSettings):
    """How tags are read and predicted."""

    label_scheme: str = "BIO"  # tags are trained and predicted as BIO (IOB1 files are converted on reading)

    def check(self):
        if self.label_scheme not in LABEL_SCHEMES:
            raise ValueError(f"Unknown label_scheme {self.label_scheme!r}; use one of {list(LABEL_SCHEMES)}.")
