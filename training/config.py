"""How a training run is configured: the hyperparameter files and their overrides, and the checks
of a :class:`~upright.policies.run_folder.TrainConfig` (the run folder's ``config.yml``).

``--set`` keys of ``upright train``:

- ``hp.KEY=VALUE`` (dotted below ``hp.``) overrides a hyperparameter: an argument of the SB3
  algorithm (``hp.learning_rate=1e-4``), of its policy (``hp.policy_kwargs.log_std_init=-3``,
  ``hp.policy_kwargs.net_arch=64,64``, ``hp.policy_kwargs.activation_fn=relu``: :data:`ACTIVATIONS`)
  or one of ours, the training extras (:class:`~upright.policies.run_folder.TrainingExtras`, e.g.
  ``hp.normalize=false``, ``hp.warmup_steps=5000``);
- ``params.KEY=VALUE`` overrides a parameter of the prior controller (env kwarg ``prior_params``);
- every other key is an environment keyword argument (``start=random``, ``conditions=competition``,
  ``residual_scale=0.3``, ``reward_scales.upright=2``).

A hyperparameter file (``training/hyperparams/<algo>.yml``: blocks ``default``, ``<env id>`` and
``<env id>:<prior>``) and the ``hp.`` overrides are checked by the algorithm's schema,
:func:`hyperparameter_schema` (:mod:`upright.envs.schema`): the training extras and the SB3
arguments its constructor and its policy take, with the ranges of :func:`sb3_types`; an unknown key
is a one-line error naming the file (or ``--set``), the key and the valid keys.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, create_model

from upright.envs.schema import Schema, validate
from upright.eval.settings import env_settings, nested, split_settings
from upright.policies.algorithms import Algorithm, algo_class, algorithm
from upright.envs.files import read_yaml_mapping
from upright.policies.run_folder import TrainConfig, TrainingExtras

#: ``--set`` keys with this prefix are hyperparameters.
HP_PREFIX = "hp."
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


#: The constructor arguments of an SB3 algorithm that are no hyperparameters.
RESERVED = ("self", "policy", "env", "seed", "tensorboard_log", "verbose", "device", "_init_setup_model")
#: The MlpPolicy arguments that are no hyperparameters.
POLICY_RESERVED = ("self", "observation_space", "action_space", "lr_schedule")
#: An integer at least 1 (a count), at least 0, at least -1 (SB3's -1: as many as collected).
Count = Annotated[int, Field(ge=1)]
NonNegative = Annotated[int, Field(ge=0)]
CountOrAll = Annotated[int, Field(ge=-1)]
#: A number above 0, at least 0, in (0, 1], in [0, 1].
Positive = Annotated[float, Field(gt=0)]
NonNegativeNumber = Annotated[float, Field(ge=0)]
Fraction = Annotated[float, Field(gt=0, le=1)]
ClosedFraction = Annotated[float, Field(ge=0, le=1)]


def policy_types(algo: Algorithm) -> dict[str, Any]:
    """The types of the ``policy_kwargs`` that we check, for ``algo`` (the others: as SB3 takes
    them): ``net_arch`` a list of layer sizes or a mapping of the algorithm's networks to such lists."""
    layers = list[Count]
    return {"log_std_init": float, "ortho_init": bool, "activation_fn": Literal[ACTIVATIONS],
            "net_arch": layers | dict[Literal[algo.net_arch_keys], layers]}  # type: ignore[valid-type]


def sb3_types(algo: Algorithm) -> dict[str, Any]:
    """The types and ranges of SB3's hyperparameters that we check, for ``algo`` (the others: as
    SB3 takes them), so that a bad value is named before a run starts: ``batch_size`` at least 2
    where advantages are normalised per batch, ``ent_coef`` also ``auto[_INITIAL]`` where it is
    learned, ``train_freq`` N or [N, step|episode]."""
    entropy = NonNegativeNumber | Annotated[str, Field(pattern=r"^auto(_.+)?$")] if algo.learned_entropy \
        else NonNegativeNumber
    return {
        "learning_rate": Positive, "n_steps": Count, "n_epochs": Count, "gamma": Fraction,
        "batch_size": Annotated[int, Field(ge=2 if algo.batch_advantages else 1)], "gae_lambda": ClosedFraction,
        "clip_range": Positive, "clip_range_vf": Positive | None, "vf_coef": NonNegativeNumber,
        "max_grad_norm": Positive, "target_kl": Positive | None, "sde_sample_freq": CountOrAll, "buffer_size": Count,
        "learning_starts": NonNegative, "tau": Fraction, "gradient_steps": CountOrAll, "target_update_interval": Count,
        "policy_delay": Count, "target_policy_noise": NonNegativeNumber, "target_noise_clip": NonNegativeNumber,
        "use_sde": bool, "normalize_advantage": bool, "ent_coef": entropy,
        "train_freq": Count | tuple[Count, Literal["step", "episode"]],
    }


