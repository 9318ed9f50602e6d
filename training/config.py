"""How a training run is configured: the hyperparameter files and their overrides, and the checks
of a :class:`~upright.policies.run_folder.TrainConfig` (the run folder's ``config.yml``).

``--set`` keys of ``upright train``:

- ``hp.KEY=VALUE`` (dotted below ``hp.``) overrides a hyperparameter: an argument of the SB3
  algorithm (``hp.learning_rate=1e-4``), of its policy (``hp.policy_kwargs.log_std_init=-3``,
  ``hp.policy_kwargs.net_arch=64,64``, ``hp.policy_kwargs.activation_fn=relu``: :data:`ACTIVATIONS`)
  or one of ours (:data:`OWN_KEYS`, e.g. ``hp.normalize=false``, ``hp.warmup_steps=5000``);
- ``params.KEY=VALUE`` overrides a parameter of the prior controller (env kwarg ``prior_params``);
- every other key is an environment keyword argument (``start=random``, ``conditions=competition``,
  ``residual_scale=0.3``, ``reward_scales.upright=2``).
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from upright.eval.settings import env_settings, nested, split_settings
from upright.policies.algorithms import algo_class, algorithm
from upright.envs.files import read_yaml_mapping
from upright.policies.run_folder import TrainConfig

#: ``--set`` keys with this prefix are hyperparameters.
HP_PREFIX = "hp."
#: Hyperparameters of ours, not SB3's: ``normalize`` (VecNormalize on observations, and on rewards
#: for on-policy algorithms), ``warmup_steps`` (environment steps during which the actor is frozen
#: and only the critic learns; 0 = off), ``zero_init`` (zero the actor's last layer; default: with a
#: prior), ``log_std_init`` (SAC: initial log-std of the actions; PPO takes it in policy_kwargs),
#: ``action_noise_sigma`` (TD3: Gaussian exploration noise, normalised action units),
#: ``initial_residual`` (PPO with a prior: the residual the policy starts from instead of zero, joint
#: target offsets in rad by actuator name, e.g. a hand-set correction that training refines),
#: ``privileged_critic`` (PPO, A2C: an asymmetric actor-critic, whose value network also reads
#: privileged simulator state, :mod:`upright.envs.privileged`, while the actor reads the robot's
#: observation; fine-tuning a symmetric policy widens its critic with zero weights),
#: ``imitate`` (PPO with a prior: a hand-designed residual, ``feedback:NAME`` or its ``.yml``, whose
#: rollouts the fresh actor is fitted to before PPO, :mod:`upright.training.imitation`) with
#: ``imitate_steps`` (environment steps of its rollouts; they count in the run's steps, so
#: ``warmup_steps`` must exceed them to freeze the actor after imitation), ``imitate_epochs``,
#: ``imitate_batch_size`` and ``imitate_learning_rate`` (the regression's Adam). A run stopped
#: during its imitation is saved as it stands; ``--resume`` goes on with PPO from that actor.
#: ``update_threads`` (default 1): torch threads of the training process during the gradient
#: updates, while collection keeps one. With SubprocVecEnv on many cores the workers are idle
#: during the update, so the update may use their cores; more threads change the last bits of the
#: weights (torch splits the sums differently), so a run keeps its count.
#: ``push_curriculum_start`` (a fraction in [0, 1]) and ``push_curriculum_steps``: a curriculum over
#: the conditions' continuous random torso push (e.g. ``thesis``'s): the training copies feel that
#: fraction of it at the start, rising linearly to all of it at that many environment steps
#: (:class:`~upright.training.callbacks.LinearCurriculum`); the periodic evaluation feels all of it.
#: ``model_curriculum_start`` and ``model_curriculum_steps``: the same over the conditions' model
#: variation (servo factors, zero offsets, torso load, sensor latency; ``sim2real``'s): at the start
#: the training copies' draws keep that fraction of it, toward our own model.
OWN_KEYS = ("normalize", "warmup_steps", "zero_init", "log_std_init", "action_noise_sigma", "initial_residual",
            "privileged_critic", "imitate", "imitate_steps", "imitate_epochs", "imitate_batch_size", "imitate_learning_rate",
            "update_threads", "push_curriculum_start", "push_curriculum_steps", "model_curriculum_start",
            "model_curriculum_steps")
#: Defaults of the imitation keys when ``imitate`` is set.
IMITATE_DEFAULTS = {"imitate_steps": 100_000, "imitate_epochs": 20, "imitate_batch_size": 1024,
                    "imitate_learning_rate": 1e-3}
#: Values of ``hp.policy_kwargs.activation_fn``, the hidden layers' activation (torch's Tanh, ReLU,
#: ELU, LeakyReLU; SB3's default is tanh, the shipped hyperparameter files say relu). ``upright
#: export --ops compiled-nn`` needs relu: B-Human's CompiledNN has no Tanh, ELU or LeakyReLU.
ACTIVATIONS = ("tanh", "relu", "elu", "leaky_relu")
#: The counts of a run and their least values (``eval_every`` 0: never evaluate).
COUNTS = {"steps": 1, "n_envs": 1, "seed": 0, "eval_every": 0, "eval_episodes": 1, "eval_seed": 0,
          "checkpoint_every": 1}


#: The vector environment choices of ``upright train --vec-env`` (``TrainConfig.vec_env``), built by
#: :func:`upright.training.vec_env.make_train_env`.
VEC_ENVS = ("auto", "dummy", "subproc", "batched")
#: The fewest usable cores at which ``auto`` runs the copies in worker processes. The policy's
#: forward pass and PPO's update run in the parent between vector steps, so workers gain where
#: the cores step the copies side by side and leave the parent a core of its own; below that, the
#: pipes' traffic costs about what the parallel stepping wins (``upright bench --training
#: --n-envs 1,2,4`` measures both classes on the machine at hand).
SUBPROC_MIN_CORES = 4


#: The fewest copies at which ``auto`` below :data:`SUBPROC_MIN_CORES` cores spreads them over one
#: worker per core (``batched``): each worker then steps several copies per message, which paid
#: from 8 copies on a 2-core machine and cost at 2-4 (``upright bench --training --n-envs 2,4,8
#: --vec-env dummy,subproc,batched``, docs/training.md).
BATCHED_MIN_ENVS = 8


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def batch_workers(n_envs: int, cores: int | None = None) -> int:
    """The worker processes of ``batched`` for ``n_envs`` copies: one per usable core (default:
    :func:`usable_cores`), at most one per copy."""
    return max(1, min(n_envs, usable_cores() if cores is None else cores))


def check_vec_env(choice: Any) -> None:
    """ValueError naming ``choice`` unless it is one of :data:`VEC_ENVS`."""
    if choice not in VEC_ENVS:
        raise ValueError(f"vec_env must be one of {', '.join(VEC_ENVS)}, got {choice!r}")


def choose_vec_env(choice: str, n_envs: int, cores: int | None = None) -> str:
    """The vector environment class (``dummy``, ``subproc`` or ``batched``) that ``choice`` means for
    ``n_envs`` copies on ``cores`` usable cores (default: :func:`usable_cores`): ``auto`` is
    ``subproc`` with more than one copy and at least :data:`SUBPROC_MIN_CORES` cores; below that,
    ``batched`` from :data:`BATCHED_MIN_ENVS` copies on more than one core, else ``dummy``."""
    check_vec_env(choice)
    if choice != "auto":
        return choice
    cores = usable_cores() if cores is None else cores
    if n_envs > 1 and cores >= SUBPROC_MIN_CORES:
        return "subproc"
    return "batched" if n_envs >= BATCHED_MIN_ENVS and cores > 1 else "dummy"


def _integral(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer())


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class Rule(NamedTuple):
    """What a value must be: ``text`` says it, ``valid`` checks it; ``integer`` values are passed on
    as ints (``--set hp.buffer_size=1e5`` parses as a float)."""

    text: str
    valid: Callable[[Any], bool]
    integer: bool = False


def _count(least: int) -> Rule:
    return Rule(f"an integer >= {least}", lambda v: _integral(v) and v >= least, integer=True)


def _above(low: float, high: float = math.inf, *, closed: bool = False) -> Rule:
    text = f"a number {'>=' if closed else '>'} {low:g}" + (f" and <= {high:g}" if high < math.inf else "")
    return Rule(text, lambda v: _number(v) and (v >= low if closed else v > low) and v <= high)


def _or_none(rule: Rule) -> Rule:
    return Rule(f"{rule.text} or none", lambda v: v is None or rule.valid(v), rule.integer)


_BOOLEAN = Rule("true or false", lambda v: isinstance(v, bool))
_FINITE = Rule("a finite number", _number)
#: What each hyperparameter with a value range must be (checked by :func:`check_hyperparams`, so a
#: bad value is named before a run starts).
VALUE_RULES: dict[str, Rule] = {
    "learning_rate": _above(0), "n_steps": _count(1), "batch_size": _count(1), "n_epochs": _count(1),
    "gamma": _above(0, 1), "gae_lambda": _above(0, 1, closed=True), "clip_range": _above(0),
    "clip_range_vf": _or_none(_above(0)), "vf_coef": _above(0, closed=True), "max_grad_norm": _above(0),
    "target_kl": _or_none(_above(0)), "sde_sample_freq": _count(-1), "buffer_size": _count(1),
    "learning_starts": _count(0), "tau": _above(0, 1), "gradient_steps": _count(-1),
    "target_update_interval": _count(1), "policy_delay": _count(1), "target_policy_noise": _above(0, closed=True),
    "target_noise_clip": _above(0, closed=True), "use_sde": _BOOLEAN, "normalize_advantage": _BOOLEAN,
    "normalize": _BOOLEAN, "zero_init": _BOOLEAN, "privileged_critic": _BOOLEAN, "warmup_steps": _count(0), "log_std_init": _FINITE,
    "action_noise_sigma": _above(0, closed=True), "imitate_steps": _count(1), "imitate_epochs": _count(1),
    "imitate_batch_size": _count(1), "imitate_learning_rate": _above(0), "update_threads": _count(1),
    "push_curriculum_start": _above(0, 1, closed=True), "push_curriculum_steps": _count(1),
    "model_curriculum_start": _above(0, 1, closed=True), "model_curriculum_steps": _count(1),
    "policy_kwargs.log_std_init": _FINITE, "policy_kwargs.ortho_init": _BOOLEAN,
}


def split_train_settings(settings: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(env_kwargs, hp_overrides)`` from parsed ``--set`` items: ``hp.`` keys (prefix removed)
    are hyperparameters, ``params.`` keys become ``env_kwargs["prior_params"]``, the rest env kwargs."""
    hp = {k[len(HP_PREFIX):]: v for k, v in settings.items() if k.startswith(HP_PREFIX)}
    env_kwargs, params = split_settings({k: v for k, v in settings.items() if not k.startswith(HP_PREFIX)})
    return env_settings(env_kwargs, params), hp


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
        table = yaml.safe_load(resources.files("upright.training").joinpath("hyperparams", f"{algo}.yml").read_text())
    else:
        table = read_yaml_mapping(path, "hyperparameter file")
    hp: dict[str, Any] = {}
    for key in ("default", env_id, f"{env_id}:{prior or 'scratch'}"):
        block = table.get(key) or {}
        if not isinstance(block, Mapping):
            raise ValueError(f"hyperparameter file {str(path)!r}: {key} must be a mapping of hyperparameters, "
                             f"not a {type(block).__name__}")
        hp = _merge(hp, block)
    hp = _merge(hp, nested(overrides or {}))
    check_hyperparams(algo, hp)
    return hp


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
    check_values(algo, hp)


