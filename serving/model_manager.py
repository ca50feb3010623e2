"""`VersionedModel`: the versions of one model on disk, served by TensorFlow Serving's
"latest" policy, with a poller that picks up a new version without a restart.

Layout: `BASE/NAME/<version>/saved_model.pb`, `<version>` a decimal integer; other
entries (e.g. `.tmp-3`) are ignored. Write a new version atomically: save it to a
temporary directory beside the versions and rename that to its number.

Policy (TensorFlow Serving's default, `latest {num_versions: 1}`):
- Only the highest version on disk is loaded and served. A request that names it (or no
  version) is served; one that names any other version answers NOT_FOUND, even if that
  version is still on disk: older versions are not loaded on demand.
- Every `poll_wait_s` seconds the base path is scanned again. A new highest version is
  loaded while the current one keeps serving, then takes over; the old one is unloaded
  (state END). If the highest version is deleted, the next highest one is loaded; if
  none is left, the model is unloaded, as TensorFlow Serving does.
- A version that fails to load is reported (state END with the error) and the previous
  version keeps serving; it is tried again when its `saved_model.pb` changes.

Example:
    >>> model = VersionedModel("demo", "/tmp/models/demo", poll_wait_s=1.0)  # doctest: +SKIP
    >>> model.start()                                                        # doctest: +SKIP
    >>> model.servable("demo").version                                       # doctest: +SKIP
    2
    >>> model.stop()                                                         # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from pathlib import Path

import grpc
import tensorflow as tf
from tensorflow_serving.apis import get_model_status_pb2

from serving.errors import ServingError
from serving.servable import SAVED_MODEL_FILE, Servable

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class VersionState:
    """What `GetModelStatus` reports for one version: a `ModelVersionStatus.State` name and any load error."""

    state: str
    error_code: grpc.StatusCode = grpc.StatusCode.OK
    error_message: str = ""


class VersionedModel:
    """Model `name` with its versions under `base_path`; `max_batch_size` is passed to each `Servable`.

    `poll_wait_s` ≤ 0 scans the base path once, at `start()`, and never again.
    """

    def __init__(self, name: str, base_path: str | Path, poll_wait_s: float = 1.0, max_batch_size: int = 0):
        self.name = name
        self.base_path = Path(base_path).resolve()
        self.poll_wait_s = poll_wait_s
        self.max_batch_size = max_batch_size
        self._servable: Servable | None = None
        self._states: dict[int, VersionState] = {}
        self._failed: dict[int, float] = {}  # version -> mtime of the saved_model.pb that failed to load
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._poller: threading.Thread | None = None

    def start(self) -> None:
        """Loads the highest version now, then keeps polling in a background thread."""
        if not self.base_path.is_dir():
            raise FileNotFoundError(
                f"Model base path not found: {self.base_path} (expected {self.base_path}/<version>/{SAVED_MODEL_FILE})."
            )
        self.poll()
        if self._servable is None:
            logger.warning("No version of model %r under %s yet; waiting for one.", self.name, self.base_path)
        if self.poll_wait_s > 0:
            self._stopping.clear()
            self._poller = threading.Thread(target=self._poll_forever, name=f"poll-{self.name}", daemon=True)
            self._poller.start()

    def stop(self) -> None:
        """Stops the poller (the loaded version stays in memory until this object goes)."""
        self._stopping.set()
        if self._poller is not None:
            self._poller.join()
            self._poller = None

    def poll(self) -> None:
        """Scans the base path once and loads or unloads so that the highest version is served."""
        on_disk = self._versions_on_disk()
        latest = max(on_disk, default=None)
        current = self._servable.version if self._servable else None
        if latest == current or (latest is not None and self._failed.get(latest) == on_disk[latest]):
            return
        if latest is None:
            with self._lock:
                self._servable = None
                self._states[current] = VersionState("END")
            logger.warning("No version of model %r left under %s: unloaded version %d.", self.name, self.base_path, current)
            return
        self._load(latest, on_disk[latest])

    def servable(self, model_name: str, version: int | None = None) -> Servable:
        """The servable for a request's model name and version (None: latest); NOT_FOUND otherwise."""
        servable = self._servable
        if model_name == self.name and servable is not None and version in (None, servable.version):
            return servable
        spec = f"Latest({model_name})" if version is None else f"Specific({model_name}, {version})"
        hint = f" This server serves model {self.name!r}"
        hint += f", version {servable.version} only (the latest)." if servable else ", which has no version loaded yet."
        raise ServingError.not_found(f"Servable not found for request: {spec}.{hint}")

    def status(self, model_name: str, version: int | None = None) -> get_model_status_pb2.GetModelStatusResponse:
        """`GetModelStatus`'s answer: every version seen (newest first), or only `version`."""
        with self._lock:
            states = dict(self._states)
        if model_name != self.name or not states:
            raise ServingError.not_found(f"Could not find any versions of model {model_name}")
        if version is not None and version not in states:
            raise ServingError.not_found(f"Could not find version {version} of model {model_name}")
        response = get_model_status_pb2.GetModelStatusResponse()
        for number in sorted(states, reverse=True):
            if version in (None, number):
                state = states[number]
                entry = response.model_version_status.add(
                    version=number, state=get_model_status_pb2.ModelVersionStatus.State.Value(state.state)
                )
                entry.status.error_code = state.error_code.value[0]
                entry.status.error_message = state.error_message
        return response

    def _poll_forever(self) -> None:
        while not self._stopping.wait(self.poll_wait_s):
            try:
                self.poll()
            except Exception:  # keep polling: a transient file-system error must not stop new versions
                logger.exception("Polling %s for model %r failed.", self.base_path, self.name)

    def _versions_on_disk(self) -> dict[int, float]:
        """{version: mtime of its saved_model.pb} for every complete version directory."""
        found = {}
        for child in self.base_path.iterdir():
            if child.name.isascii() and child.name.isdigit():
                try:
                    found[int(child.name)] = (child / SAVED_MODEL_FILE).stat().st_mtime
                except OSError:  # not (or no longer) a complete SavedModel
                    continue
        return found

    def _load(self, version: int, mtime: float) -> None:
        path = self.base_path / str(version)
        with self._lock:
            self._states[version] = VersionState("LOADING")
        logger.info("Loading version %d of model %r from %s.", version, self.name, path)
        try:
            servable = Servable(path, version, self.max_batch_size)
        except Exception as error:  # any load failure is reported in the status; the old version keeps serving
            failed = ServingError.from_tf_error(error) if isinstance(error, tf.errors.OpError) else None
            code = failed.code if failed else grpc.StatusCode.UNKNOWN
            with self._lock:
                self._failed[version] = mtime
                self._states[version] = VersionState("END", code, f"{type(error).__name__}: {error}")
            logger.error("Loading version %d of model %r from %s failed: %s", version, self.name, path, error)
            return
        with self._lock:
            self._failed.pop(version, None)
            previous, self._servable = self._servable, servable
            self._states[version] = VersionState("AVAILABLE")
            if previous is not None:
                self._states[previous.version] = VersionState("END")
        unloaded = f"; unloaded version {previous.version}" if previous is not None else ""
        logger.info("Serving version %d of model %r%s.", version, self.name, unloaded)
