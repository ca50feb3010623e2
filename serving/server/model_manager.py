"""`ModelManager`: the models a server serves and, for each (`VersionedModel`), the versions it
loads from disk, managed as TensorFlow Serving manages them.

Layout: `BASE/NAME/<version>/saved_model.pb` (or `model.tflite`: `serving.server.servable`),
`<version>` a decimal integer; other entries (e.g. `.tmp-3`) are ignored, and so is a version
directory until its `saved_model.pb` or `model.tflite` is there. Write a new version atomically
if you can: save it to a temporary directory beside the versions and rename that to its number
(`bert-tf export` does).

Versions (`serving.server.model_options.ModelOptions`' fields, TensorFlow Serving's flags in brackets):
- The base path is listed at start and every `poll_wait_s` seconds
  [`--file_system_poll_wait_seconds`; ≤ 0: at start only]. The model's version policy picks
  the versions to serve among those on disk: the N highest (`latest`, N = 1 by default),
  `specific` ones, or `all` (`serving.server.model_config`).
- A picked version is loaded (state LOADING) while the others keep serving, replays its
  warm-up requests (`enable_model_warmup` [the same flag, on by default]: `serving.server.warmup`),
  then serves (AVAILABLE). A request that names no version gets the highest one serving.
- Versions no longer picked (replaced, or deleted from disk) are unloaded (END) once a
  picked version serves, or at once if none is picked (e.g. every version was deleted).
  Until then the highest of them keeps serving, so a new version that fails to load does
  not take the model down (TensorFlow Serving's availability-preserving policy).
- A failed load is retried `max_num_load_retries` times [`--max_num_load_retries`, 5],
  `load_retry_interval_s` apart [`--load_retry_interval_micros`, 1 minute]; the state stays LOADING
  meanwhile. So a version copied in file by file (`saved_model.pb` before `variables/`) is
  served at the first retry after it is complete. After the last retry the state is END
  with the error; the version is tried again only if its directory goes and comes back.
- Version labels (`version_labels` in the config) name versions; a request may name a
  label instead of a version (an unknown label is INVALID_ARGUMENT). A label must point at
  a version that serves when the config is applied, unless
  `allow_version_labels_for_unavailable_models` [the same flag], which lets a new label (or
  an unchanged one) point at a version not loaded yet.
- With a model config file, the file is re-read every `model_config_poll_wait_s` seconds
  [`--model_config_file_poll_wait_seconds`; 0: read once]: new models are loaded, removed
  ones unloaded, changed policies and labels applied. A file that does not parse, or a
  label that points at a version that does not serve, is logged and the previous config
  (its labels) kept; the file is tried again at the next poll. An empty file (an editor
  saving, a `>` redirection) changes nothing, as in TF Serving; a model whose base path
  does not exist yet is waited for while the others serve.

Differences from TensorFlow Serving: it checks labels before it loads the models, so at
start it refuses every label unless `--allow_version_labels_for_unavailable_models`; this
server checks them after the first load. Its start waits for every model's first version
(through the retries); this server starts at once and goes on loading in the background.

Example:
    >>> manager = ModelManager([ModelConfig("demo", Path("/tmp/models/demo"))])  # doctest: +SKIP
    >>> manager.start()                                                        # doctest: +SKIP
    >>> manager.servable("demo").version                                       # doctest: +SKIP
    2
    >>> manager.stop()                                                         # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from pathlib import Path
from typing import Sequence

import grpc
import tensorflow as tf
from tensorflow_serving.apis import get_model_status_pb2

from bert_tf.cpu_features import bfloat16_warning
from serving.protocol import SAVED_MODEL_FILE, TFLITE_MODEL_FILE
from serving.server.errors import ServingError
from serving.server.model_config import ModelConfig, VersionPolicy, beside_config, read_model_config_file
from serving.server.model_options import ModelOptions
from serving.server.servable import RequestLimits, Servable, holds_model, load_servable
from serving.server.warmup import replay_warmup_requests

logger = logging.getLogger(__name__)

BERT_TF_METADATA_FILE = "bert_tf.json"  # bert_tf.save_pretrained's (not imported: it would load Keras)


@dataclasses.dataclass(frozen=True)
class VersionState:
    """What `GetModelStatus` reports for one version: a `ModelVersionStatus.State` name and any load error."""

    state: str
    error_code: grpc.StatusCode = grpc.StatusCode.OK
    error_message: str = ""


@dataclasses.dataclass(frozen=True)
class _Failure:
    attempts: int  # failed loads so far
    retry_at: float  # time.monotonic() of the next try
    end: VersionState  # the state once it is given up: END with the last error


def check_base_path(base_path: Path, name: str, missing_ok: bool = False) -> None:
    """Raises FileNotFoundError or ValueError, with what to do, when `base_path` cannot hold versions of a model.

    Catches the usual mistakes: a version folder (holding saved_model.pb), a bert-tf model
    directory (not exported), the folder holding the model folders (BASE instead of BASE/NAME).
    `missing_ok`: a base path that does not exist yet is fine (its versions are waited for).
    """
    if not base_path.is_dir():
        if missing_ok and not base_path.exists():
            return
        raise FileNotFoundError(
            f"Model base path not found: {base_path} (expected {base_path}/<version>/{SAVED_MODEL_FILE})."
        )
    if holds_model(base_path):
        held = SAVED_MODEL_FILE if (base_path / SAVED_MODEL_FILE).is_file() else TFLITE_MODEL_FILE
        raise ValueError(
            f"{base_path} is a version folder (it holds {held}): pass its parent, {base_path.parent}, "
            "as the model's base path."
        )
    if (base_path / BERT_TF_METADATA_FILE).is_file():
        raise ValueError(
            f"{base_path} is a bert-tf model directory, not a SavedModel: export it first with "
            f"bert-tf export --model {base_path} --out BASE --name {name}, then serve BASE/{name}."
        )
    if not _versions_in(base_path):
        models = sorted(child.name for child in base_path.iterdir() if child.is_dir() and _versions_in(child))
        if models:
            raise ValueError(
                f"{base_path} holds model folders ({', '.join(models)}), not versions: pass one of them, "
                f"e.g. {base_path / models[0]}, as the model's base path."
            )


def _versions_in(base_path: Path) -> set[int]:
    """The complete version directories (`servable.holds_model`) under `base_path` (none if it is gone)."""
    try:
        children = list(base_path.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return set()
    return {
        int(child.name) for child in children
        if child.name.isascii() and child.name.isdigit() and holds_model(child)
    }


def _not_version_folders(base_path: Path) -> dict[Path, str]:
    """Entries of `base_path` named like versions (digits) that cannot be version folders, with what each is."""
    try:
        children = [child for child in base_path.iterdir() if child.name.isascii() and child.name.isdigit()]
    except (FileNotFoundError, NotADirectoryError):
        return {}
    odd = {}
    for child in children:
        if child.is_symlink() and not child.exists():
            try:
                child.resolve(strict=True)
                odd[child] = "a broken symlink"
            except RuntimeError:  # Python's "Symlink loop"
                odd[child] = "a symlink loop"
            except OSError as error:
                odd[child] = "a symlink loop" if "loop" in str(error).lower() else "a broken symlink"
        elif child.is_fifo():
            odd[child] = "a FIFO"
        elif not child.is_dir():
            odd[child] = "a file"
    return odd


class VersionedModel:
    """Model `config.name`: its versions under `config.base_path`, served by `config.policy` and `options` (see the
    module docstring). `labels` ({label: version}) is set by `ModelManager` once checked.
    """

    def __init__(self, config: ModelConfig, options: ModelOptions = ModelOptions()):
        self.name = config.name
        self.base_path = config.base_path.resolve()
        self.policy = config.policy
        self.labels: dict[str, int] = {}
        self.options = options
        self._limits = RequestLimits(options.max_batch_size, options.max_request_text_bytes)
        self._servables: dict[int, Servable] = {}  # replaced, never changed: requests read it without the lock
        self._states: dict[int, VersionState] = {}
        self._failures: dict[int, _Failure] = {}
        self._on_disk: set[int] = set()
        self._reported_entries: set[Path] = set()  # odd entries of the base path already logged
        self._lock = threading.Lock()  # guards _servables and _states
        self._polling = threading.RLock()  # one poll at a time
        self._stopping = threading.Event()
        self._wakeup = threading.Event()
        self._poller: threading.Thread | None = None

    def start(self) -> None:
        """Checks the base path (`check_base_path`; one that does not exist yet is waited for), loads what the
        policy picks, then polls in the background."""
        check_base_path(self.base_path, self.name, missing_ok=True)
        self.poll()
        if not self._on_disk:
            waits = "waiting for" if self.options.poll_wait_s > 0 else "polling is off, so restart the server after writing"
            logger.warning(
                "No version of model %r in %s yet: %s %s/<version>/%s or %s (bert-tf export --model DIR --out %s "
                "--name %s writes one).",
                self.name, self.base_path, waits, self.base_path, SAVED_MODEL_FILE, TFLITE_MODEL_FILE,
                self.base_path.parent, self.base_path.name,
            )
        self._stopping.clear()
        self._poller = threading.Thread(target=self._poll_forever, name=f"poll-{self.name}", daemon=True)
        self._poller.start()

    def stop(self) -> None:
        """Stops polling and unloads every version (state END)."""
        self._stopping.set()
        self._wakeup.set()
        if self._poller is not None:
            self._poller.join()
            self._poller = None
        with self._polling, self._lock:
            for version, servable in self._servables.items():
                self._states[version] = VersionState("END")
                servable.close()
            self._servables = {}

    def poll(self) -> None:
        """Lists the base path, then loads and unloads versions as the policy and the retries say."""
        with self._polling:
            self._on_disk = _versions_in(self.base_path)
            for entry, what in _not_version_folders(self.base_path).items():
                if entry not in self._reported_entries:
                    logger.warning("%s is %s, not a version folder: skipped (model %r).", entry, what, self.name)
                    self._reported_entries.add(entry)
            self._reconcile()
        self._wake_poller()

    def _wake_poller(self) -> None:
        """Lets the poller see a retry time that a poll from another thread has set."""
        if threading.current_thread() is not self._poller:
            self._wakeup.set()

    def set_policy(self, policy: VersionPolicy) -> None:
        """Serves by `policy` from now on (loads and unloads at once)."""
        with self._polling:
            changed, self.policy = policy != self.policy, policy
            if changed:
                self._reconcile()
        self._wake_poller()

    def describe(self) -> str:
        """The versions served, highest first, each with how it computes: "version 3 (int8 TFLite), 1 (...)"."""
        servables = self._servables
        if not servables:
            return "no version"
        return "version " + ", ".join(f"{number} ({servables[number].describe()})"
                                      for number in sorted(servables, reverse=True))

    def is_available(self, version: int) -> bool:
        return version in self._servables

    def servable(self, version: int | None = None, label: str | None = None) -> Servable:
        """The servable for a request: `version`, the version `label` names, or (neither) the highest; else NOT_FOUND."""
        version = self._resolve(version, label)
        servables = self._servables
        if version is None and servables:
            return servables[max(servables)]
        if version in servables:
            return servables[version]
        spec = f"Latest({self.name})" if version is None else f"Specific({self.name}, {version})"
        served = "no version yet" if not servables else (
            f"version{'s' * (len(servables) > 1)} {', '.join(map(str, sorted(servables)))}")
        raise ServingError.not_found(
            f"Servable not found for request: {spec}. Model {self.name!r} serves {served} "
            f"(version policy: {self.policy.describe()})."
        )

    def status(
        self, version: int | None = None, label: str | None = None
    ) -> get_model_status_pb2.GetModelStatusResponse:
        """`GetModelStatus`'s answer: every version seen (newest first), or only the one asked for."""
        version = self._resolve(version, label)
        with self._lock:
            states = dict(self._states)
        if not states:
            raise ServingError.not_found(f"Could not find any versions of model {self.name}")
        if version is not None and version not in states:
            raise ServingError.not_found(f"Could not find version {version} of model {self.name}")
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

    def _resolve(self, version: int | None, label: str | None) -> int | None:
        if label is None:
            return version
        labels = self.labels
        if label not in labels:
            raise ServingError.invalid_argument(f"Unrecognized servable version label: {label}")
        return labels[label]

    def _poll_forever(self) -> None:
        poll_wait_s = self.options.poll_wait_s
        next_poll = time.monotonic() + poll_wait_s if poll_wait_s > 0 else float("inf")
        while not self._stopping.is_set():
            wake_at = min([next_poll] + [failure.retry_at for failure in self._retrying()])
            self._wakeup.wait(None if wake_at == float("inf") else max(wake_at - time.monotonic(), 0))
            self._wakeup.clear()
            if self._stopping.is_set():
                return
            try:
                if time.monotonic() >= next_poll:
                    next_poll = time.monotonic() + poll_wait_s
                    self.poll()
                else:
                    with self._polling:
                        self._reconcile()
            except Exception:  # keep polling: a transient file-system error must not stop new versions
                logger.exception("Polling %s for model %r failed.", self.base_path, self.name)

    def _retrying(self) -> list[_Failure]:
        with self._polling:
            return [failure for failure in self._failures.values()
                    if failure.attempts <= self.options.max_num_load_retries]

    def _reconcile(self) -> None:
        """Loads the picked versions that are due, then unloads the others that may go. Called holding `_polling`."""
        picked = self.policy.select(self._on_disk)
        for version in [version for version in self._failures if version not in picked]:
            failure = self._failures.pop(version)  # no longer wanted (or gone): tried afresh if picked again
            if self._states.get(version, failure.end).state == "LOADING":
                self._set_state(version, failure.end)
            if version not in self._on_disk:
                logger.info("Version %d of model %r is gone: it is loaded afresh if it comes back.", version, self.name)
        now = time.monotonic()
        for version in sorted(picked - set(self._servables), reverse=True):
            failure = self._failures.get(version)
            if failure is None or (failure.attempts <= self.options.max_num_load_retries and now >= failure.retry_at):
                self._load(version, failure)
        self._unload_unpicked(picked)

    def _load(self, version: int, failure: _Failure | None) -> None:
        path = self.base_path / str(version)
        self._set_state(version, VersionState("LOADING"))
        logger.info("Loading version %d of model %r from %s.", version, self.name, path)
        try:
            servable = self._loaded(path, version)
        except Exception as error:  # any load failure is retried, then reported in the status
            self._failed(version, error, attempts=1 + (failure.attempts if failure else 0))
            return
        self._failures.pop(version, None)
        with self._lock:
            self._servables = {**self._servables, version: servable}
            self._states[version] = VersionState("AVAILABLE")
        logger.info("Serving version %d of model %r (%s).", version, self.name, servable.describe())
        if servable.precision == "bf16" and (warning := bfloat16_warning()):
            logger.warning("Model %r, version %d: %s", self.name, version, warning)
        logger.info("Model %r serves %s.", self.name, self.describe())

    def _loaded(self, path: Path, version: int) -> Servable:
        """Version `version`, loaded from `path` and warmed up (`enable_model_warmup`); closed if the warm-up fails."""
        servable = load_servable(path, version, self._limits, self.options.prefer_tflite_model, self.options.batching)
        if not self.options.enable_model_warmup:
            return servable
        started = time.monotonic()
        try:
            count = replay_warmup_requests(servable)
        except BaseException:
            servable.close()
            raise
        if count:
            logger.info("Warmed up version %d of model %r with %d requests in %.1f s.", version, self.name, count,
                        time.monotonic() - started)
        return servable

    def _failed(self, version: int, error: Exception, attempts: int) -> None:
        tf_error = ServingError.from_tf_error(error) if isinstance(error, tf.errors.OpError) else None
        end = VersionState("END", tf_error.code if tf_error else grpc.StatusCode.UNKNOWN, f"{type(error).__name__}: {error}")
        interval = max(self.options.load_retry_interval_s, 0.0)
        self._failures[version] = _Failure(attempts, time.monotonic() + interval, end)
        if attempts <= self.options.max_num_load_retries:
            logger.warning(
                "Loading version %d of model %r failed (retry %d of %d in %g s): %s",
                version, self.name, attempts, self.options.max_num_load_retries, interval, end.error_message,
            )
        else:
            logger.error(
                "Loading version %d of model %r failed %d time(s); giving up: %s",
                version, self.name, attempts, end.error_message,
            )
            self._set_state(version, end)

    def _unload_unpicked(self, picked: set[int]) -> None:
        servables = self._servables
        unpicked = sorted(set(servables) - picked)
        if picked and not picked & set(servables):
            unpicked = unpicked[:-1]  # nothing picked serves yet: the highest of the others keeps serving
        if not unpicked:
            return
        with self._lock:
            self._servables = {number: servable for number, servable in servables.items() if number not in unpicked}
            for version in unpicked:
                self._states[version] = VersionState("END")
                servables[version].close()
        logger.info("Unloaded version %s of model %r.", ", ".join(map(str, unpicked)), self.name)
        if self._servables:
            logger.info("Model %r serves %s.", self.name, self.describe())
        else:
            why = f"its policy ({self.policy.describe()}) picks none of those" if self._on_disk else "none is left"
            logger.warning("Model %r serves no version now: %s in %s.", self.name, why, self.base_path)

    def _set_state(self, version: int, state: VersionState) -> None:
        with self._lock:
            self._states[version] = state


