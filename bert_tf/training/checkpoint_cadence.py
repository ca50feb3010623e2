"""When a training loop checkpoints: every so many steps, or after so many minutes, whichever comes first.

Example:
    >>> cadence = CheckpointCadence(every_steps=100, every_seconds=300)
    >>> cadence.step_due(200), cadence.step_due(250)
    (True, False)
    >>> cadence.time_due()  # True once 300 s have passed since the start or the last `saved()`
    False
"""

from __future__ import annotations

import time
from typing import Callable


class CheckpointCadence:
    """Steps that are multiples of `every_steps` are due, and so is any step once `every_seconds` have passed."""

    def __init__(self, every_steps: int, every_seconds: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.every_steps = every_steps
        self.every_seconds = every_seconds  # None: by steps only
        self._clock = clock
        self._last_saved = clock()

    def step_due(self, step: int) -> bool:
        return step % self.every_steps == 0

    def time_due(self) -> bool:
        return self.every_seconds is not None and self._clock() - self._last_saved >= self.every_seconds

    def saved(self) -> None:
        """Starts the time to the next checkpoint from now."""
        self._last_saved = self._clock()