def check_values(algo: str, hp: Mapping[str, Any]) -> None:
    """ValueError naming the first hyperparameter of ``hp`` whose value is out of its range
    (:data:`VALUE_RULES`), a ``train_freq``, ``ent_coef`` or ``policy_kwargs.net_arch`` of the
    wrong form, or a ``batch_size`` PPO cannot normalise advantages over."""
    policy_kwargs = hp.get("policy_kwargs") or {}
    if not isinstance(policy_kwargs, Mapping):
        raise ValueError(f"hp.policy_kwargs must be a mapping of policy arguments, got {policy_kwargs!r}")
    values = {**hp, **{f"policy_kwargs.{k}": v for k, v in policy_kwargs.items()}}
    for key, rule in VALUE_RULES.items():
        if key in values and not rule.valid(values[key]):
            raise ValueError(f"hp.{key} must be {rule.text}, got {values[key]!r}")
    for curriculum in ("push_curriculum", "model_curriculum"):
        start, steps = f"{curriculum}_start", f"{curriculum}_steps"
        if (start in hp) != (steps in hp):
            missing = steps if start in hp else start
            raise ValueError(f"hp.{start} and hp.{steps} go together; hp.{missing} is missing")
    if algorithm(algo).batch_advantages and "batch_size" in hp and hp["batch_size"] < 2:
        raise ValueError(f"hp.batch_size must be >= 2 for {algo} (advantages are normalised per batch), "
                         f"got {hp['batch_size']!r}")
    if "train_freq" in hp:
        freq = hp["train_freq"]
        pair = isinstance(freq, (list, tuple)) and len(freq) == 2 and freq[1] in ("step", "episode")
        if not (_integral(freq) and freq >= 1) and not (pair and _integral(freq[0]) and freq[0] >= 1):
            raise ValueError(f"hp.train_freq must be an integer >= 1 or [N, step|episode], got {freq!r}")
    if "ent_coef" in hp:
        coef = hp["ent_coef"]
        learnable = algorithm(algo).learned_entropy
        learned = learnable and isinstance(coef, str) and (coef == "auto" or coef.startswith("auto_"))
        if not learned and not (_number(coef) and coef >= 0):
            raise ValueError(f"hp.ent_coef must be a number >= 0{' or auto[_INITIAL]' if learnable else ''}, "
                             f"got {coef!r}")
    if "net_arch" in policy_kwargs:
        _check_net_arch(algo, policy_kwargs["net_arch"])


