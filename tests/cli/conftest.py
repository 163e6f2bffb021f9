"""Fixtures shared by the CLI tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from genoctx.model.config import get_config
from genoctx.model.model import GenoCtxModel


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """A one-layer tiny model saved as a checkpoint folder (random weights, seed 0)."""
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("model") / "m"
    GenoCtxModel.from_config(get_config("tiny", num_layers=1)).save_pretrained(path)
    return path
