"""Checkpoint directories: ``model.safetensors`` + ``config.json`` + ``model.safetensors.sha256``.

Nothing is ever unpickled: weights are safetensors, the configuration is JSON, and the weights'
sha256 is checked against the digest file before the weights are parsed. ``"embedded"`` names
the checkpoint shipped inside the package (``genoctx/weights/``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from safetensors import SafetensorError

from genoctx import __version__
from genoctx.errors import GenoctxError, InputError
from genoctx.io.atomic import atomic_path
from genoctx.io.dataroot import sha256_uncached
from genoctx.model.config import ModelConfig

if TYPE_CHECKING:  # torch is imported where weights are read or written, not to find them
    import torch

WEIGHTS_NAME = "model.safetensors"
CONFIG_NAME = "config.json"
DIGEST_NAME = "model.safetensors.sha256"
FORMAT = "genoctx-model"
FORMAT_VERSION = 1
EMBEDDED = "embedded"


def embedded_dir() -> Path:
    """The folder of the checkpoint shipped with the package."""
    import genoctx.weights

    return Path(genoctx.weights.__file__).resolve().parent


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file, always read afresh (no cache: this guards against tampering)."""
    return sha256_uncached(path)


def resolve_checkpoint(path_or_name: str | Path) -> Path:
    """The checkpoint directory for a path (dir or its model.safetensors) or ``"embedded"``."""
    if str(path_or_name) == EMBEDDED:
        directory = embedded_dir()
        if not (directory / WEIGHTS_NAME).is_file():
            raise GenoctxError(
                "no trained weights ship with this genoctx build yet (genoctx/weights/ holds no "
                "model.safetensors); pass --model DIR with a checkpoint written by "
                "save_pretrained or `genoctx train`")
    else:
        directory = Path(path_or_name)
        if directory.is_file() and directory.name in (WEIGHTS_NAME, CONFIG_NAME, DIGEST_NAME):
            directory = directory.parent  # one of the checkpoint's files: its folder
        if directory.is_file():
            raise InputError(f"model checkpoint {path_or_name} is a file; pass the directory "
                             f"holding {WEIGHTS_NAME}, {CONFIG_NAME} and {DIGEST_NAME}")
        if not directory.is_dir():
            raise InputError(f"model checkpoint {path_or_name} not found; pass a directory "
                             f"holding {WEIGHTS_NAME}, {CONFIG_NAME} and {DIGEST_NAME}")
    missing = [n for n in (WEIGHTS_NAME, CONFIG_NAME, DIGEST_NAME) if not (directory / n).is_file()]
    if missing:
        raise InputError(f"checkpoint {directory} lacks {', '.join(missing)}; a checkpoint "
                         f"directory holds {WEIGHTS_NAME}, {CONFIG_NAME} and {DIGEST_NAME}")
    return directory


def read_config(directory: str | Path) -> ModelConfig:
    """The :class:`ModelConfig` of a checkpoint directory (no weights are read)."""
    path = Path(directory) / CONFIG_NAME
    try:
        meta = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InputError(f"{path} is not a genoctx model config (no \"format\": \"{FORMAT}\")")
    if meta.get("format_version") != FORMAT_VERSION:
        raise InputError(f"{path} has format_version {meta.get('format_version')}; this genoctx "
                         f"reads version {FORMAT_VERSION}")
    try:
        return ModelConfig.from_dict(meta["config"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path} holds an invalid model config: {exc}") from exc


def verify_digest(directory: str | Path) -> str:
    """Check ``model.safetensors`` against ``model.safetensors.sha256``; return the digest."""
    directory = Path(directory)
    text = (directory / DIGEST_NAME).read_text().split()
    want = text[0].lower() if text else ""
    got = file_sha256(directory / WEIGHTS_NAME)
    if got != want:
        raise InputError(
            f"{directory / WEIGHTS_NAME} does not match {DIGEST_NAME} (sha256 {got[:16]}… != "
            f"{want[:16] or 'empty'}…): the weights are corrupt or were modified; restore or "
            f"re-save the checkpoint")
    return got


def read_checkpoint(path_or_name: str | Path,
                    device: str | torch.device = "cpu") -> tuple[ModelConfig, dict, Path]:
    """``(config, state_dict, directory)``, after the sha256 check."""
    directory = resolve_checkpoint(path_or_name)
    config = read_config(directory)
    verify_digest(directory)
    from safetensors.torch import load_file

    try:
        state = load_file(str(directory / WEIGHTS_NAME), device=str(device))
    except (SafetensorError, OSError) as exc:
        raise InputError(f"cannot read {directory / WEIGHTS_NAME}: {exc}") from exc
    return config, state, directory


def write_checkpoint(directory: str | Path, state_dict: dict, config: ModelConfig) -> Path:
    """Write the three files atomically (weights, then digest, then config)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    from safetensors.torch import save_file

    tensors = {k: v.detach().contiguous().cpu() for k, v in state_dict.items()}
    with atomic_path(directory / WEIGHTS_NAME) as tmp:
        # one metadata key: safetensors writes several in no fixed order, and the same weights
        # must give the same bytes (and sha256); the version is in config.json
        save_file(tensors, str(tmp), metadata={"format": "pt"})
        digest = file_sha256(tmp)
    with atomic_path(directory / DIGEST_NAME) as tmp:
        tmp.write_text(f"{digest}  {WEIGHTS_NAME}\n")
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "genoctx_version": __version__,
            "num_params": config.num_params(), "config": config.to_dict()}
    with atomic_path(directory / CONFIG_NAME) as tmp:
        tmp.write_text(json.dumps(meta, indent=2) + "\n")
    return directory