def _check_net_arch(algo: str, arch: Any) -> None:
    def layers(value: Any) -> bool:
        return isinstance(value, (list, tuple)) and all(_integral(n) and n >= 1 for n in value)

    names = algorithm(algo).net_arch_keys
    if isinstance(arch, Mapping):
        if set(arch) - set(names) or not all(layers(v) for v in arch.values()):
            raise ValueError(f"hp.policy_kwargs.net_arch must map {' and '.join(names)} to lists of layer sizes, "
                             f"got {arch!r}")
    elif not layers(arch):
        raise ValueError(f"hp.policy_kwargs.net_arch must be a list of layer sizes (e.g. 64,64) or a mapping of "
                         f"{' and '.join(names)} to such lists, got {arch!r}")


def check_counts(config: TrainConfig) -> None:
    """ValueError naming the first count of ``config`` (:data:`COUNTS`: steps, environments, seeds,
    evaluation and checkpoint intervals, evaluation episodes) that is not an integer at least its
    least value, a non-boolean ``progress``, a ``vec_env`` not in :data:`VEC_ENVS` and a ``name``
    that is no folder name (:func:`check_run_name`)."""
    for name, least in COUNTS.items():
        value = getattr(config, name)
        if not (_integral(value) and value >= least):
            raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    if not isinstance(config.progress, bool):
        raise ValueError(f"progress must be true or false, got {config.progress!r}")
    check_vec_env(config.vec_env)
    check_run_name(config.name)


