"""Our hyperparameter files as rl-baselines3-zoo's ``--conf-file``.

rl_zoo3 looks an environment id up in its YAML and wants a complete block (``n_timesteps``,
``policy``, ``n_envs``; ``policy_kwargs`` as Python text it evaluates), where our files merge
``default``, the id and ``ID:PRIOR`` and name activations (``relu``). :func:`zoo_hyperparams`
writes the merged blocks in its form, so a run of ``python -m rl_zoo3.train --conf-file FILE
--gym-packages upright`` starts from the hyperparameters ``upright train`` would use; ``upright
zoo-conf`` writes the file.

What rl_zoo3 cannot take is left out and said in the file's header: the training extras
(:class:`~upright.policies.run_folder.TrainingExtras` but ``normalize``: warm-up, zero-initialised
residual actor, privileged critic, imitation, curricula), which its SB3 constructor would refuse.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from upright.envs.registration import ENVIRONMENTS
from upright.policies.run_folder import TrainingExtras
from upright.training.config import load_hyperparams

#: Environment steps of a zoo run when ``--n-timesteps`` does not say (``upright train``'s default).
ZOO_STEPS = 100_000
#: Our activation names → the expression rl_zoo3 evaluates (it imports ``torch.nn as nn``).
ZOO_ACTIVATIONS = {"tanh": "nn.Tanh", "relu": "nn.ReLU", "elu": "nn.ELU", "leaky_relu": "nn.LeakyReLU"}


def _python(value: Any) -> str:
    """``value`` (numbers, strings, lists, mappings) as Python source text."""
    if isinstance(value, Mapping):
        return "dict(" + ", ".join(f"{k}={_python(v)}" for k, v in value.items()) + ")"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_python(v) for v in value) + "]"
    return repr(value)


def zoo_block(hp: Mapping[str, Any], *, n_envs: int = 4, steps: int = ZOO_STEPS,
              env_kwargs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One rl_zoo3 block of SB3's merged hyperparameters ``hp`` (and ``normalize``, which rl_zoo3
    takes too): ``n_timesteps`` ``steps``, an ``MlpPolicy``, ``n_envs`` copies, ``policy_kwargs``
    as the text rl_zoo3 evaluates, ``env_kwargs`` when given."""
    block: dict[str, Any] = {"n_timesteps": int(steps), "policy": "MlpPolicy", "n_envs": int(n_envs)}
    for key, value in hp.items():
        if key == "policy_kwargs":
            kwargs = dict(value or {})
            activation = kwargs.pop("activation_fn", None)
            text = _python(kwargs)
            if activation is not None:
                text = f"dict(activation_fn={ZOO_ACTIVATIONS[activation]}" + (", " + text[5:] if kwargs else ")")
            block[key] = text
        else:
            block[key] = list(value) if isinstance(value, tuple) else value  # YAML: train_freq [N, step]
    if env_kwargs:
        block["env_kwargs"] = dict(env_kwargs)
    return block


def zoo_hyperparams(algo: str, prior: str | None = None, env_ids: Iterable[str] | None = None,
                    path: str | Path | None = None, n_envs: int = 4, steps: int = ZOO_STEPS) -> dict[str, Any]:
    """rl_zoo3's table for ``algo``: one block per environment id (default: all) with the
    hyperparameters ``upright train`` merges for it and ``prior`` (its ``ID:PRIOR`` block, and
    ``env_kwargs: {prior: PRIOR}``) from ``path`` (default: the shipped file)."""
    table: dict[str, Any] = {}
    for env_id in env_ids if env_ids is not None else ENVIRONMENTS:
        if env_id not in ENVIRONMENTS:
            raise ValueError(f"unknown environment {env_id!r}; ids: {', '.join(ENVIRONMENTS)}")
        hp, extras = load_hyperparams(algo, env_id, prior, path)
        table[env_id] = zoo_block({"normalize": extras.normalize, **hp}, n_envs=n_envs, steps=steps,
                                  env_kwargs={"prior": prior} if prior else None)
    return table


def zoo_conf_text(algo: str, prior: str | None = None, env_ids: Iterable[str] | None = None,
                  path: str | Path | None = None, n_envs: int = 4, steps: int = ZOO_STEPS) -> str:
    """:func:`zoo_hyperparams` as the YAML of rl_zoo3's ``--conf-file``, with a header saying what it
    came from and what it leaves out."""
    table = zoo_hyperparams(algo, prior, env_ids, path, n_envs, steps)
    source = str(path) if path is not None else f"upright/training/hyperparams/{algo}.yml"
    left_out = ", ".join(k for k in TrainingExtras.model_fields if k != "normalize")
    lines = [f"rl-baselines3-zoo hyperparameters for {algo}, from {source} "
             f"({'prior ' + prior if prior else 'no prior'}), written by `upright zoo-conf`:",
             f"python -m rl_zoo3.train --algo {algo} --env ID --gym-packages upright --conf-file THIS_FILE",
             f"Left out (upright train only): {left_out}."]
    header = "".join(f"# {line}\n" for text in lines for line in textwrap.wrap(text, 98, break_on_hyphens=False))
    return header + yaml.safe_dump(table, sort_keys=False, width=1000)


__all__ = ["ZOO_ACTIVATIONS", "ZOO_STEPS", "zoo_block", "zoo_conf_text", "zoo_hyperparams"]
