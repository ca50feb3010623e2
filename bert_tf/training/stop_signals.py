"""SIGTERM and SIGINT as requests to stop a training loop at the next step, instead of killing it.

Example:
    >>> with StopSignals() as stop:  # doctest: +SKIP
    ...     while not done and stop.received is None:
    ...         train_one_step()
    ...     save_checkpoint()
"""

from __future__ import annotations

import logging
import signal
import threading

logger = logging.getLogger(__name__)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)  # preemption (Kubernetes, Slurm, spot VMs) and Ctrl-C


class StopSignals:
    """Records the first SIGTERM or SIGINT while in the `with` block; outside it, the previous handlers act.

    A second signal gives up waiting: the previous handlers are put back and the signal raised
    again, so a second Ctrl-C interrupts at once. Only the main thread can install handlers:
    elsewhere the block records nothing and signals act as before.
    """

    def __init__(self):
        self.received: signal.Signals | None = None
        self._previous: dict[signal.Signals, object] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is not threading.main_thread():
            logger.debug("Not the main thread: SIGTERM and SIGINT keep their handlers during training.")
            return self
        for signum in STOP_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._record)
        return self

    def __exit__(self, *exc_info) -> None:
        self._restore()

    def _record(self, signum: int, frame) -> None:
        if self.received is not None:
            self._restore()
            signal.raise_signal(signum)
            return
        self.received = signal.Signals(signum)
        logger.info("Received %s: stopping after this step, with a checkpoint.", self.received.name)

    def _restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)  # None: set outside Python
        self._previous.clear()
