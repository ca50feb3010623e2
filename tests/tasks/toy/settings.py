"""`ToySettings`: the toy task's own settings."""

import dataclasses

from bert_tf.tasks.settings import TaskSettings, setting


@dataclasses.dataclass(frozen=True)
class ToySettings(TaskSettings):
    offset: float = setting(0.0, flag="--offset", type=float, help="added to every predicted score")
    loss: str = setting("mse", flag="--toy-loss", choices=("mse", "mae"), help="the training loss")

    def check(self):
        if self.loss not in ("mse", "mae"):
            raise ValueError(f"Unknown loss {self.loss!r}; use mse or mae.")