def _fields(names: Any, types: Mapping[str, Any]) -> dict[str, Any]:
    """pydantic field definitions of ``names``: the type of ``types``, else any value; default: unset."""
    return {name: (types.get(name, Any) | None, None) for name in names}


@cache
def hyperparameter_schema(algo: str) -> type[Schema]:
    """The schema of one block of ``algo``'s hyperparameters: the training extras
    (:class:`~upright.policies.run_folder.TrainingExtras`, without the checks that need the whole
    run's) and the arguments of its SB3 constructor and of its MlpPolicy (``policy_kwargs``), with
    the types of :func:`sb3_types` and :func:`policy_types`. ValueError for an unknown algorithm."""
    spec, cls = algorithm(algo), algo_class(algo)
    names = [n for n in inspect.signature(cls.__init__).parameters if n not in RESERVED]
    clash = set(names) & set(TrainingExtras.model_fields)
    assert not clash, f"SB3's {algo} takes hyperparameters named as training extras: {clash}"
    policy = [n for n in inspect.signature(cls.policy_aliases["MlpPolicy"].__init__).parameters
              if n not in POLICY_RESERVED]
    title = algo.upper()
    kwargs = create_model(f"{title}PolicyKwargs", __base__=Schema, **_fields(policy, policy_types(spec)))
    return create_model(f"{title}Hyperparameters", __base__=Schema,
                        **{name: (info.annotation, info) for name, info in TrainingExtras.model_fields.items()},
                        **_fields([n for n in names if n != "policy_kwargs"], sb3_types(spec)),
                        policy_kwargs=(kwargs | None, None))


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
                     overrides: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], TrainingExtras]:
    """SB3's hyperparameters and the training extras of ``algo`` for ``env_id`` and ``prior`` from
    ``path`` (default: the shipped file): ``default``, then ``env_id``, then ``env_id:prior``
    (``scratch`` without prior), then ``overrides`` (dotted keys), each checked against
    :func:`hyperparameter_schema` (ValueError naming the file or ``--set``, the key and what is
    valid), the result once more with the checks of the whole (:class:`TrainingExtras`)."""
    schema = hyperparameter_schema(algo)
    if path is None:
        where = f"training/hyperparams/{algo}.yml"
        table = yaml.safe_load(resources.files("upright.training").joinpath("hyperparams", f"{algo}.yml").read_text())
    else:
        where = f"hyperparameter file {str(path)!r}"
        table = read_yaml_mapping(path, "hyperparameter file")
    validate(dict[str, schema | None], table, where)  # every block, also those of other environments
    over = nested(overrides or {})
    validate(create_model(f"{algo.upper()}Overrides", __base__=Schema, hp=(schema, ...)), {"hp": over}, "--set")
    hp: dict[str, Any] = {}
    for key in ("default", env_id, f"{env_id}:{prior or 'scratch'}"):
        hp = _merge(hp, table.get(key) or {})
    given = validate(schema, _merge(hp, over), f"{algo} hyperparameters of {env_id}").model_dump(exclude_unset=True)
    extras = {key: given.pop(key) for key in TrainingExtras.model_fields if key in given}
    return given, validate(TrainingExtras, extras, f"{algo} hyperparameters of {env_id}")


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
    """The SB3 constructor arguments of SB3's hyperparameters ``hp`` (activation names as torch
    classes)."""
    import torch  # torch: only when a model is built

    kwargs = dict(hp)
    policy_kwargs = dict(kwargs.get("policy_kwargs") or {})
    if "activation_fn" in policy_kwargs:
        policy_kwargs["activation_fn"] = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU, "elu": torch.nn.ELU,
                                          "leaky_relu": torch.nn.LeakyReLU}[policy_kwargs["activation_fn"]]
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


__all__ = ["ACTIVATIONS", "BATCHED_MIN_ENVS", "COUNTS", "HP_PREFIX", "POLICY_RESERVED", "RESERVED", "SUBPROC_MIN_CORES",
           "VEC_ENVS", "batch_workers", "check_counts", "check_run_name", "check_vec_env", "choose_vec_env",
           "hyperparameter_schema", "load_hyperparams", "model_kwargs", "next_run_dir", "policy_types", "sb3_types",
           "split_train_settings", "usable_cores"]
