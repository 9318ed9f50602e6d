"""``train(config) -> run_dir``: one training run of ``upright train``, or its continuation.

The run folder ``runs/<env>/<algo>-<prior|scratch>-<n>/`` holds ``config.yml``, ``command.txt``,
TensorBoard events (``tb/``), ``checkpoints/`` (model, normalisation and, off-policy, the replay
buffer every ``checkpoint_every`` steps), ``model.zip`` (the latest), ``best_model.zip``,
``vecnormalize.pkl`` (when normalising), ``replay_buffer.pkl`` (off-policy), ``eval/`` (the shared
runner's ``results.json`` per evaluation), ``learning_curve.csv`` and, with matplotlib installed,
``learning_curve.png``. Ctrl-C or SIGTERM saves the
latest model (and the rest) before returning, so the run stays loadable and resumable.
"""

from __future__ import annotations

import importlib.util
import shlex
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from upright.training.callbacks import ActorWarmup, Evaluation, RewardTerms
from upright.training.config import (IMITATE_DEFAULTS, TrainConfig, algo_class, load_hyperparams, load_run_config,
                                     model_kwargs, next_run_dir)
from upright.training.envs import check_env, make_train_env
from upright.training.plots import plot_learning_curve

ON_POLICY = ("ppo",)


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped by Ctrl-C or SIGTERM; the run folder was saved (``run_dir``)."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(str(run_dir))
        self.run_dir = run_dir


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def resolve(config: TrainConfig) -> TrainConfig:
    """``config`` checked and with its hyperparameters resolved: ValueError naming an unknown
    algorithm, hyperparameter, environment, keyword argument or a prior that does not fit the
    robot or task, before anything is started."""
    algo_class(config.algo)
    if config.steps < 1 or config.n_envs < 1:
        raise ValueError(f"steps and n_envs must be >= 1, got steps={config.steps!r} n_envs={config.n_envs!r}")
    hp = load_hyperparams(config.algo, config.env_id, config.prior, config.hyperparams_file, config.hp_overrides)
    env = check_env(config.env_id, config.env_kwargs_with_prior)
    try:
        if config.eval_env_kwargs:
            if "prior" in config.eval_env_kwargs:
                raise ValueError("eval_env_kwargs cannot change the prior: the policy is a residual on "
                                 f"{config.prior!r}")
            check_env(config.env_id, config.eval_kwargs_with_prior).close()
        if hp.get("initial_residual"):
            if config.algo != "ppo" or config.prior is None or not hp.get("zero_init", True) or config.init is not None:
                raise ValueError("initial_residual needs PPO, a prior and a fresh, zero-initialised actor "
                                 f"(algo {config.algo!r}, prior {config.prior!r}, init {config.init!r})")
            env.unwrapped.residual_action(hp["initial_residual"])  # ValueError naming a bad actuator or offset
        if hp.get("imitate"):
            if (config.algo != "ppo" or config.prior is None or config.init is not None
                    or hp.get("initial_residual")):
                raise ValueError("imitate needs PPO, a prior and a fresh actor without initial_residual "
                                 f"(algo {config.algo!r}, prior {config.prior!r}, init {config.init!r})")
            hp = {**IMITATE_DEFAULTS, **hp}
            check_teacher(hp["imitate"], config, env)
        if config.init is not None:
            init_files(config.init, config.algo, bool(hp.get("normalize")), env)
    finally:
        env.close()
    from importlib.metadata import version

    return replace(config, hyperparams=hp, version=version("upright"), code=source_commit())


def check_teacher(teacher: str, config: TrainConfig, env: Any) -> None:
    """Check that the hand-designed residual ``teacher`` fits the run: ValueError naming it when it
    is unknown or malformed, made for another environment or prior, or names an actuator that
    ``env`` lacks."""
    from upright.policies.feedback import FeedbackResidualPolicy, is_feedback_policy, load_feedback_spec

    if not is_feedback_policy(str(teacher)):
        raise ValueError(f"imitate: {teacher!r} is not a hand-designed residual (feedback:NAME or a .yml file)")
    spec = load_feedback_spec(str(teacher))
    if (spec.env_id, spec.prior) != (config.env_id, config.prior):
        raise ValueError(f"imitate: {teacher!r} was made for {spec.env_id} with prior {spec.prior!r}, "
                         f"this run is {config.env_id} with prior {config.prior!r}")
    FeedbackResidualPolicy(spec).reset(env, None)


