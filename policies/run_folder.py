"""The files of a run folder of ``upright train`` and of a zoo entry, below both the policies that
read them and the training that writes them:

- ``config.yml``: :class:`TrainConfig`, everything that rebuilds the run's environment and model
  (:func:`load_run_config`; :func:`~upright.policies.algorithms.algo_class` gives its SB3
  class);
- ``learning_curve.csv``: the held-out evaluations during training (:data:`CURVE_COLUMNS`,
  :func:`read_learning_curve`);
- ``selection.json``: the checkpoint that ``upright experiment checkpoint-selection`` chose
  (:func:`write_selection`, :func:`read_selection`);
- a zoo entry's ``manifest.yml`` (:func:`read_manifest`, :func:`write_evaluation`).

Every file is written through :func:`write_atomically`: a temporary file in the same folder, then
``os.replace``.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from pydantic import Field, model_validator

from upright.envs.files import read_yaml_mapping
from upright.envs.schema import Schema, validate
from upright.policies.rl_zoo import is_rl_zoo_run, rl_zoo_config_fields

#: The curricula of :class:`TrainingExtras`: the name of its two keys' prefix.
CURRICULA = ("push_curriculum", "model_curriculum")


class TrainingExtras(Schema):
    """The training extras of a run: its hyperparameters of ours, not SB3's (``--set hp.KEY=VALUE``
    and the hyperparameter files take them beside SB3's; a run's ``config.yml`` records them all
    under ``extras``). Each has its default here."""

    #: VecNormalize on the observations (and, for on-policy algorithms, on the rewards).
    normalize: bool = False
    #: Environment steps during which the actor is frozen and only the critic learns (0: none).
    warmup_steps: int = Field(0, ge=0)
    #: Zero the actor's last layer, so that a residual starts as its prior; None: with a prior.
    zero_init: bool | None = None
    #: SAC: the initial log-std of the actions (PPO takes it in ``policy_kwargs``).
    log_std_init: float = -2.0
    #: TD3: the standard deviation of the Gaussian exploration noise (normalised action units).
    action_noise_sigma: float = Field(0.1, ge=0)
    #: PPO with a prior: the residual the fresh policy starts from instead of zero, joint target
    #: offsets (rad) by actuator name (a hand-set correction that training refines).
    initial_residual: dict[str, float] = {}
    #: PPO, A2C: an asymmetric actor-critic whose value network also reads privileged simulator
    #: state (:mod:`upright.envs.privileged`) while the actor reads the robot's observation;
    #: fine-tuning a symmetric policy widens its critic with zero weights.
    privileged_critic: bool = False
    #: PPO with a prior: a hand-designed residual (``feedback:NAME`` or its ``.yml``) whose rollouts
    #: the fresh actor is fitted to before PPO (:mod:`upright.training.imitation`). A run stopped
    #: during its imitation is saved as it stands; a resume goes on with PPO from that actor.
    imitate: str | None = None
    #: Environment steps of the imitation's rollouts; they count in the run's steps, so
    #: ``warmup_steps`` must exceed them to freeze the actor after imitation.
    imitate_steps: int = Field(100_000, ge=1)
    #: Epochs, minibatch size and Adam step size of the imitation's regression.
    imitate_epochs: int = Field(20, ge=1)
    imitate_batch_size: int = Field(1024, ge=1)
    imitate_learning_rate: float = Field(1e-3, gt=0)
    #: torch threads of the training process during the gradient updates (collection keeps one).
    #: With SubprocVecEnv on many cores the workers idle during the update, so it may use their
    #: cores; more threads change the last bits of the weights (torch splits the sums differently),
    #: so a run keeps its count.
    update_threads: int = Field(1, ge=1)
    #: A curriculum over the conditions' continuous random torso push (e.g. ``thesis``'s): the
    #: training copies feel this fraction of it at the start, rising linearly to all of it at
    #: ``push_curriculum_steps`` environment steps; the periodic evaluation feels all of it.
    push_curriculum_start: float | None = Field(None, ge=0, le=1)
    push_curriculum_steps: int | None = Field(None, ge=1)
    #: The same over the conditions' model variation (servo factors, zero offsets, torso load,
    #: sensor latency; ``sim2real``'s): at the start the draws keep this fraction of it.
    model_curriculum_start: float | None = Field(None, ge=0, le=1)
    model_curriculum_steps: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _curricula_whole(self) -> TrainingExtras:
        for curriculum in CURRICULA:
            start, steps = getattr(self, f"{curriculum}_start"), getattr(self, f"{curriculum}_steps")
            if (start is None) != (steps is None):
                missing = f"{curriculum}_steps" if steps is None else f"{curriculum}_start"
                raise ValueError(f"{curriculum}_start and {curriculum}_steps go together; {missing} is missing")
        return self

    def zero_initialised(self, prior: str | None) -> bool:
        """Whether a fresh actor starts at zero output: :attr:`zero_init`, or with a ``prior``."""
        return self.zero_init if self.zero_init is not None else prior is not None

    def curricula(self) -> dict[str, tuple[float, int]]:
        """The curricula this run has: name (of :data:`CURRICULA`) to (start fraction, steps)."""
        return {name: (getattr(self, f"{name}_start"), getattr(self, f"{name}_steps")) for name in CURRICULA
                if getattr(self, f"{name}_start") is not None}


@dataclass
class TrainConfig:
    """One training run. ``env_kwargs`` excludes the prior (``prior``); ``hyperparams`` and
    ``extras`` are the resolved ones (file + overrides) once :func:`resolve` has run."""

    env_id: str
    prior: str | None = None
    algo: str = "ppo"
    steps: int = 100_000
    #: Environment copies: 4 batch the policy's forward pass, so the network costs less per
    #: environment step than with fewer (``upright bench --training`` measures the ratio).
    n_envs: int = 4
    #: The vector environment of the copies: ``dummy`` (one process), ``subproc`` (a worker process
    #: each) or ``auto`` (chosen by the cores this machine gives the run,
    #: :func:`upright.training.vec_env.choose_vec_env`). A run's ``config.yml`` records the class it
    #: ran with. Both classes give the same transitions for a seed, so it changes the speed only.
    vec_env: str = "auto"
    seed: int = 0
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    #: SB3's hyperparameters, as the algorithm takes them (resolved: file + overrides).
    hyperparams: dict[str, Any] = field(default_factory=dict)
    #: Ours (resolved with them).
    extras: TrainingExtras = field(default_factory=TrainingExtras)
    #: Hyperparameter file (default: the shipped ``training/hyperparams/<algo>.yml``).
    hyperparams_file: str | None = None
    #: Overrides (dotted keys without ``hp.``) applied over the file.
    hp_overrides: dict[str, Any] = field(default_factory=dict)
    out: str = "runs"
    name: str | None = None
    #: Start from this trained policy's weights and normalisation statistics (a run folder, one of
    #: its ``.zip`` files or ``zoo:NAME``; the same algorithm and spaces) instead of a fresh,
    #: zero-initialised actor: fine-tuning, as rl-baselines3-zoo's ``--trained-agent``. None: fresh.
    #: The run copies that policy into its ``init/`` folder when it starts and uses the copy.
    init: str | None = None
    #: Evaluate every this many environment steps (0 = never) on ``eval_episodes`` held-out seeds.
    eval_every: int = 10_000
    eval_episodes: int = 10
    #: First seed of the evaluation episodes (held out: training seeds start at ``seed``).
    eval_seed: int = 1_000_000
    #: Environment keyword arguments that replace ``env_kwargs`` in the periodic evaluation (as
    #: rl-baselines3-zoo's ``eval_env_kwargs``): the task the policy is for, when training sees a
    #: wider distribution (e.g. ``start`` with extra standing starts). Loading and shipping the run
    #: use the evaluation environment too. Empty: evaluate on the training environment (but
    #: :func:`~upright.training.train.resolve` adds ``command_focus_share`` 0 to a run whose
    #: training focuses its walk commands).
    eval_env_kwargs: dict[str, Any] = field(default_factory=dict)
    #: At each periodic evaluation, also a short clip of the deterministic policy on the first
    #: evaluation seed, logged to TensorBoard as the video ``eval/video``
    #: (:class:`~upright.training.callbacks.Evaluation`). Off: each clip costs one more episode's
    #: start, rendered off-screen.
    eval_video: bool = False
    checkpoint_every: int = 50_000
    progress: bool = True
    command: str = ""
    version: str = ""
    #: The git commit of the source tree that trained (``-dirty`` with uncommitted changes to
    #: tracked files); "" outside a git checkout. The package version alone does not say which
    #: code ran: a baseline's targets can change between commits of one version.
    code: str = ""

    @property
    def env_kwargs_with_prior(self) -> dict[str, Any]:
        """The keyword arguments of ``gym.make`` (``prior`` included when there is one)."""
        return {**self.env_kwargs, **({"prior": self.prior} if self.prior else {})}

    @property
    def eval_kwargs_with_prior(self) -> dict[str, Any]:
        """The keyword arguments of the evaluation environment: :attr:`env_kwargs_with_prior` with
        :attr:`eval_env_kwargs` replaced (what evaluation, loading and shipping the run use)."""
        return {**self.env_kwargs_with_prior, **self.eval_env_kwargs}

    def to_yaml(self) -> dict[str, Any]:
        """The fields as ``config.yml`` holds them (plain YAML types)."""
        return plain({f.name: getattr(self, f.name).model_dump() if f.name == "extras" else getattr(self, f.name)
                      for f in fields(self)})

    @classmethod
    def from_yaml(cls, data: Mapping[str, Any]) -> TrainConfig:
        """The config of ``config.yml``'s ``data``; a run folder written before ``extras`` had its
        own entry keeps them among its ``hyperparameters``, and they are taken from there."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown config.yml keys: {', '.join(unknown)}")
        hyperparams = dict(data.get("hyperparams") or {})
        extras = data.get("extras")
        if extras is None:
            extras = {key: hyperparams.pop(key) for key in TrainingExtras.model_fields if key in hyperparams}
        return cls(**{**data, "hyperparams": hyperparams, "extras": validate(TrainingExtras, extras, "extras")})


