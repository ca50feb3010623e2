"""Replaying a version's warm-up requests before it serves, as TensorFlow Serving's `--enable_model_warmup` does.

`bert-tf export` writes them (`serving.warmup_records`); each runs once, through the same checks and
request batching as a client's request, and its answer is dropped. A request that fails fails the load
(which is retried, as any failed load: `serving.server.model_manager`).

Example:
    >>> replay_warmup_requests(load_servable("/models/sst2/1", version=1))  # doctest: +SKIP
    6
"""

from __future__ import annotations

from serving.server.servable import Servable
from serving.warmup_records import read_warmup_requests


def replay_warmup_requests(servable: Servable) -> int:
    """Runs each warm-up request of `servable`'s version folder once; returns how many there were."""
    requests = read_warmup_requests(servable.path)
    for request in requests:
        servable.predict(request.signature_name, request.inputs)
    return len(requests)
