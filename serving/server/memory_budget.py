"""`MemoryBudget`: bytes that requests may use at once. A request takes its cost before it uses the memory, waiting
while the budget lacks it, and gives it back after; so the requests running at once never use more than the budget.

Example:
    >>> budget = MemoryBudget(100)
    >>> with budget.taken(60):
    ...     budget.used
    60
"""

from __future__ import annotations

import contextlib
import threading


class MemoryBudget:
    """`total` bytes shared by the requests running at once."""

    def __init__(self, total: int):
        self.total = total
        self.used = 0
        self._changed = threading.Condition()

    @contextlib.contextmanager
    def taken(self, cost: int):
        """Holds `cost` bytes of the budget (all of it, if the cost is more) for the `with` block, once they are free."""
        cost = min(cost, self.total)
        with self._changed:
            self._changed.wait_for(lambda: self.used + cost <= self.total)
            self.used += cost
        try:
            yield
        finally:
            with self._changed:
                self.used -= cost
                self._changed.notify_all()
