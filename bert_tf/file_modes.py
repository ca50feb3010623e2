"""Files others can read: what this process's umask allows, also for files written through private temporaries.

`tempfile.mkstemp`/`mkdtemp`, and libraries that write through them (safetensors' `save_file`), create files
only their owner can read (0600, 0700); a model meant to be served (TF Serving in Docker runs as another user) or
shared is given the permissions a plain `open`/`mkdir` would have.

Example:
    >>> readable_as_umask_allows(Path("model.safetensors"))  # doctest: +SKIP
"""

from __future__ import annotations

import os
from pathlib import Path


def file_creation_mask() -> int:
    """This process's file-creation mask (reading it means setting it, so it is set back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def readable_as_umask_allows(path: str | Path) -> None:
    """Gives `path` the permissions `open` (a file) or `mkdir` (a directory) would under this process's umask."""
    path = Path(path)
    path.chmod((0o777 if path.is_dir() else 0o666) & ~file_creation_mask())
