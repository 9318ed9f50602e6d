"""What a training run is: :class:`TrainConfig` (everything needed to rebuild its environment and
model, saved as the run folder's ``config.yml``), the hyperparameter files and their overrides.

``--set`` keys of ``upright train``:

- ``hp.KEY=VALUE`` (dotted below ``hp.``) overrides a hyperparameter: an argument of the SB3
  algorithm (``hp.learning_rate=1e-4``), of its policy (``hp.policy_kwargs.log_std_init=-3``,
  ``hp.policy_kwargs.net_arch=64,64``) or one of ours (:data:`OWN_KEYS`, e.g. ``hp.normalize=false``,
  ``hp.warmup_steps=5000``);
- ``params.KEY=VALUE`` overrides a parameter of the prior controller (env kwarg ``prior_params``);
- every other key is an environment keyword argument (``start=random``, ``conditions=competition``,
  ``residual_scale=0.3``, ``reward_scales.upright=2``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from upright.eval.settings import nested, split_settings

#: ``--set`` keys with this prefix are hyperparameters.
HP_PREFIX = "hp."
ALGOS = ("ppo", "sac", "td3")
#: Hyperparameters of ours, not SB3's: ``normalize`` (VecNormalize on observations, and on rewards
#: for on-policy algorithms), ``warmup_steps`` (environment steps during which the actor is frozen
#: and only the critic learns; 0 = off), ``zero_init`` (zero the actor's last layer; default: with a
#: prior), ``log_std_init`` (SAC: initial log-std of the actions; PPO takes it in policy_kwargs),
#: ``action_noise_sigma`` (TD3: Gaussian exploration noise, normalised action units),
#: ``initial_residual`` (PPO with a prior: the residual the policy starts from instead of zero, joint
#: target offsets in rad by actuator name, e.g. a hand-set correction that training refines),
#: ``imitate`` (PPO with a prior: a hand-designed residual, ``feedback:NAME`` or its ``.yml``, whose
#: rollouts the fresh actor is fitted to before PPO, :mod:`upright.training.imitation`) with
#: ``imitate_steps`` (environment steps of its rollouts; they count in the run's steps, so
#: ``warmup_steps`` must exceed them to freeze the actor after imitation), ``imitate_epochs``,
#: ``imitate_batch_size`` and ``imitate_learning_rate`` (the regression's Adam). A run stopped
#: during its imitation is saved as it stands; ``--resume`` goes on with PPO from that actor.
OWN_KEYS = ("normalize", "warmup_steps", "zero_init", "log_std_init", "action_noise_sigma", "initial_residual",
            "imitate", "imitate_steps", "imitate_epochs", "imitate_batch_size", "imitate_learning_rate")
#: Defaults of the imitation keys when ``imitate`` is set.
IMITATE_DEFAULTS = {"imitate_steps": 100_000, "imitate_epochs": 20, "imitate_batch_size": 1024,
                    "imitate_learning_rate": 1e-3}
ACTIVATIONS = ("tanh", "relu", "elu", "leaky_relu")


@dataclass
class TrainConfig:
    """One training run. ``env_kwargs`` excludes the prior (``prior``); ``hyperparams`` are the
    resolved ones (file + overrides) once :func:`resolve` has run."""

    env_id: str
    prior: str | None = None
    algo: str = "ppo"
    steps: int = 100_000
    #: DummyVecEnv copies: 4 batch the policy's forward pass, so PPO trains at about 0.6 of the
    #: environment alone on 2 cores (``upright bench --training``: 0.57-0.67 with 4, 0.52-0.57 with 2).
    n_envs: int = 4
    seed: int = 0
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    hyperparams: dict[str, Any] = field(default_factory=dict)
    #: Hyperparameter file (default: the shipped ``training/hyperparams/<algo>.yml``).
    hyperparams_file: str | None = None
    #: Overrides (dotted keys without ``hp.``) applied over the file.
    hp_overrides: dict[str, Any] = field(default_factory=dict)
    out: str = "runs"
    name: str | None = None
    #: Start from this trained policy's weights and normalisation statistics (a run folder, one of
    #: its ``.zip`` files or ``zoo:NAME``; the same algorithm and spaces) instead of a fresh,
    #: zero-initialised actor: fine-tuning, as rl-baselines3-zoo's ``--trained-agent``. None: fresh.
    init: str | None = None
    #: Evaluate every this many environment steps (0 = never) on ``eval_episodes`` held-out seeds.
    eval_every: int = 10_000
    eval_episodes: int = 10
    #: First seed of the evaluation episodes (held out: training seeds start at ``seed``).
    eval_seed: int = 1_000_000
    #: Environment keyword arguments that replace ``env_kwargs`` in the periodic evaluation (as
    #: rl-baselines3-zoo's ``eval_env_kwargs``): the task the policy is for, when training sees a
    #: wider distribution (e.g. ``start`` with extra standing starts). Loading and shipping the run
    #: use the evaluation environment too. Empty: evaluate on the training environment.
    eval_env_kwargs: dict[str, Any] = field(default_factory=dict)
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
        return _plain(asdict(self))

    @classmethod
    def from_yaml(cls, data: Mapping[str, Any]) -> TrainConfig:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown config.yml keys: {', '.join(unknown)}")
        return cls(**data)


def _plain(value: Any) -> Any:
    """``value`` with tuples as lists and numpy scalars as Python numbers (for YAML)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    return value


