"""Shared test set-up: quiet TensorFlow, the team data folder, small configs."""

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

SHARED_DATA = Path(os.environ.get("BERT_TF_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The team data folder (`../shared/data`, or $BERT_TF_DATA); tests using it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"team data not found at {SHARED_DATA}")
    return SHARED_DATA
