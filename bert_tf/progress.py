"""Progress of a long run that writes to a file: plain lines at a steady pace, not a terminal's bar.

Keras' and tqdm's bars redraw one line with carriage returns and colour codes; written to a log file
or a pipe they are one unreadable line, and with Python's block buffering they may arrive only when
the run ends. Where the output is not a terminal, `TextProgress` (training steps) and `progress_bar`
(tqdm's arguments; counting, embedding, predicting) print a flushed line at most every
`INTERVAL_SECONDS` and one at the end: the share done, the rate and the time left. A training run's first
step builds the model's graph (seconds to minutes): its rate counts from that step's end, and a line
printed before any other step has run says how long the first took. In a terminal (or a notebook) the
callers keep Keras' and tqdm's bars.

Example:
    >>> import io
    >>> out = io.StringIO()
    >>> progress = TextProgress(total_steps=4, examples_per_step=32, stream=out, interval_seconds=0)
    >>> progress.update(2, {"loss": 0.6931})
    >>> out.getvalue().startswith("step 2/4 (50%), ")
    True
    >>> for batch in progress_bar(range(3), desc="predicting", unit="batch", file=out):
    ...     pass
    >>> out.getvalue().splitlines()[-1].startswith("predicting: 100% (3/3 batch)")
    True
"""

from __future__ import annotations

import logging
import sys
import time

import keras
import numpy as np
import tqdm.auto
import tqdm.std

INTERVAL_SECONDS = 30.0
LINE_FORMAT = "{desc}: {percentage:.0f}% ({n_fmt}/{total_fmt} {unit}), {rate_fmt}, {remaining} left{postfix}"


def announce(message: str, progress: bool, logger: logging.Logger) -> None:
    """Logs `message` and, where the run shows its progress, prints it (above a bar, between lines)."""
    logger.info(message)
    if progress:
        print(message, flush=True)


def is_terminal(stream=None) -> bool:
    """Whether `stream` (default: stdout) is an interactive terminal."""
    stream = stream or sys.stdout
    return hasattr(stream, "isatty") and stream.isatty()


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {seconds:02d}s"


class TextProgress:
    """Plain progress lines for a run of `total_steps` steps of `examples_per_step` examples each."""

    def __init__(self, total_steps: int, examples_per_step: int, stream=None, interval_seconds: float | None = None,
                 first_step: int = 0):
        self.total_steps, self.examples_per_step = total_steps, examples_per_step
        self.stream = stream
        self.interval = INTERVAL_SECONDS if interval_seconds is None else interval_seconds
        self.first_step = first_step  # a resumed run starts here
        self.started = self.last_printed = time.monotonic()
        self.timed_from: tuple[int, float] | None = None  # (step, time) of the first update: the graph is built

    def update(self, step: int, metrics: dict | None = None) -> None:
        """Prints a line if the interval has passed since the last one, or at the last step."""
        now = time.monotonic()
        if self.timed_from is None:
            self.timed_from = step, now
        if now - self.last_printed < self.interval and step < self.total_steps:
            return
        self.last_printed = now
        done, seconds = step - self.timed_from[0], now - self.timed_from[1]
        rate = done / max(seconds, 1e-9)  # steps/s, the graph's build left out
        parts = [f"step {step}/{self.total_steps} ({100 * step / self.total_steps:.0f}%)"]
        parts += [f"{rate * self.examples_per_step:.1f} examples/s"] if done > 0 else []
        parts += [f"{name} {value:.4g}" for name, value in (metrics or {}).items()]
        if done == 0:
            first = step - self.first_step
            parts.append(f"the first step{'s' * (first > 1)} took {_duration(now - self.started)} (building the "
                         "model's graph)")
        elif step < self.total_steps:
            parts.append(f"{_duration((self.total_steps - step) / rate)} left")
        print(", ".join(parts), file=self.stream or sys.stdout, flush=True)


class TextProgressCallback(keras.callbacks.Callback):
    """`TextProgress` for `model.fit`, counting steps over every epoch; reports the running mean loss, and at each
    epoch's end a line of its logs (in place of Keras' own, which would repeat the last step's)."""

    def __init__(self, epochs: int, steps_per_epoch: int, batch_size: int, stream=None):
        super().__init__()
        self.steps_per_epoch = steps_per_epoch
        self.progress = TextProgress(epochs * steps_per_epoch, batch_size, stream=stream)
        self.epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        self.progress.update(self.epoch * self.steps_per_epoch + batch + 1,
                             {"loss": float(loss)} if loss is not None else None)

    def on_epoch_end(self, epoch, logs=None):
        """A line with the epoch's logs (its mean loss, the dev scores put there by callbacks before this one)."""
        scores = [f"{name} {float(value):.4g}" for name, value in (logs or {}).items() if np.ndim(value) == 0]
        print(f"epoch {epoch + 1}/{self.progress.total_steps // self.steps_per_epoch}: {', '.join(scores)}",
              file=self.progress.stream or sys.stdout, flush=True)


def progress_bar(iterable=None, *, file=None, **options):
    """tqdm's bar (`tqdm.auto`, the same arguments) in a terminal or a notebook; `LineProgress` for a
    file or a pipe. `file` defaults to stderr, as tqdm's."""
    if is_terminal(file or sys.stderr) or "ipykernel" in sys.modules:
        return tqdm.auto.tqdm(iterable, file=file, **options)
    return LineProgress(iterable, file=file or sys.stderr, **options)


class LineProgress(tqdm.std.tqdm):
    """tqdm writing its status as plain, flushed lines: at most one every `INTERVAL_SECONDS`, one at the end."""

    def __init__(self, iterable=None, **options):
        total = options.get("total", len(iterable) if hasattr(iterable, "__len__") else None)
        options.setdefault("mininterval", INTERVAL_SECONDS)
        options.setdefault("maxinterval", max(INTERVAL_SECONDS, options["mininterval"]))
        if total is not None:  # without a total, tqdm's own line has no bar: "writing: 30batch [00:12, 2.50batch/s]"
            options.setdefault("bar_format", LINE_FORMAT)
        super().__init__(iterable, **options)

    def set_postfix(self, ordered_dict=None, refresh=True, **kwargs):
        super().set_postfix(ordered_dict, refresh=False, **kwargs)  # shown with the next line, not a line of its own

    def set_description(self, desc=None, refresh=True):
        super().set_description(desc, refresh=False)

    def display(self, msg=None, pos=None):
        if msg == "":  # tqdm clearing its bar: a file keeps its lines
            return False
        self.fp.write(" ".join((str(self) if msg is None else msg).split()) + "\n")  # tqdm pads its rates
        self.fp.flush()
        return True

    def close(self):
        if not self.disable:
            self.display()  # the final state, once, whatever `leave` says
        self.leave = False
        super().close()