def split_train_settings(settings: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(env_kwargs, hp_overrides)`` from parsed ``--set`` items: ``hp.`` keys (prefix removed)
    are hyperparameters, ``params.`` keys become ``env_kwargs["prior_params"]``, the rest env kwargs."""
    hp = {k[len(HP_PREFIX):]: v for k, v in settings.items() if k.startswith(HP_PREFIX)}
    env_kwargs, params = split_settings({k: v for k, v in settings.items() if not k.startswith(HP_PREFIX)})
    if params:
        env_kwargs["prior_params"] = params
    return env_kwargs, hp


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(dict(merged[key]), value)
        else:
            merged[key] = value
    return merged


def load_hyperparams(algo: str, env_id: str, prior: str | None, path: str | Path | None = None,
                     overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The hyperparameters of ``algo`` for ``env_id`` and ``prior`` from ``path`` (default: the
    shipped file): ``default``, then ``env_id``, then ``env_id:prior`` (``scratch`` without prior),
    then ``overrides`` (dotted keys). Checked by :func:`check_hyperparams`."""
    if path is None:
        text = resources.files("upright.training").joinpath("hyperparams", f"{algo}.yml").read_text()
    else:
        if not Path(path).is_file():
            raise ValueError(f"hyperparameter file {str(path)!r} does not exist")
        text = Path(path).read_text()
    table = yaml.safe_load(text) or {}
    hp: dict[str, Any] = {}
    for key in ("default", env_id, f"{env_id}:{prior or 'scratch'}"):
        hp = _merge(hp, table.get(key) or {})
    hp = _merge(hp, nested(overrides or {}))
    check_hyperparams(algo, hp)
    return hp


def algo_class(algo: str) -> type:
    """The SB3 class of ``algo`` (ValueError naming an unknown one)."""
    import stable_baselines3

    if algo not in ALGOS:
        raise ValueError(f"unknown algorithm {algo!r}; valid algorithms: {', '.join(ALGOS)}")
    return getattr(stable_baselines3, algo.upper())


def check_hyperparams(algo: str, hp: Mapping[str, Any]) -> None:
    """ValueError naming the first hyperparameter that ``algo`` (or its MlpPolicy) does not take."""
    cls = algo_class(algo)
    reserved = {"self", "policy", "env", "seed", "tensorboard_log", "verbose", "device", "_init_setup_model"}
    valid = (set(inspect.signature(cls.__init__).parameters) - reserved) | set(OWN_KEYS)
    for key in hp:
        if key not in valid:
            raise ValueError(f"unknown {algo} hyperparameter {key!r}; valid: {', '.join(sorted(valid))}")
    policy_valid = set(inspect.signature(cls.policy_aliases["MlpPolicy"].__init__).parameters) - {
        "self", "observation_space", "action_space", "lr_schedule"}
    for key in hp.get("policy_kwargs", {}) or {}:
        if key not in policy_valid:
            raise ValueError(f"unknown {algo} hyperparameter 'policy_kwargs.{key}'; "
                             f"valid: {', '.join(sorted(policy_valid))}")
    activation = (hp.get("policy_kwargs") or {}).get("activation_fn")
    if activation is not None and activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation_fn {activation!r}; valid: {', '.join(ACTIVATIONS)}")


def model_kwargs(hp: Mapping[str, Any]) -> dict[str, Any]:
    """The SB3 constructor arguments of hyperparameters ``hp`` (our own keys removed, activation
    names as torch classes, network sizes as ints)."""
    import torch

    kwargs = {k: v for k, v in hp.items() if k not in OWN_KEYS}
    policy_kwargs = dict(kwargs.get("policy_kwargs") or {})
    if "activation_fn" in policy_kwargs:
        policy_kwargs["activation_fn"] = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU, "elu": torch.nn.ELU,
                                          "leaky_relu": torch.nn.LeakyReLU}[policy_kwargs["activation_fn"]]
    if "net_arch" in policy_kwargs:
        arch = policy_kwargs["net_arch"]
        policy_kwargs["net_arch"] = ({k: [int(n) for n in v] for k, v in arch.items()} if isinstance(arch, Mapping)
                                     else [int(n) for n in arch])
    if policy_kwargs:
        kwargs["policy_kwargs"] = policy_kwargs
    return kwargs


def next_run_dir(out: str | Path, env_id: str, algo: str, prior: str | None, name: str | None = None) -> Path:
    """``out/<env>/<algo>-<prior|scratch>-<n>`` with the next free ``n`` (from 1), or
    ``out/<env>/<name>`` when a name is given (ValueError if that folder exists)."""
    base = Path(out) / env_id.split("/")[-1]
    if name is not None:
        if (base / name).exists():
            raise ValueError(f"run folder {str(base / name)!r} already exists (use --resume to continue it)")
        return base / name
    stem = f"{algo}-{prior or 'scratch'}"
    taken = [int(p.name.rsplit("-", 1)[1]) for p in base.glob(f"{stem}-*") if p.name.rsplit("-", 1)[1].isdigit()]
    return base / f"{stem}-{max(taken, default=0) + 1}"


def load_run_config(run_dir: str | Path) -> TrainConfig:
    """The :class:`TrainConfig` of a run folder (ValueError when ``run_dir`` is no run folder)."""
    path = Path(run_dir) / "config.yml"
    if not path.is_file():
        raise ValueError(f"{str(run_dir)!r} is not a run folder (no config.yml)")
    return TrainConfig.from_yaml(yaml.safe_load(path.read_text()))


__all__ = ["ALGOS", "HP_PREFIX", "IMITATE_DEFAULTS", "OWN_KEYS", "TrainConfig", "algo_class", "check_hyperparams", "load_hyperparams",
           "load_run_config", "model_kwargs", "next_run_dir", "split_train_settings"]
