"""bert-tf's own model directory, the one format every command reads: `save_pretrained` writes it,
`load_model_directory` loads it (a `ModelDirectory`), and `bert_tf.read_checkpoint` reads its encoder.

A model directory holds:
- `model.keras`: the Keras model (encoder, pretrainer or task model), loaded in safe mode; its weights only, not
  the optimizer's state or the compile settings of a model trained with `fit` (a task model loads compiled with
  its task's loss and metrics and Adam at 5e-5, as KerasHub's: compile it again to choose);
- `vocab.txt`: its vocabulary;
- `bert_tf.json`: `format_version` (2), `lower_case`, `task` (a `bert_tf.TaskSpec`: the task, its
  labels, seq_length and every setting that shapes text → features → outputs), and whatever else
  the writer adds (`bert-tf finetune`: `dev_scores`, `training`).
A pre-training run folder (`bert-tf pretrain --out RUN`) stands for its `RUN/model`.

It lives above `bert_tf/checkpoints/` (the readers of published formats into an encoder), beside
`bert_tf/tasks`: it builds heads and tokenizers, which checkpoints/ never imports, and registers
its reader with `read_checkpoint` (`bert_tf.checkpoints.pretrained.register_format`) instead.

Example:
    >>> save_pretrained(classifier, "sst2_model", vocab_file="vocab.txt", seq_length=128)  # doctest: +SKIP
    PosixPath('sst2_model')
    >>> load_model_directory("sst2_model").task.task                                       # doctest: +SKIP
    'classify'
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from pathlib import Path

from bert_tf.checkpoints.contents import CheckpointContents
from bert_tf.checkpoints.installed import close_installed_names, installed_model_folder
from bert_tf.checkpoints.pretrained import check_vocabulary_fits, register_format
from bert_tf.file_modes import readable_as_umask_allows
from bert_tf.tasks.registry import task_of_folder, task_of_model
from bert_tf.tasks.spec import TaskSpec
from bert_tf.tasks.text_serving import text_packer
from bert_tf.tokenizer import BertTokenizer
from bert_tf.vocabulary import Vocabulary

MODEL_FILE = "model.keras"
METADATA_FILE = "bert_tf.json"
FORMAT_VERSION = 3  # 1: `task` a name with `settings` beside it; 2: `task` a TaskSpec of every task's settings; 3: a
# TaskSpec of the shared settings and the task's own (`TaskSpec.to_metadata`)
LOADED_SPEC = "_bert_tf_task_spec"  # the TaskSpec a loaded model was saved with (its attribute)


def is_bert_tf_directory(path: Path) -> bool:
    return path.is_dir() and (path / MODEL_FILE).is_file()


def is_training_checkpoint_directory(path: Path) -> bool:
    """A folder of bert-tf's pre-training checkpoints (`ckpt-N.index`, or the run's `checkpoints/`)."""
    return path.is_dir() and (any(path.glob("ckpt-*.index")) or any((path / "checkpoints").glob("ckpt-*.index")))


def resolve_model_directory(path: str | Path) -> Path:
    """The bert-tf model directory that `path` means: itself, or a pre-training run folder's `model/`.

    A folder of pre-training checkpoints without a finished model, or anything else, is an
    error that says what it is.
    """
    path = Path(path)
    for candidate in (path, path / "model"):
        if is_bert_tf_directory(candidate):
            return candidate
    if is_training_checkpoint_directory(path):
        run = path.parent if path.name == "checkpoints" else path
        raise FileNotFoundError(
            f"{path} holds bert-tf pre-training checkpoints (ckpt-N) but no finished model: pre-training writes "
            f"{run}/model at its end. Run `bert-tf pretrain --out {run} ...` again to resume and finish it.")
    if not path.exists():
        raise FileNotFoundError(f"Model directory not found: {path}{close_installed_names(path)}")
    version = exported_version(path)
    if version is not None:
        raise FileNotFoundError(
            f"{path} is an export for serving (version {version.name} of {version.parent}), not a model directory: "
            f"serve it (`bert-tf serve --model_base_path {version.parent} --model_name NAME`) and ask with "
            "`--server`, or give the model directory it was exported from.")
    raise FileNotFoundError(f"{path} is not a bert-tf model directory (no {MODEL_FILE}); write one with "
                            "bert_tf.save_pretrained or `bert-tf finetune`, or convert a checkpoint with `bert-tf convert`.")


def exported_version(path: Path) -> Path | None:
    """The serving version `path` is or holds (`bert-tf export`'s N/ with a SavedModel or model.tflite), if any."""
    def is_version(folder: Path) -> bool:
        return folder.name.isdigit() and any((folder / name).is_file() for name in ("saved_model.pb", "model.tflite"))

    if not path.is_dir():
        return None
    if is_version(path):
        return path
    return max((child for child in path.iterdir() if is_version(child)), key=lambda child: int(child.name), default=None)


@dataclasses.dataclass
class ModelDirectory:
    """A directory written by `save_pretrained`, loaded: the Keras model and what was saved with it."""

    path: Path
    model: object  # the saved keras.Model: a BertModel, BertPretrainer or task model
    vocab_file: Path | None
    lower_case: bool | None  # None only without a vocabulary
    task: TaskSpec  # the task and its text → features → outputs settings
    metadata: dict  # everything else passed to save_pretrained (dev_scores, training, ...)

    @property
    def encoder(self):
        """The `BertModel` inside the model."""
        return getattr(self.model, "encoder", self.model)

    def require_vocab_file(self) -> Path:
        """`vocab_file`, or an error naming the directory when it has none."""
        if self.vocab_file is None:
            raise FileNotFoundError(f"{self.path} has no vocab.txt; save the model with its vocabulary "
                                    "(save_pretrained(..., vocab_file=...)).")
        return self.vocab_file

    def tokenizer(self):
        """The model's `BertTokenizer` (its vocabulary and casing)."""
        return BertTokenizer(self.require_vocab_file(), self.lower_case)


def folder_model_source(path: str | Path) -> Path | None:
    """The folder of another tool's task model that `path` is (a sentence-transformers folder) or names (a model
    installed from the package index, `bert_tf.checkpoints.installed`), else None."""
    source = Path(path) if Path(path).exists() else installed_model_folder(path)
    return source if source is not None and task_of_folder(source) is not None else None


def _load_folder_model(source: Path) -> ModelDirectory:
    """The task model of another tool's folder (`folder_model_source`), as a model directory holds it."""
    folder_task = task_of_folder(source)
    model, seq_length = folder_task.folder_format.read(source)
    limit = model.encoder.config.max_position_embeddings
    task = folder_task.spec_for_model(model, TaskSpec(task=folder_task.name, seq_length=min(seq_length or limit, limit)))
    vocab_file, lower_case = model.encoder.vocab_file, model.encoder.lower_case
    if vocab_file is not None:
        model.set_preprocessor(text_packer(BertTokenizer(vocab_file, lower_case), task, padding=model.text_padding))
    return ModelDirectory(source, model, vocab_file, lower_case, task, {})


def load_model_directory(path: str | Path) -> ModelDirectory:
    """Loads a model directory (or a pre-training run folder: its `model/`), Keras safe mode: no code runs.

    Directories of the first format (before `format_version` 2: `task` a name, `settings` beside
    it) load too; their settings are read into the same `TaskSpec`. So do other tools' folders of a task
    model (a sentence-transformers model) and installed models by name (`folder_model_source`).
    """
    import keras

    from bert_tf.layers.initializer import weights_loaded_next

    source = folder_model_source(path)
    if source is not None:
        return _load_folder_model(source)
    directory = resolve_model_directory(path)
    try:
        with weights_loaded_next():
            model = keras.saving.load_model(directory / MODEL_FILE, safe_mode=True)
    except Exception as error:  # an untrusted file: whatever Keras makes of it is one line, never a traceback
        reason = str(error).strip().split("\n")[0].split(". ")[0]
        raise ValueError(f"{directory / MODEL_FILE} was refused: it is not a model bert-tf wrote, or it asks to run "
                         f"code, which safe mode never does ({type(error).__name__}: {reason[:200]}).") from None
    metadata_file = directory / METADATA_FILE
    try:
        metadata = json.loads(metadata_file.read_text()) if metadata_file.is_file() else {}
    except json.JSONDecodeError as error:
        raise ValueError(f"{metadata_file}: not valid JSON ({error.msg}, line {error.lineno}).") from None
    vocab = directory / "vocab.txt"
    vocab_file = vocab if vocab.is_file() else None
    lower_case = metadata.pop("lower_case", None)
    if lower_case is None and vocab_file is not None:
        lower_case = Vocabulary.from_file(vocab_file).lower_case
    metadata.pop("format_version", None)
    try:
        task = _task_from_metadata(model, metadata)
    except ValueError as error:
        raise ValueError(f"{metadata_file}: {error}") from None
    if vocab_file is not None and hasattr(model, "set_preprocessor"):  # a task model: raw strings in, as its exports
        tokenizer = BertTokenizer(vocab_file, lower_case)
        model.set_preprocessor(text_packer(tokenizer, task, padding=model.text_padding))
    if hasattr(model, "default_loss"):  # a task model: ready to train, with its task's loss and metrics (KerasHub's)
        model.compile()
    encoder = getattr(model, "encoder", model)
    encoder.vocab_file, encoder.lower_case = vocab_file, lower_case  # as from_pretrained's: save_pretrained keeps them
    object.__setattr__(model, LOADED_SPEC, task)  # not a Keras-tracked attribute: save_pretrained's default task
    return ModelDirectory(directory, model, vocab_file, lower_case, task, metadata)


def read_task(path: str | Path) -> str:
    """The task of a model directory ("classify", "ner", "squad", ...), from its `bert_tf.json` where it says it
    (format 2), else from the loaded model."""
    metadata_file = resolve_model_directory(path) / METADATA_FILE
    try:
        recorded = json.loads(metadata_file.read_text()).get("task") if metadata_file.is_file() else None
    except json.JSONDecodeError:
        recorded = None  # load_model_directory says what is wrong with it
    return recorded["task"] if isinstance(recorded, dict) and "task" in recorded else load_model_directory(path).task.task


def _task_from_metadata(model, metadata: dict) -> TaskSpec:
    """The `TaskSpec` of a loaded model, from its metadata (removed from `metadata`) and its class."""
    recorded = metadata.pop("task", None)
    if isinstance(recorded, dict):
        return task_spec_for(model, TaskSpec.from_metadata(recorded))
    # The first format: the task's name, seq_length, text_pair and a settings dict beside it.
    settings = metadata.pop("settings", {}) or {}
    known = {"label_names", "max_text_bytes", "truncation", *task_of_model(model).settings_class.names()}
    return task_spec_for(model, recorded, metadata.pop("seq_length", None),
                         {key: value for key, value in settings.items() if key in known},
                         text_pair=metadata.pop("text_pair", None))


def task_spec_for(model, task: TaskSpec | str | None = None, seq_length: int | None = None,
                  settings: dict | None = None, text_pair: bool | None = None) -> TaskSpec:
    """The `TaskSpec` of `model`: the task follows from its class; `task`, if given, must agree.

    `task` may be a full `TaskSpec` (checked against the model) or a task name, completed
    with `seq_length` (default: the task's, at most the model's positions), `settings`
    (`TaskSpec` fields) and `text_pair`. Label names come from the head when it has them.
    """
    model_task = task_of_model(model)
    inferred = model_task.name
    spec = task if isinstance(task, TaskSpec) else None
    name = spec.task if spec else task
    if name is not None and name != inferred and {name, inferred} != {"encoder", "pretrainer"}:
        raise ValueError(f"the task is {name!r}, but the model is a {type(model).__name__} (task {inferred!r}).")
    encoder = getattr(model, "encoder", model)
    if spec is None:
        fields = dict(settings or {})
        if text_pair is not None:
            fields["text_pair"] = bool(text_pair)
        default_length = min(model_task.default_seq_length, encoder.config.max_position_embeddings)
        spec = TaskSpec.of(inferred, seq_length=int(seq_length or default_length), **fields)
    spec = model_task.spec_for_model(model, spec.replace(task=inferred,
                                                          label_names=_label_names(model, spec.label_names)))
    spec.check_fits(encoder.config)
    return spec


def _label_names(model, recorded: tuple[str, ...]) -> tuple[str, ...]:
    """The head's label names (the model's own, else the recorded ones, else "0", "1", ...); () without labels."""
    count = getattr(model, "num_classes", None) or getattr(model, "num_labels", None)
    if count is None:
        return ()
    names = tuple(getattr(model, "label_names", None) or recorded or (str(index) for index in range(count)))
    if len(names) != count:
        raise ValueError(f"{len(names)} label names {list(names)} for a head of {count} outputs.")
    return names


def save_pretrained(model, out_dir: str | Path, vocab_file=None, lower_case: bool | None = None,
                    task: TaskSpec | str | None = None, seq_length: int | None = None, settings: dict | None = None,
                    text_pair: bool | None = None, **metadata) -> Path:
    """Writes `model` (an encoder, a pretrainer or a task model) as a bert-tf model directory.

    The directory holds `model.keras`, `vocab.txt` and `bert_tf.json`: the casing (inferred
    from the vocabulary when None), the task (`task_spec_for(model, task, seq_length,
    settings, text_pair)`: a `TaskSpec`, or a name completed with the others) and any other
    `metadata` (JSON-serializable). `load_model_directory` reads it back, and every command
    accepts it. A model `load_model_directory` loaded is written as it was loaded (its vocabulary, casing and task)
    unless told otherwise. It is written next to `out_dir` first and moved into place at the end, so a
    failure never leaves a half-written directory, and an existing one is replaced whole.

    Example:
        >>> save_pretrained(classifier, "sst2_model", vocab_file="vocab.txt", seq_length=128)  # doctest: +SKIP
        PosixPath('sst2_model')
    """
    out = Path(out_dir)
    encoder = getattr(model, "encoder", model)
    vocab_file = vocab_file or getattr(encoder, "vocab_file", None)
    if lower_case is None:
        lower_case = getattr(encoder, "lower_case", None)
    if vocab_file is not None:
        vocabulary = Vocabulary.from_file(vocab_file, lower_case)
        check_vocabulary_fits(len(vocabulary), encoder.config.vocab_size, vocab_file)
        lower_case = vocabulary.lower_case
    if task is None and seq_length is None and settings is None and text_pair is None:
        task = getattr(model, LOADED_SPEC, None)  # a loaded model keeps its length, columns and settings
    spec = task_spec_for(model, task, seq_length, settings, text_pair)
    contents = {"format_version": FORMAT_VERSION, "lower_case": lower_case, "task": spec.to_metadata(), **metadata}
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        # mkdtemp makes the directory private (0700); give it the permissions of a plain mkdir, so that
        # a server running as another user (TF Serving in Docker) can read the model.
        readable_as_umask_allows(staging)
        _without_training_state(model).save(staging / MODEL_FILE)
        if vocab_file is not None:
            shutil.copyfile(vocab_file, staging / "vocab.txt")
        (staging / METADATA_FILE).write_text(json.dumps(contents, indent=2) + "\n")
        if out.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            out.rename(retired / out.name)
            shutil.rmtree(retired)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def _without_training_state(model):
    """`model`, or if it was compiled, a copy of it without what training added (the optimizer and its state: AdamW's
    two moments per weight, three times the weights on disk; the losses and metrics). Nothing that reads a model
    directory uses them; pre-training resumes from its own checkpoints (`bert_tf.training`)."""
    import keras

    from bert_tf.layers.initializer import weights_loaded_next

    if getattr(model, "optimizer", None) is None:
        return model
    config = keras.saving.serialize_keras_object(model)
    config.pop("compile_config", None)
    with weights_loaded_next():
        copy = keras.saving.deserialize_keras_object(config)
    copy.set_weights(model.get_weights())
    return copy


def is_bert_tf_checkpoint(path: Path) -> bool:
    """Whether `read_checkpoint` reads `path` as a bert-tf directory: one, or a pre-training run folder
    with its finished `model/`; a folder of pre-training checkpoints without one is an error that says so."""
    if is_training_checkpoint_directory(path):
        resolve_model_directory(path)  # its model/ if finished, else an error saying what the folder is
    return is_bert_tf_directory(path) or is_bert_tf_directory(path / "model")


def read_bert_tf_directory(path: str | Path) -> CheckpointContents:
    """Reads a directory written by `save_pretrained`: the encoder's weights, and the heads of a pretrainer."""
    loaded = load_model_directory(path)
    model = loaded.model
    with_names = model if hasattr(model, "google_weights") else model.encoder  # task models: their encoder
    return CheckpointContents(
        config=getattr(model, "encoder", model).config,
        weights={name: variable.numpy() for name, variable in with_names.google_weights().items()},
        source=str(path),
        format="bert_tf",
        vocab_file=loaded.vocab_file,
        lower_case=loaded.lower_case,
    )


register_format(is_bert_tf_checkpoint, read_bert_tf_directory)
