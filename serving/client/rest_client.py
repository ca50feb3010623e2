"""`RestClient`: TensorFlow Serving's REST API from Python (standard library `urllib`), numpy in and out.

Works with this package's server and with the official TensorFlow Serving. Strings are
sent as `{"b64": ...}` (exact for any bytes); outputs come back with the signature's
dtypes, which the client reads once per version from the model's metadata and keeps
(make a new client after changing a model's signatures). A request larger than
`max_batch_size` is sent in chunks (`serving.client.batching`). A failed request raises
`RestError` (HTTP status and the server's message); there are no retries. Proxy settings
in the environment are ignored: the server is reached directly. `version` is a version
number, a version label (a str), or None: the highest version the server serves.

Example:
    >>> client = RestClient("http://127.0.0.1:8501", model_name="demo")  # doctest: +SKIP
    >>> client.predict({"text": ["a fine day"]}, row_format=True)["label_names"]  # doctest: +SKIP
    array([[b'negative', b'neutral', b'positive']], dtype=object)
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Mapping, Sequence

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import types_pb2

from serving import rest_json
from serving.client.batching import as_arrays, batch_major_outputs, chunks, predict_in_batches


class RestError(RuntimeError):
    """A request the server refused: its HTTP `status` and `message`."""

    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class RestClient:
    """Client of model `model_name` at `base_url`; see the module docstring."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8501",
        *,
        model_name: str,
        signature_name: str = "serving_default",
        timeout_s: float = 10.0,
        max_batch_size: int | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.model_name = model_name
        self.signature_name = signature_name
        self.timeout_s = timeout_s
        self.max_batch_size = max_batch_size
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        self._signatures: dict[int | str | None, dict] = {}

    def predict(
        self, inputs: Mapping[str, Any], version: int | str | None = None, row_format: bool = False
    ) -> dict[str, np.ndarray]:
        """The signature's outputs for `inputs`, sent in the columnar ("inputs") or row ("instances") format."""
        arrays = as_arrays(inputs)
        signature = self._signature(version)
        dtypes = {
            name: tf.dtypes.as_dtype(types_pb2.DataType.Value(info["dtype"])) for name, info in signature["outputs"].items()
        }

        def predict_once(chunk):
            body = rest_json.encode_predict_request(chunk, self.signature_name, row_format)
            return rest_json.decode_predict_response(self._request(self._url(version, ":predict"), body), dtypes)

        return predict_in_batches(predict_once, arrays, self.max_batch_size, lambda: batch_major_outputs(signature))

    def classify(self, examples: Sequence[Mapping[str, Any]], version: int | str | None = None) -> list[list[tuple[str, float]]]:
        """For each example ({feature: value(s)}), its (label, score) per class."""
        results = []
        for chunk in chunks(examples, self.max_batch_size):  # no examples: one empty request, which the server refuses
            body = rest_json.encode_classify_request(chunk, self.signature_name)
            answer = self._request(self._url(version, ":classify"), body)
            results += [[(label, score) for label, score in classes] for classes in answer["results"]]
        return results

    def metadata(self, version: int | str | None = None) -> dict[str, dict]:
        """{signature name: SignatureDef as JSON}."""
        return self._request(self._url(version, "/metadata"))["metadata"]["signature_def"]["signature_def"]

    def status(self, version: int | str | None = None) -> dict[int, str]:
        """{version: state}, e.g. {2: "AVAILABLE", 1: "END"}."""
        return {int(entry["version"]): entry["state"] for entry in self._request(self._url(version))["model_version_status"]}

    def _signature(self, version: int | str | None) -> dict:
        if version not in self._signatures:
            signatures = self.metadata(version)
            if self.signature_name not in signatures:
                raise ValueError(
                    f"Model {self.model_name!r} has no signature {self.signature_name!r}: {sorted(signatures)}."
                )
            self._signatures[version] = signatures[self.signature_name]
        return self._signatures[version]

    def _url(self, version: int | str | None, suffix: str = "") -> str:
        url = f"{self.base_url}/v1/models/{urllib.parse.quote(self.model_name, safe='')}"
        if isinstance(version, str):
            url += f"/labels/{urllib.parse.quote(version, safe='')}"
        elif version is not None:
            url += f"/versions/{version}"
        return url + suffix

    def _request(self, url: str, body: dict | None = None) -> dict:
        """GET `url`, or POST `body` as JSON to it; the JSON answer, or RestError."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
        try:
            with self._opener.open(request, timeout=self.timeout_s) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            text = error.read().decode("utf-8", errors="replace")
            try:
                message = json.loads(text)["error"]
            except (ValueError, KeyError, TypeError):
                message = text
            raise RestError(error.code, message) from None