class ModelManager:
    """The models of `configs`, or of the model config file `config_file` (re-read every
    `options.model_config_poll_wait_s`), each a `VersionedModel` with `options`."""

    def __init__(
        self,
        configs: Sequence[ModelConfig] = (),
        *,
        config_file: str | Path | None = None,
        options: ModelOptions = ModelOptions(),
    ):
        if bool(configs) == (config_file is not None):
            raise ValueError("Give either the models' configs or a model config file.")
        self.config_file = Path(config_file) if config_file is not None else None
        self.options = options
        self._configs = list(configs)
        self._models: dict[str, VersionedModel] = {}
        self._applying = threading.Lock()
        self._last_config_error = ""
        self._stopping = threading.Event()
        self._config_poller: threading.Thread | None = None

    @property
    def names(self) -> list[str]:
        return list(self._models)

    def start(self) -> None:
        """Loads every model; raises FileNotFoundError or ValueError for a bad config, base path or label."""
        if self.config_file is not None:
            self._configs = read_model_config_file(self.config_file) or []
            if not self._configs:
                logger.warning("%s lists no model yet: serving none until it does.", self.config_file)
        try:
            self._apply(self._configs)
        except BaseException:
            self.stop()
            raise
        if self.config_file is not None and self.options.model_config_poll_wait_s > 0:
            self._stopping.clear()
            self._config_poller = threading.Thread(target=self._poll_config_forever, name="poll-config", daemon=True)
            self._config_poller.start()

    def stop(self) -> None:
        """Stops polling and unloads every model."""
        self._stopping.set()
        if self._config_poller is not None:
            self._config_poller.join()
            self._config_poller = None
        for model in self._models.values():
            model.stop()

    def reload_config(self) -> None:
        """Re-reads the config file and applies it if it changed; a bad one is logged (once) and the old one kept."""
        try:
            configs = read_model_config_file(self.config_file)
            if configs is None:
                message = (f"{self.config_file} is empty: TF Serving takes no action on an empty config, nor does this "
                           f"server (still serving {', '.join(self._models) or 'no model'}).")
                if message != self._last_config_error:
                    logger.warning(message)
                    self._last_config_error = message
                return
            if configs != self._configs:
                self._apply(configs)
                self._configs = configs
                logger.info("Applied %s: serving %s.", self.config_file, ", ".join(self._models))
            self._last_config_error = ""
        except (OSError, ValueError) as error:
            if str(error) != self._last_config_error:
                logger.error("Model config not applied (tried again at the next poll): %s", error)
                self._last_config_error = str(error)

    def servable(self, name: str, version: int | None = None, label: str | None = None) -> Servable:
        """The servable for a request's model name and version or label (neither: the highest); NOT_FOUND otherwise."""
        model = self._models.get(name)
        if model is None:
            spec = f"Latest({name})" if version is None else f"Specific({name}, {version})"
            raise ServingError.not_found(
                f"Servable not found for request: {spec}. This server serves {_names(self._models)}."
            )
        return model.servable(version, label)

    def describe(self) -> str:
        """Every model with the versions it serves: "model 'ner': version 3 (int8 TFLite), ...; model 'x': ..."."""
        return "; ".join(f"model {name!r}: {model.describe()}" for name, model in self._models.items()) or "no model"

    def status(
        self, name: str, version: int | None = None, label: str | None = None
    ) -> get_model_status_pb2.GetModelStatusResponse:
        """`GetModelStatus`'s answer for model `name` (see `VersionedModel.status`)."""
        model = self._models.get(name)
        if model is None:
            raise ServingError.not_found(f"Could not find any versions of model {name}")
        return model.status(version, label)

    def _poll_config_forever(self) -> None:
        while not self._stopping.wait(self.options.model_config_poll_wait_s):
            self.reload_config()

    def _apply(self, configs: Sequence[ModelConfig]) -> None:
        """Starts new models, updates kept ones, stops removed ones, then checks and sets the labels."""
        with self._applying:
            current = self._models
            kept = {config.name for config in configs
                    if config.name in current and current[config.name].base_path == config.base_path.resolve()}
            models = {}
            try:
                for config in configs:
                    if config.name not in kept:
                        self._check_base_path(config)  # all of them before any loads
                for config in configs:
                    if config.name not in kept:
                        models[config.name] = VersionedModel(config, self.options)
                        models[config.name].start()
            except BaseException:
                for model in models.values():
                    model.stop()
                raise
            for config in configs:
                if config.name in kept:
                    models[config.name] = current[config.name]
                    models[config.name].set_policy(config.policy)
            models = {config.name: models[config.name] for config in configs}  # in the config's order
            try:
                labels = {config.name: self._checked_labels(config, models[config.name]) for config in configs}
                for name, model in models.items():
                    model.labels = labels[name]
            finally:  # the models change even if the labels do not
                for name, model in current.items():
                    if models.get(name) is not model:
                        model.stop()
                        logger.info("Stopped serving model %r.", name)
                self._models = models

    def _check_base_path(self, config: ModelConfig) -> None:
        """Refuses a base path that cannot hold versions; a config file's base path that does not exist yet is
        waited for, as TF Serving does (with a warning saying where to export), the others serving meanwhile."""
        try:
            check_base_path(config.base_path, config.name)
        except FileNotFoundError:
            if self.config_file is None:
                raise
            here = beside_config(config.base_path, self.config_file.resolve().parent)
            logger.warning(
                "Model %r of %s: its base path %s does not exist yet (nor %s beside the config file): waiting for "
                "it; export it with bert-tf export --model DIR --out %s --name %s.",
                config.name, self.config_file, config.base_path, here, config.base_path.parent, config.base_path.name)

    def _checked_labels(self, config: ModelConfig, model: VersionedModel) -> dict[str, int]:
        for label, version in config.labels:
            if model.is_available(version):
                continue
            if self.options.allow_version_labels_for_unavailable_models and model.labels.get(label, version) == version:
                continue
            raise ValueError(
                f"Request to assign label {label!r} to version {version} of model {config.name}, which is not "
                "currently available for inference (--allow_version_labels_for_unavailable_models allows a new "
                "label on a version not loaded yet)."
            )
        return dict(config.labels)


def _names(models) -> str:
    return ("model " if len(models) == 1 else "models ") + ", ".join(repr(name) for name in models) if models else "no model"
