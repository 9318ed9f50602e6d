"""The runtime of a policy exported by ``upright export`` (``--policy onnx:DIR``): onnxruntime and
NumPy only, no torch and no stable-baselines3, as on a robot.

An export folder holds ``policy.onnx`` (observation in, action out: the observation normalisation
and the action clip are inside the graph), ``policy.yml`` (the spec: environment, observation
layout, action, prior, control period, delay, held-out numbers, the graph's SHA-256) and
``example_io.npz`` (observations of real episodes with the actions the graph must give them) and,
for a policy with a prior, ``prior_vectors.npz`` (the prior's inputs and targets in the same
episodes); ``docs/export.md`` describes them. :class:`ExportedActor` runs the graph; :class:`OnnxPolicy` is
the same as a :class:`~upright.policies.base.Policy`, and ``upright eval --policy onnx:DIR`` runs it
in the environment of its spec (:func:`export_env`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import yaml

from upright.policies.base import Policy

ONNX_PREFIX = "onnx:"
GRAPH_FILE = "policy.onnx"
SPEC_FILE = "policy.yml"
EXAMPLES_FILE = "example_io.npz"
#: Names of the graph's input (observations, float32 [batch, n]) and output (actions, float32 [batch, size]).
INPUT_NAME = "observation"
OUTPUT_NAME = "action"


def sha256_bytes(data: bytes) -> str:
    """SHA-256 (hex) of ``data``: the checksum ``policy.yml`` records of ``policy.onnx``."""
    return hashlib.sha256(data).hexdigest()


def load_spec(directory: str | Path) -> dict[str, Any]:
    """The spec (``policy.yml``) of the export folder ``directory``; ValueError naming a folder
    that is no export."""
    path = Path(directory) / SPEC_FILE
    if not path.is_file() or not (Path(directory) / GRAPH_FILE).is_file():
        raise ValueError(f"{str(directory)!r} is no export of upright export (it needs {GRAPH_FILE} and {SPEC_FILE})")
    spec = yaml.safe_load(path.read_text())
    if not isinstance(spec, dict) or "model" not in spec or "environment" not in spec:
        raise ValueError(f"{path} is not the spec of an export (no model or environment section)")
    return spec


class ExportedActor:
    """The graph of the export folder ``directory`` in an onnxruntime session on the CPU with
    ``threads`` threads (1: the robot's case, and the measured one). Loading checks the graph's
    SHA-256 against the spec, so a graph and a spec of different exports are never paired.

    Calling it maps observations (float32, as ``env.step`` returns them: shape ``(n,)`` or a batch
    ``(batch, n)``) to actions of the same rank (float32 in [-1, 1], as the policy's ``act``)."""

    def __init__(self, directory: str | Path, threads: int = 1) -> None:
        import onnxruntime  # onnxruntime (the export extra): only when an export runs

        self.directory = Path(directory)
        self.spec = load_spec(self.directory)
        graph = (self.directory / GRAPH_FILE).read_bytes()
        recorded = self.spec["model"]["sha256"]
        if sha256_bytes(graph) != recorded:
            raise ValueError(f"{self.directory / GRAPH_FILE} does not match its spec (SHA-256 {sha256_bytes(graph)}, "
                             f"{SPEC_FILE} records {recorded}): export it again")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = threads
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        self.session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        self.observation_size = int(self.spec["observation"]["size"])
        self.action_size = int(self.spec["action"]["size"])

    def __call__(self, observation: np.ndarray) -> np.ndarray:
        x = np.asarray(observation, dtype=np.float32)
        if x.ndim not in (1, 2) or x.shape[-1] != self.observation_size:
            raise ValueError(f"observation must have shape ({self.observation_size},) or (batch, "
                             f"{self.observation_size}) for {self.directory}, got {x.shape}")
        (action,) = self.session.run([OUTPUT_NAME], {INPUT_NAME: x.reshape(-1, self.observation_size)})
        return action[0] if x.ndim == 1 else action


def is_export_policy(name: str) -> bool:
    """Whether ``name`` is ``onnx:DIR``."""
    return name.startswith(ONNX_PREFIX)


def export_dir(name: str) -> Path:
    """The folder of ``onnx:DIR``."""
    return Path(name[len(ONNX_PREFIX):])


def export_env(name: str) -> tuple[str, dict[str, Any]]:
    """The environment id and ``gym.make`` keyword arguments (prior included) of the spec of
    ``onnx:DIR``: the environment the policy was evaluated in, as :func:`~upright.policies.run.
    run_env_kwargs` gives a run's."""
    environment = load_spec(export_dir(name))["environment"]
    return environment["id"], dict(environment["kwargs"])


class OnnxPolicy(Policy):
    """The exported policy of ``onnx:DIR`` (or a folder path) as a :class:`Policy`: deterministic
    actions from :class:`ExportedActor` (one thread); ``reset`` refuses an environment whose
    observation or action size is not the spec's."""

    def __init__(self, name: str) -> None:
        directory = export_dir(name) if is_export_policy(name) else Path(name)
        self.actor = ExportedActor(directory)
        self.name = str(self.actor.spec["policy"]["name"])

    def reset(self, env: gym.Env, seed: int | None) -> None:
        for kind, shape, size in (("observation", env.observation_space.shape, self.actor.observation_size),
                                  ("action", env.action_space.shape, self.actor.action_size)):
            if shape != (size,):
                raise ValueError(f"export {str(self.actor.directory)!r} takes {kind} size {size}, the environment "
                                 f"has shape {shape} (another robot, task or prior?)")

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        return self.actor(observation)


__all__ = ["EXAMPLES_FILE", "GRAPH_FILE", "INPUT_NAME", "ONNX_PREFIX", "OUTPUT_NAME", "SPEC_FILE", "ExportedActor",
           "OnnxPolicy", "export_dir", "export_env", "is_export_policy", "load_spec", "sha256_bytes"]
