"""TensorFlow Serving's warm-up records, the file the export writes and the server replays.

A version folder may hold `assets.extra/tf_serving_warmup_requests`: a TFRecord file of `PredictionLog`
protos, each a `PredictRequest` (model name, signature, input tensors) that a server runs once before it
marks the version AVAILABLE (TF Serving's `--enable_model_warmup`, on by default), so that the first real
request does not pay for building the model's graph. TF Serving reads at most `MAX_WARMUP_RECORDS`.
`serving.export.warmup` says which requests `bert-tf export` writes, `serving.server.warmup` replays them.

Example:
    >>> requests = [WarmupRequest("serving_default", {"text": np.array([b"a fine film"], dtype=object)})]
    >>> path = write_warmup_requests(folder, "sst2", requests)  # doctest: +SKIP
    >>> read_warmup_requests(folder)[0].signature_name  # doctest: +SKIP
    'serving_default'
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_log_pb2

WARMUP_FILE = Path("assets.extra") / "tf_serving_warmup_requests"  # in the version folder
MAX_WARMUP_RECORDS = 1000  # TensorFlow Serving refuses a file of more


@dataclasses.dataclass(frozen=True)
class WarmupRequest:
    signature_name: str
    inputs: dict[str, np.ndarray]  # {input name: its values, a batch of rows}


def write_warmup_requests(version_dir: str | Path, model_name: str, requests: list[WarmupRequest]) -> Path:
    """Writes `requests` to `version_dir`'s warm-up file, each a PredictionLog of model `model_name`."""
    path = Path(version_dir) / WARMUP_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for request in requests:
            predict = predict_pb2.PredictRequest()
            predict.model_spec.name = model_name
            predict.model_spec.signature_name = request.signature_name
            for name, values in request.inputs.items():
                predict.inputs[name].CopyFrom(tf.make_tensor_proto(values))
            writer.write(prediction_log_pb2.PredictionLog(
                predict_log=prediction_log_pb2.PredictLog(request=predict)).SerializeToString())
    return path


def read_warmup_requests(version_dir: str | Path) -> list[WarmupRequest]:
    """The predict requests of `version_dir`'s warm-up file ([] without one); a file of more than
    `MAX_WARMUP_RECORDS`, or of other logs than predict requests, is a ValueError naming it, and so is a folder
    where the file belongs (TF Serving fails such a version's load: it cannot read it); a damaged file is
    TensorFlow's error (DataLossError: "corrupted record at 12") with the file's path in front."""
    path = Path(version_dir) / WARMUP_FILE
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not a file of warm-up requests (a TFRecord file of PredictionLog "
                         "protos): TF Serving does not load such a version either. Remove it, or put the file there.")
    if not path.is_file():
        return []
    requests = []
    for record in _records(path):
        log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        if log.WhichOneof("log_type") != "predict_log":
            raise ValueError(f"{path}: a {log.WhichOneof('log_type')} record; this server replays predict requests.")
        request = log.predict_log.request
        requests.append(WarmupRequest(request.model_spec.signature_name,
                                      {name: tf.make_ndarray(tensor) for name, tensor in request.inputs.items()}))
        if len(requests) > MAX_WARMUP_RECORDS:
            raise ValueError(f"{path} holds more than {MAX_WARMUP_RECORDS} warm-up records, TF Serving's limit.")
    return requests


def _records(path: Path):
    """The records of the TFRecord file `path`; TensorFlow's error on a damaged one names the file."""
    records = iter(tf.data.TFRecordDataset(str(path)))
    while True:
        try:
            yield next(records)
        except StopIteration:
            return
        except tf.errors.OpError as error:
            raise type(error)(error.node_def, error.op, f"{path}: {_without_graph_names(error.message)}") from None


def _without_graph_names(message: str) -> str:
    """TensorFlow's error message without the names of the graph that raised it, which say nothing about the file:
    "{{function_node __wrapped__IteratorGetNext...}} truncated record at 916' failed with Read less bytes than
    requested [Op:IteratorGetNext] name: " -> "truncated record at 916' failed with Read less bytes than requested".

    Example:
        >>> _without_graph_names("{{function_node __wrapped__X}} corrupted record at 0 [Op:X] name: ")
        'corrupted record at 0'
    """
    message = re.sub(r"\{\{function_node [^}]*\}\}", "", message)
    return re.sub(r"\s*\[Op:\w+\](\s*name:.*)?$", "", message, flags=re.S).strip()