def plain(value: Any) -> Any:
    """``value`` with tuples as lists and numpy scalars as Python numbers (for YAML)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    return value


def load_run_config(run_dir: str | Path) -> TrainConfig:
    """The :class:`TrainConfig` of a run folder, or of an rl_zoo3 run folder
    (:func:`upright.policies.rl_zoo.rl_zoo_config_fields`); ValueError when ``run_dir`` is neither."""
    path = Path(run_dir) / "config.yml"
    if not path.is_file():
        if is_rl_zoo_run(run_dir):
            return TrainConfig.from_yaml(rl_zoo_config_fields(run_dir))
        raise ValueError(f"{str(run_dir)!r} is not a run folder (no config.yml)")
    data = read_yaml_mapping(path, "run config")
    try:
        return TrainConfig.from_yaml(data)
    except (TypeError, ValueError) as error:  # a field missing, an unknown key
        raise ValueError(f"run config {str(path)!r}: {error}") from None


#: learning_curve.csv columns: environment steps, wall-clock seconds since the run started (resumes
#: included), then the get-up or walk numbers (empty when they do not apply).
CURVE_COLUMNS = ("steps", "wall_seconds", "success_rate", "success_ci_low", "success_ci_high", "stood_up_rate",
                 "time_to_stand", "falls", "fall_rate", "vx", "vy", "wz", "linear_tracking_error",
                 "yaw_tracking_error", "mean_return")


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """Make ``path`` by ``write(temporary)``, a temporary file in the same folder, then
    ``os.replace``: a process killed meanwhile leaves the old ``path`` (or none) and at most a
    hidden ``.NAME.PID.tmp``, never a half-written ``path``. The data is flushed to disk before
    the rename."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(temporary)
        descriptor = os.open(temporary, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as :func:`write_atomically` does."""
    write_atomically(path, lambda temporary: temporary.write_text(text))


def link_atomically(source: Path, path: Path) -> None:
    """``path`` becomes the content of ``source`` (a hard link, a copy where links fail), as
    :func:`write_atomically` does."""
    def link(temporary: Path) -> None:
        try:
            os.link(source, temporary)
        except OSError:
            shutil.copyfile(source, temporary)

    write_atomically(path, link)


def read_learning_curve(path: Path) -> list[dict[str, float | None]]:
    """The rows of a ``learning_curve.csv`` as numbers (None for empty cells); [] without the file."""
    if not path.is_file():
        return []
    with path.open(newline="") as file:
        return [{k: float(v) if v != "" else None for k, v in row.items()} for row in csv.DictReader(file)]


#: The file in a run folder that names its selected checkpoint (``upright experiment checkpoint-selection``).
SELECTION_FILE = "selection.json"


#: The chosen checkpoint's numbers in ``selection.json`` (get-up: rates; walk: falls and tracking).
SELECTION_NUMBERS = ("success_rate", "stood_up_rate", "fall_rate", "linear_tracking_error", "yaw_tracking_error")


def write_selection(run_dir: str | Path, selection: dict[str, Any]) -> None:
    """Name the run's selected checkpoint: ``selection`` holds ``model`` (its path in the run
    folder), ``steps``, the selection ``seed`` and ``episodes`` and its rates."""
    write_text_atomically(Path(run_dir) / SELECTION_FILE, json.dumps(selection, indent=1))


def read_selection(run_dir: str | Path) -> dict[str, Any]:
    """The run's :data:`SELECTION_FILE`; ValueError without it."""
    path = Path(run_dir) / SELECTION_FILE
    if not path.is_file():
        raise ValueError(f"run {str(run_dir)!r} has no {SELECTION_FILE}: run `upright experiment "
                         f"checkpoint-selection --set runs={run_dir}` first")
    return json.loads(path.read_text())


def read_manifest(entry: str | Path) -> dict[str, Any]:
    """The ``manifest.yml`` of a zoo entry folder (ValueError naming it when it is no YAML mapping)."""
    return read_yaml_mapping(Path(entry) / "manifest.yml", "zoo manifest")


def write_evaluation(entry: str | Path, evaluation: dict[str, Any]) -> None:
    """Store ``evaluation`` (held-out numbers) in the entry's manifest."""
    manifest = read_manifest(entry)
    manifest["evaluation"] = evaluation
    write_text_atomically(Path(entry) / "manifest.yml", yaml.safe_dump(manifest, sort_keys=False))


__all__ = ["CURRICULA", "CURVE_COLUMNS", "SELECTION_FILE", "SELECTION_NUMBERS", "TrainConfig", "TrainingExtras", "link_atomically", "load_run_config", "plain", "read_learning_curve", "read_manifest", "read_selection", "write_atomically", "write_evaluation", "write_selection", "write_text_atomically"]
