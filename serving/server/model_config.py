"""`read_model_config_file`: TensorFlow Serving's `--model_config_file`, the models a server serves.

The file is a text-format `ModelServerConfig` (tensorflow_serving/config/model_server_config.proto),
read with the same proto as the official server:

    model_config_list {
      config {
        name: "sst2"  base_path: "/models/sst2"  model_platform: "tensorflow"
        model_version_policy { latest { num_versions: 2 } }   # or specific { versions: 1 versions: 3 }, or all {}
        version_labels { key: "stable" value: 1 }
      }
    }

Checked as TensorFlow Serving checks it: a model_config_list (not a custom config), each
model named once, a base path that is absolute, platform "tensorflow" (`model_type:
TENSORFLOW` is the deprecated spelling). No policy means `latest { num_versions: 1 }`; a
`num_versions` of 0 means 1. `logging_config` is ignored.

One addition for containers: an absolute base path that does not exist on this machine,
but does under the config file's folder, is read from there. `serving/models.config`
names `/models/sst2`, the path inside the official image (docker-compose.yml mounts
`serving/models` at `/models`), and `bert-tf serve --model_config_file serving/models.config`
reads it as `serving/models/sst2`.

Example:
    >>> [config] = parse_model_config('model_config_list { config { name: "a" base_path: "/m/a" '
    ...                               'model_platform: "tensorflow" } }')
    >>> config.name, config.base_path, config.policy
    ('a', PosixPath('/m/a'), VersionPolicy(kind='latest', num_versions=1, versions=frozenset()))
    >>> config.policy.select([1, 2, 3])
    {3}
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Iterable

from google.protobuf import text_format
from tensorflow_serving.config import model_server_config_pb2

logger = logging.getLogger(__name__)

PLATFORM = "tensorflow"


@dataclasses.dataclass(frozen=True)
class VersionPolicy:
    """`model_version_policy`: the `num_versions` highest versions ("latest"), `versions` ("specific"), or "all"."""

    kind: str = "latest"
    num_versions: int = 1
    versions: frozenset[int] = frozenset()

    def select(self, on_disk: Iterable[int]) -> set[int]:
        """The versions of `on_disk` this policy serves."""
        on_disk = set(on_disk)
        if self.kind == "all":
            return on_disk
        if self.kind == "specific":
            return on_disk & self.versions
        return set(sorted(on_disk)[-self.num_versions:])

    def describe(self) -> str:
        if self.kind == "specific":
            return f"specific {sorted(self.versions)}"
        return f"latest {self.num_versions}" if self.kind == "latest" else "all"


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """One model: its `name` in requests, `base_path` holding `<version>/saved_model.pb`, policy and labels."""

    name: str
    base_path: Path
    policy: VersionPolicy = VersionPolicy()
    labels: tuple[tuple[str, int], ...] = ()  # (label, version), sorted by label


def check_model_name(name: str) -> None:
    """ValueError unless `name` can be a model's name in a request (and in a REST path)."""
    if not name or "/" in name or ":" in name:
        raise ValueError(f"Invalid model name {name!r}: it must be non-empty, without '/' or ':'.")


def read_model_config_file(path: str | Path) -> list[ModelConfig] | None:
    """The models of the config file `path`; ValueError (naming the file) if it is not a valid config.

    None for an empty config (no `model_config_list` at all: an empty file, or comments only), on which
    TensorFlow Serving takes no action; `model_config_list {}` is a config, one that serves no model.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"--model_config_file not found: {path}") from None
    try:
        return parse_model_config(text, path.resolve().parent)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def parse_model_config(text: str, config_dir: Path | None = None) -> list[ModelConfig] | None:
    """The models of a text-format `ModelServerConfig` (None if it sets no config); `config_dir` is where a missing
    absolute base path is looked for."""
    server_config = model_server_config_pb2.ModelServerConfig()
    try:
        text_format.Parse(text, server_config)
    except text_format.ParseError as error:
        raise ValueError(f"not a text-format ModelServerConfig: {error}") from None
    if server_config.WhichOneof("config") is None:
        return None
    if server_config.WhichOneof("config") == "custom_model_config":
        raise ValueError("custom_model_config is not supported: list the models in model_config_list.")
    configs, names = [], set()
    for model in server_config.model_config_list.config:
        check_model_name(model.name)
        if model.name in names:
            raise ValueError(f"Illegal to list model {model.name} multiple times in config list.")
        names.add(model.name)
        platform = model.model_platform or (PLATFORM if model.model_type == model_server_config_pb2.TENSORFLOW else "")
        if platform != PLATFORM:
            raise ValueError(f"Model {model.name}: model_platform must be {PLATFORM!r}, got {platform!r}.")
        if not Path(model.base_path).is_absolute():
            raise ValueError(
                f"Expected model {model.name} to have an absolute path; got base_path()={model.base_path!r} "
                "(TensorFlow Serving refuses relative base paths)."
            )
        configs.append(ModelConfig(
            name=model.name,
            base_path=_local_base_path(Path(model.base_path), config_dir),
            policy=_version_policy(model.model_version_policy),
            labels=tuple(sorted(model.version_labels.items())),
        ))
    return configs


def _version_policy(proto) -> VersionPolicy:
    kind = proto.WhichOneof("policy_choice") or "latest"
    if kind == "specific":
        if not proto.specific.versions:
            raise ValueError("model_version_policy specific {} lists no versions.")
        return VersionPolicy("specific", versions=frozenset(proto.specific.versions))
    return VersionPolicy(kind, num_versions=max(proto.latest.num_versions, 1) if kind == "latest" else 1)


def beside_config(base_path: Path, config_dir: Path) -> Path:
    """Where the absolute `base_path` is looked for beside the config file: `/models/sst2` -> `config_dir/models/sst2`."""
    return config_dir / base_path.relative_to(base_path.anchor)


def _local_base_path(base_path: Path, config_dir: Path | None) -> Path:
    """`base_path`, or `beside_config(base_path)` when only that exists (a container path, see the module docstring)."""
    if config_dir is None or base_path.exists():
        return base_path
    local = beside_config(base_path, config_dir)
    if local.exists():
        logger.info("Base path %s does not exist here; reading %s (beside the config file) instead.", base_path, local)
        return local
    return base_path