def init_files(init: str, algo: str, normalize: bool, env: Any = None) -> tuple[Path, Path | None]:
    """The model file and normalisation statistics (None without normalisation) of the trained
    policy ``init`` (a run folder, one of its ``.zip`` files or ``zoo:NAME``) that a run of ``algo``
    starts from; ValueError naming an ``init`` that is no trained policy, was trained by another
    algorithm, normalises when the run does not (or the other way round) or, given the run's
    environment ``env`` (or vector environment), has other observation or action spaces."""
    from stable_baselines3.common.save_util import load_from_zip_file

    from upright.policies.run import normalizer_path, run_model

    try:
        run_dir, model_path = run_model(init)
    except ValueError as error:
        raise ValueError(f"init: {error}") from None
    trained_by = load_run_config(run_dir).algo
    if trained_by != algo:
        raise ValueError(f"init {init!r} was trained with {trained_by}, not {algo}")
    if env is not None:
        data, _, _ = load_from_zip_file(model_path, device="cpu", load_data=True)
        for name in ("observation_space", "action_space"):
            theirs, ours = data[name].shape, getattr(env, name).shape
            if theirs != ours:
                raise ValueError(f"init {init!r}: its {name} has shape {theirs}, this environment's {ours}")
    normalizer = normalizer_path(model_path)
    if normalizer.is_file() != normalize:
        raise ValueError(f"init {init!r} {'has' if normalizer.is_file() else 'has no'} normalisation statistics "
                         f"({normalizer.name}) but this run's hp.normalize is {normalize}")
    return model_path, normalizer if normalize else None


