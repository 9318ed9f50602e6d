"""Run folders of rl-baselines3-zoo (``python -m rl_zoo3.train ... --gym-packages upright``) read
as runs of ``upright train``, so that ``upright eval`` and ``upright export`` take them.

rl_zoo3's layout: ``LOG/ALGO/ENV_N/`` holds the last model ``ENV.zip`` (ENV: the id with ``/``
as ``-``), ``best_model.zip`` when it evaluated, checkpoints ``rl_model_N_steps.zip`` (with
``rl_model_vecnormalize_N_steps.pkl`` when it normalised), and the folder ``ENV/`` with
``args.yml`` (its command line: algo, env, env_kwargs, seed, n_timesteps), ``config.yml`` (the
hyperparameters: normalize, n_envs, env_kwargs) and ``vecnormalize.pkl`` (the statistics at the
end of training, which rl_zoo3's own ``enjoy`` uses for every model of the run).

Both YAML files are OrderedDicts pickled as YAML (``!!python/object/apply``); they are read with
a safe loader that knows only that one tag.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

#: A checkpoint of rl_zoo3 (SB3's CheckpointCallback with its name prefix ``rl_model``).
ZOO_CHECKPOINT = re.compile(r"rl_model_(\d+)_steps\.zip")
#: The YAML tag of the OrderedDicts rl_zoo3 writes.
_ORDERED_DICT = "tag:yaml.org,2002:python/object/apply:collections.OrderedDict"


class _ZooLoader(yaml.SafeLoader):
    """A safe YAML loader that also reads rl_zoo3's OrderedDicts (as plain dicts)."""


def _ordered_dict(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
    arguments = loader.construct_sequence(node, deep=True)
    return dict(arguments[0]) if arguments else {}


_ZooLoader.add_constructor(_ORDERED_DICT, _ordered_dict)


def _read(path: Path) -> dict[str, Any] | None:
    """An rl_zoo3 YAML file as a dict; None when it is missing or no such file."""
    try:
        data = yaml.load(path.read_text(), Loader=_ZooLoader)  # noqa: S506 (a safe loader)
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def rl_zoo_params_dir(folder: str | Path) -> Path | None:
    """The ``ENV/`` folder of the rl_zoo3 run folder ``folder`` (its ``args.yml`` names ``algo``
    and ``env``, and ``config.yml`` beside it), or None when ``folder`` is no such run."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    for args_file in sorted(folder.glob("*/args.yml")):
        args = _read(args_file)
        params = args_file.parent
        named = args is not None and isinstance(args.get("algo"), str) and isinstance(args.get("env"), str)
        if named and params.name == args["env"].replace("/", "-") and (params / "config.yml").is_file():
            return params
    return None


def is_rl_zoo_run(folder: str | Path) -> bool:
    """Whether ``folder`` is a run folder of rl_zoo3 (:func:`rl_zoo_params_dir`)."""
    return rl_zoo_params_dir(folder) is not None


def _params(folder: Path) -> Path:
    params = rl_zoo_params_dir(folder)
    if params is None:
        raise ValueError(f"{str(folder)!r} is no rl_zoo3 run folder (no ENV/args.yml with ENV/config.yml)")
    return params


def rl_zoo_config_fields(folder: str | Path) -> dict[str, Any]:
    """The rl_zoo3 run ``folder`` as the fields of a :class:`~upright.policies.run_folder.TrainConfig`
    (which :func:`~upright.policies.run_folder.load_run_config` builds): algorithm, environment id, seed and
    steps from ``args.yml``; the environment keyword arguments of its command line
    (``--env-kwargs``), else those of its hyperparameters, as rl_zoo3 itself chooses (``prior``
    taken out as the run's prior); ``hyperparams`` from ``config.yml`` (``normalize`` true when
    the run normalised, also when it gave VecNormalize's arguments)."""
    folder = Path(folder)
    params = _params(folder)
    args = _read(params / "args.yml") or {}
    config = _read(params / "config.yml") or {}
    env_kwargs = dict(args.get("env_kwargs") or config.get("env_kwargs") or {})
    prior = env_kwargs.pop("prior", None)
    hyperparams = {k: v for k, v in config.items() if k not in ("n_timesteps", "policy", "n_envs", "env_kwargs")}
    hyperparams["normalize"] = bool(config.get("normalize"))
    steps = int(args.get("n_timesteps") or 0) or int(config.get("n_timesteps") or 0)
    command = (params / "command.txt").read_text().strip() if (params / "command.txt").is_file() else ""
    return {"env_id": args["env"], "prior": prior, "algo": str(args["algo"]).lower(), "steps": max(steps, 1),
            "n_envs": int(config.get("n_envs") or 1), "seed": max(int(args.get("seed") or 0), 0),
            "env_kwargs": env_kwargs, "hyperparams": hyperparams, "out": str(folder.parent), "name": folder.name,
            "eval_every": 0, "command": command}


def rl_zoo_model(folder: str | Path) -> Path:
    """The model of the rl_zoo3 run ``folder`` that ``upright eval`` takes: the last one
    (``ENV.zip``), else ``best_model.zip``, else the newest checkpoint (a run stopped early);
    ValueError naming the files looked for when it has none."""
    folder = Path(folder)
    params = _params(folder)
    looked = [folder / f"{params.name}.zip", folder / "best_model.zip"]
    for path in looked:
        if path.is_file():
            return path
    checkpoints = sorted((int(m.group(1)), p) for p in folder.glob("rl_model_*_steps.zip")
                         if (m := ZOO_CHECKPOINT.fullmatch(p.name)))
    if checkpoints:
        return checkpoints[-1][1]
    raise ValueError(f"rl_zoo3 run {str(folder)!r} has no model: no {looked[0].name}, {looked[1].name} or "
                     "rl_model_N_steps.zip")


def rl_zoo_normalizer_paths(model_path: Path) -> list[Path]:
    """Where the normalisation statistics of ``model_path`` (a model of an rl_zoo3 run) may lie, in
    the order they are taken: a checkpoint's own ``rl_model_vecnormalize_N_steps.pkl``, then the
    run's ``ENV/vecnormalize.pkl``."""
    params = _params(model_path.parent)
    own = []
    if match := ZOO_CHECKPOINT.fullmatch(model_path.name):
        own = [model_path.with_name(f"rl_model_vecnormalize_{match.group(1)}_steps.pkl")]
    return [*own, params / "vecnormalize.pkl"]


__all__ = ["ZOO_CHECKPOINT", "is_rl_zoo_run", "rl_zoo_config_fields", "rl_zoo_model", "rl_zoo_normalizer_paths",
           "rl_zoo_params_dir"]
