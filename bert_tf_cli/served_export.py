"""An export served on 127.0.0.1 for the length of a command: how `evaluate` and `predict` read an export.

Example:
    >>> with served_export(Path("models/sst2/3")) as (target, name):  # doctest: +SKIP
    ...     ServerPredictor(target, name).predict([{"text": "a fine film"}])
"""

import contextlib
import tempfile
from pathlib import Path


@contextlib.contextmanager
def served_export(path: Path):
    """Serves the export at `path` (a version folder: that version; a model folder: its highest) on 127.0.0.1 for the
    block: yields (target, model name)."""
    from bert_tf.model_directory import exported_version
    from serving.server.model_server import ModelServer

    version = exported_version(path)
    with tempfile.TemporaryDirectory(prefix="bert_tf_served_export_") as folder:
        base_path = Path(folder) / version.parent.name
        base_path.mkdir()
        (base_path / version.name).symlink_to(version.resolve(), target_is_directory=True)
        with ModelServer(base_path.name, base_path, poll_wait_s=0, max_num_load_retries=0) as server:
            yield f"127.0.0.1:{server.grpc_port}", base_path.name
