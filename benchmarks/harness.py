"""Interleaved timing: each contender runs once per round (A B C A B C ...), after warm-up.

Interleaving makes the contenders share whatever else the machine is doing, so their
ratios stay fair on a loaded machine even when the absolute numbers move.

Example:
    >>> timings = interleaved([Contender("sum", lambda: sum(range(1000)), items=1000)], rounds=3)
    >>> timings["sum"].rounds
    3
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import time
from typing import Callable, Sequence

from tqdm import tqdm


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


@dataclasses.dataclass
class Contender:
    """One way of doing the work: `run()` does it once and processes `items` items (sequences, tokens, steps)."""

    name: str
    run: Callable[[], object]
    items: float = 1.0


@dataclasses.dataclass
class Timing:
    """The wall-clock and process CPU seconds of every timed call of one contender, and its rates.

    CPU seconds (all threads of this process) are much less disturbed by other processes
    than wall-clock seconds on a shared machine: `cpu_median` turns them into a rate as if
    this process had every usable core to itself (threads that spin while waiting count as busy).
    """

    name: str
    items: float
    seconds: list[float]
    cpu_seconds: list[float] = dataclasses.field(default_factory=list)

    @property
    def rounds(self) -> int:
        return len(self.seconds)

    @property
    def rates(self) -> list[float]:
        return [self.items / s for s in self.seconds]

    @property
    def median(self) -> float:
        """Median rate, items per second."""
        return statistics.median(self.rates)

    @property
    def sustained(self) -> float:
        """Items of all timed calls over their total seconds: the rate of a bursty producer over the long run."""
        return self.items * len(self.seconds) / sum(self.seconds)

    @property
    def best(self) -> float:
        """Best rate of any call: the closest to what the machine does undisturbed."""
        return max(self.rates)

    @property
    def quartiles(self) -> tuple[float, float]:
        """(25th, 75th) percentile of the rates: the spread reported next to the median."""
        if len(self.rates) < 2:
            return self.median, self.median
        q1, _, q3 = statistics.quantiles(self.rates, n=4, method="inclusive")
        return q1, q3

    @property
    def median_seconds(self) -> float:
        return statistics.median(self.seconds)

    @property
    def cpu_median(self) -> float:
        """Items per second of all usable cores' time, from the median CPU seconds per call."""
        return self.items * usable_cores() / statistics.median(self.cpu_seconds)

    def summary(self) -> dict:
        q1, q3 = self.quartiles
        return {
            "items_per_call": self.items,
            "median_per_s": self.median,
            "sustained_per_s": self.sustained,
            "q1_per_s": q1,
            "q3_per_s": q3,
            "min_per_s": min(self.rates),
            "max_per_s": max(self.rates),
            "median_seconds": self.median_seconds,
            "seconds": self.seconds,
            "cpu_seconds": self.cpu_seconds,
            "cpu_median_per_s": self.cpu_median,
        }


def interleaved(
    contenders: Sequence[Contender],
    rounds: int,
    warmup: int = 1,
    max_seconds: float | None = None,
    min_rounds: int = 3,
    description: str = "timing",
) -> dict[str, Timing]:
    """Runs every contender `warmup` times untimed, then `rounds` timed rounds of one call each.

    `max_seconds` bounds the timed part: rounds stop once it is spent (after at least
    `min_rounds`), so the suite stays bounded on a slow or busy machine.
    """
    for contender in contenders:
        for _ in range(warmup):
            contender.run()
    timings = {c.name: Timing(c.name, c.items, []) for c in contenders}
    started = time.perf_counter()
    for round_index in tqdm(range(rounds), desc=description, leave=False):
        if max_seconds is not None and round_index >= min_rounds and time.perf_counter() - started > max_seconds:
            break
        for contender in contenders:
            cpu_begin, begin = time.process_time(), time.perf_counter()
            contender.run()
            timings[contender.name].seconds.append(time.perf_counter() - begin)
            timings[contender.name].cpu_seconds.append(time.process_time() - cpu_begin)
    return timings


def ratio(timings: dict[str, Timing], numerator: str, denominator: str) -> float:
    """Median rate of `numerator` over median rate of `denominator`."""
    return timings[numerator].median / timings[denominator].median


def rate_cell(timing: Timing, digits: int = 1) -> str:
    """`median (q1–q3)` for a Markdown table."""
    q1, q3 = timing.quartiles
    return f"{timing.median:,.{digits}f} ({q1:,.{digits}f}–{q3:,.{digits}f})"
