"""Loading a policy by name or file.

- ``feedback:NAME`` or a ``.yml`` file: a hand-designed residual (:mod:`upright.policies.feedback`).
- A run folder of ``upright train``, a ``.zip`` inside one, or ``zoo:NAME`` (a shipped policy)
  loads the model with its frozen normalisation (:mod:`upright.policies.run`).
- ``onnx:DIR``: a policy exported by ``upright export``, run with onnxruntime alone
  (:mod:`upright.policies.onnx_policy`).
- Any other path ending in ``.zip`` loads a stable-baselines3 model (:class:`SB3Policy`).
- A name registered with :func:`register_policy` (the built-ins ``zero``, ``random``, ``hold``).
- A baseline name: every controller registered in :mod:`upright.baselines` (with
  ``register_controller``, when its module is imported) is found by its name and acts through
  :class:`ControllerPolicy`, so a new baseline needs no change here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable

from upright.baselines import controller_names
from upright.policies.base import Policy
from upright.policies.builtin import ControllerPolicy, HoldPolicy, RandomPolicy, ZeroPolicy
from upright.policies.feedback import FEEDBACK_PREFIX, feedback_dir, feedback_names, feedback_policy, is_feedback_policy
from upright.policies.onnx_policy import GRAPH_FILE, SPEC_FILE, OnnxPolicy, export_dir, is_export_policy
from upright.policies.run import ZOO_PREFIX, is_run_policy, load_run_policy, normalizer_path, run_model, zoo_names
from upright.policies.run_folder import load_run_config
from upright.policies.sb3 import SB3Policy

PolicyFactory = Callable[[], Policy]

_FACTORIES: dict[str, PolicyFactory] = {}


def register_policy(name: str, factory: PolicyFactory) -> None:
    """Make ``factory()`` loadable as ``name``; a name may be registered only once, and not as a
    baseline's name."""
    if name in _FACTORIES or name in controller_names():
        raise ValueError(f"policy name {name!r} is already taken")
    _FACTORIES[name] = factory


def policy_names() -> tuple[str, ...]:
    """Every name :func:`load_policy` accepts (besides run folders and ``.zip`` files), sorted;
    shipped policies as ``zoo:NAME``."""
    return tuple(sorted({*_FACTORIES, *controller_names(), *(ZOO_PREFIX + n for n in zoo_names()), *feedback_names()}))


def load_policy(name_or_path: str) -> Policy:
    """A fresh policy for ``name_or_path``: a registered name, a baseline name, a run folder or
    ``zoo:NAME``, an export ``onnx:DIR``, an SB3 ``.zip``, or a hand-designed residual
    (``feedback:NAME`` or a ``.yml``)."""
    if is_export_policy(name_or_path):
        return OnnxPolicy(name_or_path)
    if is_feedback_policy(name_or_path):
        return feedback_policy(name_or_path)
    if is_run_policy(name_or_path):
        return load_run_policy(name_or_path)
    if name_or_path.endswith(".zip"):
        return SB3Policy(name_or_path)
    if name_or_path in _FACTORIES:
        return _FACTORIES[name_or_path]()
    if name_or_path in controller_names():
        return ControllerPolicy(name_or_path)
    if (Path(name_or_path) / "config.yml").is_file():  # a run folder whose config.yml does not read as one
        load_run_config(name_or_path)  # ValueError naming what is wrong with it
        raise ValueError(f"{name_or_path!r}: its config.yml lacks the env_id and algo of a run of upright train")
    raise ValueError(f"unknown policy {name_or_path!r}; valid policies: {', '.join(policy_names())} "
                     "(or a run folder, zoo:NAME, onnx:DIR, a hand-designed residual's .yml, or an SB3 model file "
                     "ending in .zip)")


def policy_digest(name_or_path: str) -> str | None:
    """SHA-256 (hex) of the files that define a trained or hand-designed policy: a run or zoo
    policy's model and its normalisation statistics, an export's graph and spec, a ``.zip``, a
    hand-designed residual's YAML;
    None for a name whose behaviour is code (built-ins, baselines). A re-shipped policy under the
    same name gets a new digest, so an evaluation can tell its results from the old one's."""

    if is_export_policy(name_or_path):
        files = [export_dir(name_or_path) / GRAPH_FILE, export_dir(name_or_path) / SPEC_FILE]
    elif is_feedback_policy(name_or_path):
        files = [feedback_dir() / f"{name_or_path[len(FEEDBACK_PREFIX):]}.yml"
                 if name_or_path.startswith(FEEDBACK_PREFIX) else Path(name_or_path)]
    elif is_run_policy(name_or_path):
        _, model = run_model(name_or_path)
        files = [model, normalizer_path(model)]
    elif name_or_path.endswith(".zip"):
        files = [Path(name_or_path)]
    else:
        return None
    digest = hashlib.sha256()
    for path in files:
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


for _policy in (ZeroPolicy, RandomPolicy, HoldPolicy):
    register_policy(_policy.name, _policy)

__all__ = ["PolicyFactory", "load_policy", "policy_digest", "policy_names", "register_policy"]
