"""`ModelOptions`: how a server finds, loads and runs the versions of every model it serves, in one object that goes
from the command line (`serving.server.model_server`) through `ModelManager` to each model as it is.

Nothing here imports TensorFlow: `bert-tf serve --help` reads the defaults.

Example:
    >>> ModelOptions(poll_wait_s=0, max_batch_size=32).max_num_load_retries
    5
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from serving.protocol import DEFAULT_MAX_BATCH_SIZE

if TYPE_CHECKING:
    from serving.server.batching import BatchingParameters

# Text in one request: 16 requests at once (8 gRPC, 8 REST) hold 16 MiB of text, where 512 texts of 64 KiB (the row and
# per-text limits) made 32 MiB in one request and cost a BERT-base server 2 GB.
DEFAULT_MAX_REQUEST_TEXT_BYTES = 2**20
DEFAULT_MAX_NUM_LOAD_RETRIES = 5  # TensorFlow Serving's defaults
DEFAULT_LOAD_RETRY_INTERVAL_MICROS = 60_000_000


@dataclasses.dataclass(frozen=True)
class ModelOptions:
    """The settings of every model served, with TensorFlow Serving's flags (`serving.server.model_manager` says
    what they do):

    `poll_wait_s`: how often base paths are listed for new versions (≤ 0: at start only) [`--file_system_poll_wait_seconds`];
    `model_config_poll_wait_s`: how often the model config file is re-read (≤ 0: at start only)
    [`--model_config_file_poll_wait_seconds`];
    `max_num_load_retries`, `load_retry_interval_s`: a failed load is retried so many times, so far apart
    [`--max_num_load_retries`, `--load_retry_interval_micros`];
    `allow_version_labels_for_unavailable_models` [the same flag];
    `prefer_tflite_model`: a version's `model.tflite` is served when it has a SavedModel too [the same flag];
    `enable_model_warmup`: a version replays its warm-up requests before it serves (`serving.server.warmup`) [the same
    flag];
    `max_batch_size`, `max_request_text_bytes`: larger requests are INVALID_ARGUMENT (0: no limit)
    [`--max_batch_size`, `--max_request_text_bytes`];
    `batching`: `serving.server.batching.BatchingParameters`, or None: no request batching [`--enable_batching`].
    """

    poll_wait_s: float = 1.0
    model_config_poll_wait_s: float = 0.0
    max_num_load_retries: int = DEFAULT_MAX_NUM_LOAD_RETRIES
    load_retry_interval_s: float = DEFAULT_LOAD_RETRY_INTERVAL_MICROS / 1e6
    allow_version_labels_for_unavailable_models: bool = False
    prefer_tflite_model: bool = False
    enable_model_warmup: bool = True
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    max_request_text_bytes: int = DEFAULT_MAX_REQUEST_TEXT_BYTES
    batching: BatchingParameters | None = None

    def __post_init__(self):
        for name in ("max_num_load_retries", "max_batch_size", "max_request_text_bytes"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be ≥ 0, got {getattr(self, name)}.")
