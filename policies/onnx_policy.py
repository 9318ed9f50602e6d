"""The runtime of a policy exported by ``upright export`` (``--policy onnx:DIR``): onnxruntime and
NumPy only, no torch and no stable-baselines3, as on a robot.

An export folder holds ``policy.onnx`` (observation in, action out: the observation normalisation
and the action clip are inside the graph), ``policy.yml`` (the spec: environment, observation
layout, action, prior, control period, delay, held-out numbers, the graph's SHA-256) and
``example_io.npz`` (observations of real episodes with the actions the graph must give them) and,
for a policy with a prior, ``prior_vectors.npz`` (the prior's inputs and targets in the same
episodes), and ``SHA256SUMS`` (every other file's SHA-256, as ``sha256sum -c`` checks them: loading
refuses a ``policy.yml`` changed after the export, e.g. another prior); ``docs/export.md``
describes them. :class:`ExportedActor` runs the graph; :class:`OnnxPolicy` is
the same as a :class:`~upright.policies.base.Policy`, and ``upright eval --policy onnx:DIR`` runs it
in the environment of its spec (:func:`export_env`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from upright.policies.base import Policy
from upright.envs.files import read_yaml_mapping

if TYPE_CHECKING:  # the robot-side install has no Gymnasium
    import gymnasium as gym

ONNX_PREFIX = "onnx:"
GRAPH_FILE = "policy.onnx"
SPEC_FILE = "policy.yml"
EXAMPLES_FILE = "example_io.npz"
#: The checksums of an export's files, in ``sha256sum``'s format (``HEX  NAME`` lines).
SUMS_FILE = "SHA256SUMS"
#: Names of the graph's input (observations, float32 [batch, n]) and output (actions, float32 [batch, size]).
INPUT_NAME = "observation"
OUTPUT_NAME = "action"


def sha256_bytes(data: bytes) -> str:
    """SHA-256 (hex) of ``data``: the checksum ``policy.yml`` records of ``policy.onnx``."""
    return hashlib.sha256(data).hexdigest()


def sums_text(directory: str | Path) -> str:
    """The :data:`SUMS_FILE` of the files in ``directory`` (all but itself, by name)."""
    files = sorted(p for p in Path(directory).iterdir() if p.is_file() and p.name != SUMS_FILE)
    return "".join(f"{sha256_bytes(p.read_bytes())}  {p.name}\n" for p in files)


def read_sums(directory: str | Path) -> dict[str, str]:
    """File name -> SHA-256 of the :data:`SUMS_FILE` in ``directory``; ValueError when it is missing."""
    path = Path(directory) / SUMS_FILE
    if not path.is_file():
        raise ValueError(f"export {str(directory)!r} has no {SUMS_FILE} (an export from before it had one, or not "
                         "all of one): export it again")
    sums = {}
    for line in path.read_text(errors="replace").splitlines():
        digest, _, name = line.partition("  ")
        sums[name.strip()] = digest.strip()
    return sums


#: What loading an export needs of its spec: section, key.
NEEDED = (("model", "sha256"), ("environment", "id"), ("environment", "kwargs"), ("observation", "size"),
          ("action", "size"), ("policy", "name"))


def load_spec(directory: str | Path) -> dict[str, Any]:
    """The spec (``policy.yml``) of the export folder ``directory``; ValueError naming a folder
    that is no export, a spec whose SHA-256 is not the one :data:`SUMS_FILE` records (changed after
    the export), that is no YAML mapping or lacks one of :data:`NEEDED`."""
    path = Path(directory) / SPEC_FILE
    if not path.is_file() or not (Path(directory) / GRAPH_FILE).is_file():
        raise ValueError(f"{str(directory)!r} is no export of upright export (it needs {GRAPH_FILE} and {SPEC_FILE})")
    recorded = read_sums(directory).get(SPEC_FILE)
    if sha256_bytes(path.read_bytes()) != recorded:
        raise ValueError(f"{path} does not match its checksum in {SUMS_FILE} (changed after the export): "
                         "export it again")
    spec = read_yaml_mapping(path, "export spec")
    for section, key in NEEDED:
        if not isinstance(spec.get(section), dict) or key not in spec[section]:
            raise ValueError(f"export spec {str(path)!r} lacks {section}.{key}")
    if not isinstance(spec["environment"]["kwargs"], dict):
        raise ValueError(f"export spec {str(path)!r}: environment.kwargs must be a mapping")
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
        try:
            self.session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        except Exception as error:  # onnxruntime's own errors: bytes that are no graph it runs
            raise ValueError(f"{self.directory / GRAPH_FILE} does not load as an ONNX graph "
                             f"({str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__})"
                             ) from error
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


__all__ = ["EXAMPLES_FILE", "GRAPH_FILE", "INPUT_NAME", "NEEDED", "ONNX_PREFIX", "OUTPUT_NAME", "SPEC_FILE", "SUMS_FILE",
           "ExportedActor", "OnnxPolicy", "export_dir", "export_env", "is_export_policy", "load_spec", "read_sums",
           "sha256_bytes", "sums_text"]
