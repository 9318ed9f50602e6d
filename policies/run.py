"""Trained policies: an SB3 model with its frozen observation normalisation as a
:class:`~upright.policies.base.Policy`, loaded from a run folder of ``upright train``, one of its
``.zip`` files, or a shipped policy ``zoo:NAME`` (``policies/zoo/NAME/``, or ``$UPRIGHT_ZOO/NAME/``).

A run folder's ``config.yml`` carries the environment keyword arguments the policy was trained with
(prior, residual scale, conditions, ...): :func:`run_env_kwargs` returns them, so ``upright eval``
rebuilds that environment unless ``--set`` overrides a key.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

from upright.policies.sb3 import ModelPolicy

ZOO_PREFIX = "zoo:"


def zoo_dir() -> Path:
    """The folder of shipped policies: ``$UPRIGHT_ZOO`` when set, else ``policies/zoo/``."""
    return Path(os.environ.get("UPRIGHT_ZOO") or Path(__file__).parent / "zoo")


def zoo_names() -> tuple[str, ...]:
    """Names of the shipped policies (folders with a ``manifest.yml``), sorted."""
    root = zoo_dir()
    return tuple(sorted(p.parent.name for p in root.glob("*/manifest.yml"))) if root.is_dir() else ()


def find_run_dir(path: str | Path) -> Path | None:
    """The run folder holding ``path`` (the folder itself, or the folder of a ``.zip`` in it or in
    its ``checkpoints/``), or None when ``path`` is not in a run folder."""
    path = Path(path)
    for candidate in (path, path.parent, path.parent.parent):
        if (candidate / "config.yml").is_file():
            return candidate
    return None


def resolve_run_path(name: str) -> Path:
    """The path of a run folder, run ``.zip`` or ``zoo:NAME`` policy ``name`` (ValueError naming
    an unknown zoo policy or a missing path)."""
    if name.startswith(ZOO_PREFIX):
        entry = zoo_dir() / name[len(ZOO_PREFIX):]
        if not (entry / "manifest.yml").is_file():
            raise ValueError(f"unknown zoo policy {name!r}; shipped: {', '.join(zoo_names()) or 'none'}")
        return entry
    path = Path(name)
    if not path.exists():
        raise ValueError(f"policy {name!r}: no such file or folder")
    return path


def normalizer_path(model_path: Path) -> Path:
    """The VecNormalize file saved with ``model_path``: ``model.zip`` -> ``vecnormalize.pkl``,
    ``best_model.zip`` -> ``best_vecnormalize.pkl``, a checkpoint ``model_N_steps.zip`` ->
    ``model_vecnormalize_N_steps.pkl`` (SB3's CheckpointCallback names)."""
    stem = model_path.stem
    if stem.endswith("_steps"):
        prefix, steps = stem[: -len("_steps")].rsplit("_", 1)
        return model_path.with_name(f"{prefix}_vecnormalize_{steps}_steps.pkl")
    return model_path.with_name(("best_" if stem == "best_model" else "") + "vecnormalize.pkl")


def load_normalizer(path: Path) -> Any:
    """A VecNormalize pickled by SB3 (without its environment), used only to normalise."""
    with path.open("rb") as file:
        normalizer = pickle.load(file)
    normalizer.training = False
    return normalizer


def run_model(name: str) -> tuple[Path, Path]:
    """The run folder and model file of a run folder (its ``model.zip``), of one of its ``.zip``
    files, or of ``zoo:NAME``; ValueError naming what is not a run or has no such model."""
    path = resolve_run_path(name)
    run_dir = find_run_dir(path)
    if run_dir is None:
        raise ValueError(f"{name!r} is not a run folder of upright train (no config.yml)")
    model_path = path if path.suffix == ".zip" else run_dir / "model.zip"
    if not model_path.is_file():
        raise ValueError(f"run {str(run_dir)!r} has no {model_path.name}")
    return run_dir, model_path


def load_run_policy(name: str) -> ModelPolicy:
    """The policy of a run folder (its ``model.zip``), of one of its ``.zip`` files, or ``zoo:NAME``,
    with the normalisation statistics saved beside the model."""
    from upright.training.config import algo_class, load_run_config

    run_dir, model_path = run_model(name)
    config = load_run_config(run_dir)
    model = algo_class(config.algo).load(model_path, device="cpu")
    norm = normalizer_path(model_path)
    label = name[len(ZOO_PREFIX):] if name.startswith(ZOO_PREFIX) else f"{run_dir.name}/{model_path.stem}"
    return ModelPolicy(model, load_normalizer(norm) if norm.is_file() else None, label)


def is_run_policy(name: str) -> bool:
    """Whether ``name`` is ``zoo:NAME``, a run folder or a ``.zip`` inside a run folder."""
    return name.startswith(ZOO_PREFIX) or (Path(name).exists() and find_run_dir(name) is not None)


def run_env_kwargs(name: str) -> dict[str, Any]:
    """The ``gym.make`` keyword arguments of the environment a run or zoo policy was trained for
    (prior included; the run's evaluation environment when it trained on a wider one); ``{}`` for
    any other policy name."""
    if not is_run_policy(name):
        return {}
    from upright.training.config import load_run_config

    run_dir = find_run_dir(resolve_run_path(name))
    assert run_dir is not None
    return load_run_config(run_dir).eval_kwargs_with_prior


def run_env_id(name: str) -> str | None:
    """The environment id a run or zoo policy was trained on; None for any other policy name."""
    if not is_run_policy(name):
        return None
    from upright.training.config import load_run_config

    run_dir = find_run_dir(resolve_run_path(name))
    assert run_dir is not None
    return load_run_config(run_dir).env_id


__all__ = ["ZOO_PREFIX", "find_run_dir", "is_run_policy", "load_run_policy", "normalizer_path",
           "run_env_id", "run_env_kwargs", "run_model", "zoo_dir", "zoo_names"]