def source_commit() -> str:
    """The git commit of the tree this package runs from, ``-dirty`` if tracked files differ from
    it; "" when it is not a git checkout (an installed wheel) or git is missing."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return commit + ("-dirty" if dirty else "")


def zero_actor_output(model: Any, log_std_init: float | None = None, action: np.ndarray | None = None) -> None:
    """Zero the actor's last layer (after SB3's orthogonal initialisation) so that the
    deterministic action is exactly 0 (the residual reproduces the prior): PPO's ``action_net``;
    SAC's ``mu`` (and its ``log_std`` layer: weight 0, bias ``log_std_init``); the last layer of
    TD3's ``mu``. With ``action`` (PPO: the mean is the layer's output itself) its bias is that
    action instead, the residual the policy starts from."""
    import torch

    policy = model.policy
    with torch.no_grad():
        head = policy.action_net if hasattr(policy, "action_net") else policy.actor.mu
        layer = [m for m in head.modules() if isinstance(m, torch.nn.Linear)][-1]  # TD3's mu is the whole MLP
        layer.weight.zero_()
        layer.bias.zero_()
        if action is not None:
            layer.bias.copy_(torch.as_tensor(action, dtype=layer.bias.dtype))
        log_std = getattr(getattr(policy, "actor", None), "log_std", None)
        if isinstance(log_std, torch.nn.Linear) and log_std_init is not None:
            log_std.weight.zero_()
            log_std.bias.fill_(log_std_init)
    if hasattr(policy, "actor_target"):  # TD3/SAC-like target actors start equal to the actor
        policy.actor_target.load_state_dict(policy.actor.state_dict())


def _new_model(config: TrainConfig, venv: Any, tb_dir: Path) -> Any:
    hp = config.hyperparams
    kwargs = model_kwargs(hp)
    if config.algo == "td3":
        from stable_baselines3.common.noise import NormalActionNoise

        size = venv.action_space.shape[0]
        kwargs["action_noise"] = NormalActionNoise(np.zeros(size), np.full(size, hp.get("action_noise_sigma", 0.1)))
    model = algo_class(config.algo)("MlpPolicy", venv, seed=config.seed, tensorboard_log=str(tb_dir), device="cpu",
                                    verbose=0, **kwargs)
    if hp.get("zero_init", config.prior is not None):
        initial = hp.get("initial_residual")
        zero_actor_output(model, hp.get("log_std_init", -2.0) if config.algo == "sac" else None,
                          venv.env_method("residual_action", initial, indices=0)[0] if initial else None)
    if config.init is not None:  # fine-tuning: the trained weights (and optimiser state) replace the fresh ones
        start, _ = init_files(config.init, config.algo, bool(hp.get("normalize")))  # spaces: checked by resolve
        model.set_parameters(str(start), exact_match=True, device="cpu")
    return model


def _imitate(model: Any, venv: Any, config: TrainConfig, run_dir: Path) -> float:
    """Fit ``model``'s fresh actor to the run's teacher (``hp.imitate``) in ``venv``; write
    ``imitation.json`` and a checkpoint of the imitated policy (SB3's checkpoint names, so that
    ``checkpoint-selection`` can choose it too); return the seconds it took (they count in the
    run's wall-clock)."""
    from stable_baselines3.common.vec_env import VecNormalize

    from upright.policies.feedback import FeedbackResidualPolicy, load_feedback_spec
    from upright.training.imitation import imitate

    hp = config.hyperparams
    record = imitate(model, venv, FeedbackResidualPolicy(load_feedback_spec(str(hp["imitate"]))),
                     steps=int(hp["imitate_steps"]), epochs=int(hp["imitate_epochs"]),
                     batch_size=int(hp["imitate_batch_size"]), learning_rate=float(hp["imitate_learning_rate"]),
                     seed=config.seed, out=run_dir / "imitation.json")
    checkpoints = run_dir / "checkpoints"
    checkpoints.mkdir(exist_ok=True)
    model.save(checkpoints / f"model_{model.num_timesteps}_steps.zip")
    if isinstance(venv, VecNormalize):
        venv.save(str(checkpoints / f"model_vecnormalize_{model.num_timesteps}_steps.pkl"))
    return float(record["seconds"])


def _save(model: Any, venv: Any, run_dir: Path, off_policy: bool) -> None:
    from stable_baselines3.common.vec_env import VecNormalize

    model.save(run_dir / "model.zip")
    if isinstance(venv, VecNormalize):
        venv.save(str(run_dir / "vecnormalize.pkl"))
    if off_policy:
        model.save_replay_buffer(run_dir / "replay_buffer.pkl")


def train(config: TrainConfig, resume: str | Path | None = None) -> Path:
    """Train (or, with ``resume`` a run folder, continue to ``config.steps`` total steps; its own
    config is used then, except ``steps``, ``progress`` and the evaluation schedule) and return the
    run folder. Raises :class:`TrainingInterrupted` after saving when Ctrl-C or SIGTERM stopped it."""
    import torch
    from stable_baselines3.common.callbacks import CallbackList, CheckpointCallback

    torch.set_num_threads(1)
    command = config.command or shlex.join(sys.argv)
    if resume is not None:
        run_dir = Path(resume)
        saved = load_run_config(run_dir)
        if not (run_dir / "model.zip").is_file():
            raise ValueError(f"run {str(run_dir)!r} has no model.zip to resume from")
        with (run_dir / "command.txt").open("a") as file:  # every command that trained this run, in order
            file.write(f"{command}  # resumed on code {source_commit() or 'unknown'}\n")
        config = replace(saved, steps=config.steps, progress=config.progress, eval_every=config.eval_every,
                         eval_episodes=config.eval_episodes, checkpoint_every=config.checkpoint_every)
        algo_class(config.algo)
    else:
        config = resolve(config)
        run_dir = next_run_dir(config.out, config.env_id, config.algo, config.prior, config.name)
        run_dir.mkdir(parents=True)
        (run_dir / "command.txt").write_text(command + "\n")
    (run_dir / "config.yml").write_text(yaml.safe_dump(config.to_yaml(), sort_keys=False))
    hp = config.hyperparams
    on_policy = config.algo in ON_POLICY
    normalizer: Path | None = run_dir / "vecnormalize.pkl"
    if resume is None:  # a fresh run: fresh statistics, or those of the policy it fine-tunes
        normalizer = None if config.init is None else init_files(config.init, config.algo, bool(hp.get("normalize")))[1]
    venv = make_train_env(config.env_id, config.env_kwargs_with_prior, config.n_envs, config.seed,
                          normalize=bool(hp.get("normalize")), on_policy=on_policy,
                          normalizer=normalizer if normalizer is not None and normalizer.is_file() else None)
    tb_dir = run_dir / "tb"
    if resume is not None:
        model = algo_class(config.algo).load(run_dir / "model.zip", env=venv, device="cpu", tensorboard_log=str(tb_dir))
        if not on_policy and (run_dir / "replay_buffer.pkl").is_file():
            model.load_replay_buffer(run_dir / "replay_buffer.pkl")
    else:
        model = _new_model(config, venv, tb_dir)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    interrupted = False
    try:  # Ctrl-C or SIGTERM from here on (the imitation included) saves a loadable run
        imitation_seconds = _imitate(model, venv, config, run_dir) if resume is None and hp.get("imitate") else 0.0
        evaluation = Evaluation(run_dir, config.env_id, config.eval_kwargs_with_prior, every=config.eval_every,
                                episodes=config.eval_episodes, seed=config.eval_seed,
                                has_prior=config.prior is not None, elapsed=imitation_seconds)
        callbacks = [RewardTerms(), evaluation,
                     CheckpointCallback(max(config.checkpoint_every // config.n_envs, 1), str(run_dir / "checkpoints"),
                                        name_prefix="model", save_replay_buffer=not on_policy,
                                        save_vecnormalize=bool(hp.get("normalize")))]
        if hp.get("warmup_steps", 0) > 0:
            callbacks.append(ActorWarmup(int(hp["warmup_steps"])))
        remaining = config.steps - model.num_timesteps
        if remaining > 0:
            model.learn(remaining, callback=CallbackList(callbacks), tb_log_name="run",
                        reset_num_timesteps=resume is None and not hp.get("imitate"), progress_bar=config.progress)
            if config.eval_every > 0 and evaluation.num_timesteps > evaluation.last:
                evaluation.evaluate()
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGTERM, previous)
        _save(model, venv, run_dir, not on_policy)
        venv.close()
    if (run_dir / "learning_curve.csv").is_file() and importlib.util.find_spec("matplotlib") is not None:
        plot_learning_curve(run_dir)
    if interrupted:
        raise TrainingInterrupted(run_dir)
    return run_dir


__all__ = ["TrainingInterrupted", "check_teacher", "init_files", "resolve", "train", "zero_actor_output"]