def check_run_name(name: str | None) -> None:
    """ValueError unless ``name`` (``--name``, the run folder's name) is None or one folder name: a
    name with a path separator, an absolute path, an empty name, ``.`` or ``..`` would put the run
    folder outside ``out/<env>/`` or make it that folder itself."""
    if name is not None and (name in ("", ".", "..") or Path(name).name != name):
        raise ValueError(f"name must be one folder name (no '/', not empty, '.' or '..'), got {name!r}")


def model_kwargs(hp: Mapping[str, Any]) -> dict[str, Any]:
    """The SB3 constructor arguments of hyperparameters ``hp`` (our own keys removed, activation
    names as torch classes, network sizes as ints)."""
    import torch  # torch: only when a model is built

    kwargs = {k: int(v) if k in VALUE_RULES and VALUE_RULES[k].integer and v is not None else v
              for k, v in hp.items() if k not in OWN_KEYS}
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


__all__ = ["BATCHED_MIN_ENVS", "COUNTS", "HP_PREFIX", "IMITATE_DEFAULTS", "OWN_KEYS", "Rule", "SUBPROC_MIN_CORES", "VALUE_RULES", "VEC_ENVS",
           "batch_workers", "check_counts", "check_hyperparams", "check_run_name", "check_values", "check_vec_env",
           "choose_vec_env", "load_hyperparams", "model_kwargs", "next_run_dir", "split_train_settings", "usable_cores"]
