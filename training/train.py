"""``upright train``: a new training run (:func:`train`) or the continuation of one (:func:`resume`).

The run folder ``runs/<env>/<algo>-<prior|scratch>-<n>/`` holds ``config.yml``, ``command.txt``
(every command that trained it, a resume's with what it changed), TensorBoard events (``tb/``),
``checkpoints/`` (model, normalisation and, off-policy, the replay buffer every
``checkpoint_every`` steps and at the end of every session), ``model.zip`` (the latest; with
``vecnormalize.pkl`` when normalising and ``replay_buffer.pkl`` off-policy, published from the
checkpoint of the session's end), ``best_model.zip`` (with ``best_vecnormalize.pkl``), ``eval/``
(the shared runner's ``results.json`` per evaluation), ``learning_curve.csv``,
``learning_curve.png``, and for a fine-tuning run ``init/`` (the policy it started from,
copied, with ``record.yml``: how that policy was trained). One process writes a run folder at a
time: :func:`train` and :func:`resume` hold its lock (``.lock``, :func:`~upright.policies.folders.
locked`), and a second writer is refused with the holder's process id.

Every file is written to a temporary file in its folder and renamed into place, a model after its
companions (the invariant, :mod:`upright.policies.run`): a run killed at any moment keeps complete
files, and :func:`resume` goes on from its newest complete checkpoint. Ctrl-C or SIGTERM saves the
latest model (and the rest) before returning, so the run stays loadable and resumable. An error in
training (a diverged optimiser) saves nothing: the models saved before it stay as they were.
"""

from __future__ import annotations

import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import fields, replace
from functools import partial
from importlib.metadata import version
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from upright.envs.residual import TempoResidual
from upright.eval.learning_curves import plot_learning_curve
from upright.policies.folders import LOCK_FILE, locked
from upright.policies.feedback import FeedbackResidualPolicy, feedback_policy, is_feedback_policy, load_feedback_spec
from upright.policies.run import (check_pair, load_model, load_normalizer, model_steps, newest_model, normalizer_path,
                                  replay_buffer_path, run_model)
from upright.policies.algorithms import Algorithm, algo_class, algorithm, residual_start_names
from upright.policies.asymmetric import AsymmetricActorCriticPolicy, widen_critic
from upright.policies.run_folder import (TrainConfig, link_atomically, load_run_config, plain,
                                         write_atomically, write_text_atomically)
from upright.training.callbacks import (ActorWarmup, Checkpoints, Diverged, EpisodeMetrics, Evaluation, FiniteWeights,
                                        Hyperparameters, LinearCurriculum, RewardTerms, UpdateThreads,
                                        check_video_logging, save_model_files, weights_finite)
from upright.training.config import check_counts, choose_vec_env, load_hyperparams, model_kwargs, next_run_dir
from upright.training.vec_env import TEACHER_INFO, check_env, make_train_env
from upright.training.imitation import imitate
from upright.training.ship import init_record

#: What a resume may change: none of them changes the model, its environment or what its
#: evaluations measure (``steps`` must exceed the steps done; ``vec_env`` changes how the same
#: transitions are computed, not which).
RESUMABLE = ("steps", "progress", "eval_every", "eval_video", "checkpoint_every", "vec_env")
#: The environments' setter of each curriculum of the training extras
#: (:meth:`~upright.policies.run_folder.TrainingExtras.curricula`) and its TensorBoard name.
CURRICULUM_SETTERS = {"push_curriculum": ("set_push_strength", "push_strength"),
                      "model_curriculum": ("set_model_variation", "model_variation")}
#: The ``upright train`` option of each :class:`TrainConfig` field (named when a resume refuses it);
#: for the keyword-argument fields, what precedes a ``KEY=VALUE``.
OPTIONS = {"env_id": "--env", "prior": "--prior", "algo": "--algo", "steps": "--steps", "n_envs": "--n-envs",
           "seed": "--seed", "env_kwargs": "--set ", "hp_overrides": "--set hp.", "hyperparams_file": "--hyperparams",
           "out": "--out", "name": "--name", "init": "--init", "eval_every": "--eval-every",
           "eval_episodes": "--eval-episodes", "eval_env_kwargs": "--eval-set ", "eval_video": "--eval-video",
           "checkpoint_every": "--checkpoint-every", "progress": "--progress", "vec_env": "--vec-env"}


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped by Ctrl-C or SIGTERM; the run folder was saved (``run_dir``)."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(str(run_dir))
        self.run_dir = run_dir


class TrainingFailed(RuntimeError):
    """Training stopped by an error at ``steps`` environment steps (``diverged``: the optimiser
    produced non-finite values); nothing of the failed session after its last checkpoint was
    saved, so the run's models and checkpoints are as they were before it."""

    def __init__(self, run_dir: Path, steps: int, error: BaseException, diverged: bool) -> None:
        first_line = (str(error).splitlines() or [""])[0]
        cause = "the optimiser diverged" if diverged else f"training failed ({type(error).__name__}: {first_line})"
        hint = " (non-finite values in the policy: a smaller hp.learning_rate?)" if diverged else ""
        super().__init__(f"{cause} at step {steps}{hint}; nothing after the last checkpoint was saved, "
                         f"{run_dir} keeps the models it had")
        self.run_dir, self.steps, self.diverged = run_dir, steps, diverged


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _caused_by_interrupt(error: BaseException) -> bool:
    """Whether ``error`` arose while a Ctrl-C or SIGTERM was being handled: a writer interrupted
    mid-file (torch's zip writer in a checkpoint) raises its own error on the way out, which
    replaces the KeyboardInterrupt. The interrupt, not the error, stopped the training."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


@contextmanager
def unchecked_distributions() -> Iterator[None]:
    """torch's distributions without their argument checks while training, then as they were. SB3
    builds a Normal in every forward pass and every minibatch; the checks (finite mean, positive
    scale, samples in the support) are a sizeable part of a small network's forward pass on one
    thread and change no number. What they caught, a diverged optimiser's non-finite weights,
    :class:`~upright.training.callbacks.FiniteWeights` catches after every update."""
    from torch.distributions import Distribution  # torch: only when a model is built

    checked = Distribution._validate_args
    Distribution.set_default_validate_args(False)
    try:
        yield
    finally:
        Distribution.set_default_validate_args(checked)


def resolve(config: TrainConfig) -> TrainConfig:
    """``config`` checked, with its hyperparameters resolved and ``vec_env`` the class it runs with
    (``auto`` chosen for this machine): ValueError naming an unknown
    algorithm, a count out of range, an unknown or out-of-range hyperparameter, an environment,
    keyword argument or a prior that does not fit the robot or task, or hyperparameters SB3 cannot
    build the model from (the model is built once on the checked environment, with the ``init``
    policy's weights), before anything is started; with ``eval_video``, what
    :func:`~upright.training.callbacks.check_video_logging` raises where the clips cannot be
    rendered or encoded."""
    algo = algorithm(config.algo)
    check_counts(config)
    config = replace(config, eval_env_kwargs=evaluation_kwargs(config))
    hp, extras = load_hyperparams(config.algo, config.env_id, config.prior, config.hyperparams_file,
                                  config.hp_overrides)
    privileged = extras.privileged_critic
    if privileged and not (algo.on_policy and algo.residual_start):
        raise ValueError(f"privileged_critic needs an actor-critic algorithm ({residual_start_names()}), "
                         f"got {config.algo!r}")
    env = check_env(config.env_id, config.env_kwargs_with_prior, privileged)
    try:
        if config.eval_video:
            check_video_logging(env)
        if config.eval_env_kwargs:
            if "prior" in config.eval_env_kwargs:
                raise ValueError("eval_env_kwargs cannot change the prior: the policy is a residual on "
                                 f"{config.prior!r}")
            check_env(config.env_id, config.eval_kwargs_with_prior).close()
        if extras.initial_residual:
            if (not algo.residual_start or config.prior is None or not extras.zero_initialised(config.prior)
                    or config.init is not None):
                raise ValueError(f"initial_residual needs {residual_start_names()}, a prior and a fresh, "
                                 "zero-initialised actor "
                                 f"(algo {config.algo!r}, prior {config.prior!r}, init {config.init!r})")
            env.unwrapped.residual_action(extras.initial_residual)  # ValueError naming a bad actuator or offset
        if extras.imitate:
            if (not algo.residual_start or config.prior is None or config.init is not None
                    or extras.initial_residual):
                raise ValueError(f"imitate needs {residual_start_names()}, a prior and a fresh actor without "
                                 "initial_residual "
                                 f"(algo {config.algo!r}, prior {config.prior!r}, init {config.init!r})")
            check_teacher(extras.imitate, config, env)
        if config.init is not None:
            init_files(config.init, config.algo, extras.normalize, env)
        _check_model(replace(config, hyperparams=hp, extras=extras), env)
    finally:
        env.close()
    return replace(config, hyperparams=hp, extras=extras, version=version("upright"), code=source_commit(),
                   vec_env=choose_vec_env(config.vec_env, config.n_envs))


def evaluation_kwargs(config: TrainConfig) -> dict[str, Any]:
    """``config.eval_env_kwargs``, with ``command_focus_share`` 0 added when training draws a share
    of its walk commands from a ``command_focus`` box and the evaluation does not say otherwise:
    the focus shapes what training sees, not the task the policy is judged on, so the periodic
    evaluation, checkpoint-selection and a shipped policy's manifest use the plain command ranges.
    ``--eval-set command_focus_share=P`` keeps P."""
    if config.env_kwargs.get("command_focus_share") and "command_focus_share" not in config.eval_env_kwargs:
        return {**config.eval_env_kwargs, "command_focus_share": 0.0}
    return dict(config.eval_env_kwargs)


def _check_model(config: TrainConfig, env: Any) -> None:
    """Build the model of ``config`` (resolved) once on ``env``: ValueError with the first line of
    what SB3 or torch refuse (the replay buffer is left small: its size is checked by value)."""
    from stable_baselines3.common.vec_env import DummyVecEnv  # SB3 (and torch): only when a model loads

    hp = config.hyperparams if algorithm(config.algo).on_policy else {**config.hyperparams, "buffer_size": 1}
    try:
        new_model(replace(config, hyperparams=hp), DummyVecEnv([lambda: env]), None)
    except (TypeError, ValueError, AssertionError, RuntimeError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"the hyperparameters do not make a {config.algo} model: {first}") from None


def check_teacher(teacher: str, config: TrainConfig, env: Any) -> None:
    """Check that the hand-designed residual ``teacher`` fits the run: ValueError naming it when it
    is unknown or malformed, made for another environment or prior, or names an actuator that
    ``env`` lacks."""
    if not is_feedback_policy(str(teacher)):
        raise ValueError(f"imitate: {teacher!r} is not a hand-designed residual (feedback:NAME or a .yml file)")
    spec = load_feedback_spec(str(teacher))
    if (spec.env_id, spec.prior) != (config.env_id, config.prior):
        raise ValueError(f"imitate: {teacher!r} was made for {spec.env_id} with prior {spec.prior!r}, "
                         f"this run is {config.env_id} with prior {config.prior!r}")
    FeedbackResidualPolicy(spec, teacher).reset(env, None)


def init_files(init: str, algo: str, normalize: bool, env: Any = None) -> tuple[Path, Path | None]:
    """The model file and normalisation statistics (None without normalisation) of the trained
    policy ``init`` (a run folder, one of its ``.zip`` files or ``zoo:NAME``) that a run of ``algo``
    starts from; ValueError naming an ``init`` that is no trained policy, was trained by another
    algorithm, normalises when the run does not (or the other way round) or, given the run's
    environment ``env`` (or vector environment), has other observation or action spaces."""
    from stable_baselines3.common.save_util import load_from_zip_file  # SB3 (and torch): only when a model loads

    try:
        run_dir, model_path = run_model(init)
    except ValueError as error:
        raise ValueError(f"init: {error}") from None
    trained_by = load_run_config(run_dir).algo
    if trained_by != algo:
        raise ValueError(f"init {init!r} was trained with {trained_by}, not {algo}")
    if env is not None:
        try:
            data, _, _ = load_from_zip_file(model_path, device="cpu", load_data=True)
        except Exception as error:  # a truncated or foreign file
            raise ValueError(f"init {init!r}: {str(model_path)!r} does not load as a model "
                             f"({type(error).__name__}: {error})") from error
        for name in ("observation_space", "action_space"):
            theirs, ours = data[name].shape, getattr(env, name).shape
            # a policy of the robot's observation, or of an asymmetric critic trained before later
            # privileged blocks, may start an asymmetric critic's run (widened, widen_critic); a
            # policy without the tempo entry a run with one (its action widened, _widen_action)
            if name == "observation_space":
                fits = (theirs == ours or (hasattr(env, "actor_size") and len(theirs) == 1
                                           and env.actor_size <= theirs[0] < ours[0]))
            else:
                narrower = (ours[0] - 1,) if isinstance(env.unwrapped.residual, TempoResidual) else ours
                fits = theirs in (ours, narrower)
            if not fits:
                raise ValueError(f"init {init!r}: its {name} has shape {theirs}, this environment's {ours}")
    normalizer = normalizer_path(model_path)
    if normalizer.is_file() != normalize:
        raise ValueError(f"init {init!r} {'has' if normalizer.is_file() else 'has no'} normalisation statistics "
                         f"({normalizer.name}) but this run's hp.normalize is {normalize}")
    if env is not None and normalize:
        load_normalizer(normalizer)  # ValueError naming a file that is no VecNormalize, before the run folder
    return model_path, normalizer if normalize else None


def source_commit() -> str:
    """The git commit of the tree this package runs from, ``-dirty`` if tracked files differ from
    it; "" when it is not a git checkout (an installed wheel) or git is missing."""

    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return commit + ("-dirty" if dirty else "")


def zero_actor_output(model: Any, algo: Algorithm, log_std_init: float | None = None,
                      action: np.ndarray | None = None) -> None:
    """Zero the last linear layer of the actor's head (``algo.actor_head``, after SB3's orthogonal
    initialisation) so that the deterministic action is exactly 0 (the residual reproduces the
    prior): PPO's ``action_net``; SAC's ``mu`` (and its ``log_std`` layer: weight 0, bias
    ``log_std_init``); the last layer of TD3's ``mu``. With ``action`` (PPO: the mean is the
    layer's output itself) its bias is that action instead, the residual the policy starts from."""
    import torch  # torch: only when a model is built

    policy = model.policy
    with torch.no_grad():
        head = attrgetter(algo.actor_head)(policy)
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


def new_model(config: TrainConfig, venv: Any, tb_dir: Path | None, start: Path | None = None) -> Any:
    """The fresh model of ``config`` on ``venv`` (TensorBoard events into ``tb_dir``; None: none):
    zero-initialised actor with a prior, or the weights of ``start`` (default: ``config.init``'s
    model file) when fine-tuning."""
    extras = config.extras
    kwargs = model_kwargs(config.hyperparams)
    algo = algorithm(config.algo)
    if algo.action_noise:
        from stable_baselines3.common.noise import NormalActionNoise  # SB3 (and torch): only when a model loads

        size = venv.action_space.shape[0]
        kwargs["action_noise"] = NormalActionNoise(np.zeros(size), np.full(size, extras.action_noise_sigma))
    policy: Any = "MlpPolicy"
    if extras.privileged_critic:
        policy = AsymmetricActorCriticPolicy
        kwargs["policy_kwargs"] = {**kwargs.get("policy_kwargs", {}), "actor_size": venv.get_attr("actor_size", 0)[0]}
    model = algo_class(config.algo)(policy, venv, seed=config.seed, device="cpu", verbose=0,
                                    tensorboard_log=None if tb_dir is None else str(tb_dir), **kwargs)
    if extras.zero_initialised(config.prior):
        initial = extras.initial_residual
        zero_actor_output(model, algo, extras.log_std_init if algo.learned_entropy else None,
                          venv.env_method("residual_action", initial, indices=0)[0] if initial else None)
    if config.init is not None:  # fine-tuning: the trained weights (and optimiser state) replace the fresh ones
        if start is None:
            start, _ = init_files(config.init, config.algo, extras.normalize)  # spaces: checked by resolve
        _load_init(model, start)
    return model


def _load_init(model: Any, start: Path) -> None:
    """Load the weights and optimiser state of the model file ``start`` into ``model``; a policy of
    the robot's observation into an asymmetric critic's model gets its critic widened
    (:func:`~upright.policies.asymmetric.widen_critic`), a policy without the tempo entry into a
    model with one its action head widened (:func:`_widen_action`), each with a fresh optimiser
    (Adam's moments do not fit the widened layers)."""
    from stable_baselines3.common.save_util import load_from_zip_file  # SB3 (and torch): only when a model loads

    data, params, _ = load_from_zip_file(start, device="cpu", load_data=True)
    same_observation = data["observation_space"].shape == model.observation_space.shape
    if same_observation and data["action_space"].shape == model.action_space.shape:
        model.set_parameters(str(start), exact_match=True, device="cpu")
        return
    state = params["policy"]
    if not same_observation:
        state = widen_critic(state, model)
    if data["action_space"].shape != model.action_space.shape:
        state = _widen_action(state, model)
    model.policy.load_state_dict(state)


def _widen_action(state: dict[str, Any], model: Any) -> dict[str, Any]:
    """The PPO weights ``state`` of a policy without the get-up's tempo entry for ``model``'s
    policy with it (the action's last entry): the action head gains a zero row, so the tempo starts
    at the prior's own (action 0) and every joint entry acts as trained, and the new entry's log
    standard deviation is the model's fresh one (``log_std_init``). ValueError when the shapes fit
    otherwise."""
    import torch  # torch: only when a model is built

    ours = model.policy.state_dict()
    narrow, wide = state["action_net.weight"], ours["action_net.weight"]
    if narrow.shape[0] + 1 != wide.shape[0] or narrow.shape[1] != wide.shape[1]:
        raise ValueError(f"the action head has shape {tuple(narrow.shape)}; this policy's is {tuple(wide.shape)}, "
                         "one tempo entry more is the only widening there is")
    zero_row = torch.zeros(1, narrow.shape[1], dtype=narrow.dtype)
    return {**state,
            "action_net.weight": torch.cat([narrow, zero_row]),
            "action_net.bias": torch.cat([state["action_net.bias"], torch.zeros(1, dtype=narrow.dtype)]),
            "log_std": torch.cat([state["log_std"], ours["log_std"][-1:]])}


def _imitate(model: Any, venv: Any, config: TrainConfig, run_dir: Path) -> float:
    """Fit ``model``'s fresh actor to the run's teacher (``hp.imitate``) in ``venv``; write
    ``imitation.json`` and a checkpoint of the imitated policy (SB3's checkpoint names, so that
    ``checkpoint-selection`` can choose it too); return the seconds it took (they count in the
    run's wall-clock)."""
    extras = config.extras
    assert extras.imitate is not None
    record = imitate(model, venv, feedback_policy(extras.imitate),
                     steps=extras.imitate_steps, epochs=extras.imitate_epochs,
                     batch_size=extras.imitate_batch_size, learning_rate=extras.imitate_learning_rate,
                     seed=config.seed, out=run_dir / "imitation.json")
    checkpoints = run_dir / "checkpoints"
    checkpoints.mkdir(exist_ok=True)
    save_model_files(model, model.get_vec_normalize_env(), checkpoints / f"model_{model.num_timesteps}_steps.zip")
    return float(record["seconds"])


def _save_state(model: Any, run_dir: Path, off_policy: bool) -> None:
    """Save the end of a session: its state as the checkpoint of its steps (replacing a checkpoint of
    as many steps that the callback saved before the session's last update), then published as
    ``model.zip`` with ``vecnormalize.pkl``
    and, off-policy, ``replay_buffer.pkl`` (links to that checkpoint's files, the model last). A
    kill while publishing leaves ``model.zip`` older than that complete checkpoint, which
    :func:`~upright.policies.run.newest_model` then takes."""
    checkpoint = run_dir / "checkpoints" / f"model_{model.num_timesteps}_steps.zip"
    checkpoint.parent.mkdir(exist_ok=True)
    normalizer = model.get_vec_normalize_env()
    save_model_files(model, normalizer, checkpoint, replay_buffer=off_policy)
    published = run_dir / "model.zip"
    if off_policy:
        link_atomically(replay_buffer_path(checkpoint), replay_buffer_path(published))
    if normalizer is not None:
        link_atomically(normalizer_path(checkpoint), normalizer_path(published))
    link_atomically(checkpoint, published)


def _carry_init(config: TrainConfig, run_dir: Path) -> tuple[Path, Path | None]:
    """Copy the policy ``config.init`` into ``run_dir/init/``: ``model.zip``, ``vecnormalize.pkl``
    when the run normalises, and ``record.yml`` (the policy's name and how it was trained,
    :func:`~upright.training.ship.init_record`); return the copied model and statistics. The run
    starts from the copies and ``upright ship`` reads the record, so the run needs nothing of the
    other policy once it has started."""
    assert config.init is not None
    model, normalizer = init_files(config.init, config.algo, config.extras.normalize)
    folder = run_dir / "init"
    folder.mkdir()
    write_text_atomically(folder / "record.yml", yaml.safe_dump(init_record(config.init), sort_keys=False))
    copied = None
    if normalizer is not None:
        copied = folder / "vecnormalize.pkl"
        write_atomically(copied, partial(shutil.copyfile, normalizer))
    write_atomically(folder / "model.zip", partial(shutil.copyfile, model))
    return folder / "model.zip", copied


def train_env(config: TrainConfig, normalizer: Path | None = None) -> Any:
    """The training environments of ``config`` (resolved): ``config.n_envs`` copies in its vector
    environment class, normalised as its hyperparameters say (``normalizer``: saved statistics to
    go on from), with the privileged state for an asymmetric critic (``hp.privileged_critic``) and
    the step-info entries an imitated teacher reads (``hp.imitate``)."""
    extras = config.extras
    return make_train_env(config.env_id, config.env_kwargs_with_prior, config.n_envs, config.seed,
                          normalize=extras.normalize, on_policy=algorithm(config.algo).on_policy,
                          normalizer=normalizer, vec_env=config.vec_env, privileged=extras.privileged_critic,
                          keep_info=TEACHER_INFO if extras.imitate else ())


def _write_config(run_dir: Path, config: TrainConfig) -> None:
    write_text_atomically(run_dir / "config.yml", yaml.safe_dump(config.to_yaml(), sort_keys=False))


def train(config: TrainConfig, callbacks: Sequence[Any] = ()) -> Path:
    """Start a new run of ``config`` (checked by :func:`resolve` before its folder is made) and
    return its run folder once ``config.steps`` environment steps are done, or earlier when one of
    the SB3 ``callbacks`` (run after the run's own, so they see each evaluation's row of
    ``learning_curve.csv``) stops the training (the run is then saved as at its end). Raises
    :class:`TrainingInterrupted` after saving when Ctrl-C or SIGTERM stopped it, and
    :class:`TrainingFailed` (saving nothing more) when training failed."""
    import torch  # torch: only when a model is built

    torch.set_num_threads(1)
    command = config.command or shlex.join(sys.argv)
    config = resolve(config)
    run_dir = next_run_dir(config.out, config.env_id, config.algo, config.prior, config.name)
    run_dir.mkdir(parents=True)
    with locked(run_dir / LOCK_FILE, f"run {run_dir}"):
        write_text_atomically(run_dir / "command.txt", command + "\n")
        _write_config(run_dir, config)
        start, normalizer = _carry_init(config, run_dir) if config.init is not None else (None, None)
        venv = train_env(config, normalizer)
        model = new_model(config, venv, run_dir / "tb", start)
        return _session(config, run_dir, model, fresh=True, extra=callbacks)


def resume_config(saved: TrainConfig, changes: Mapping[str, Any]) -> tuple[TrainConfig, list[str]]:
    """The config that a resume of the run saved as ``saved`` trains with, and what it changes
    (``"steps 384 -> 640"``). ``changes`` are the :class:`TrainConfig` fields the user gave (as
    ``upright train`` passes its options: ``env_kwargs`` nested, ``hp_overrides`` dotted): those of
    :data:`RESUMABLE` apply; any other that differs from the run's (a ``--set`` key: from its
    value in the run) is refused, ValueError naming the option, its value and the run's. A resume
    keeps everything that shapes the model, its environment and its evaluations; its ``vec_env``
    is the run's own class unless given (``auto``: chosen for this machine)."""
    unknown = sorted(set(changes) - {f.name for f in fields(TrainConfig)})
    if unknown:
        raise ValueError(f"unknown run settings: {', '.join(unknown)}")
    for name, value in changes.items():
        conflict = None if name in RESUMABLE else _conflict(name, value, saved)
        if conflict:
            raise ValueError(f"{conflict}: a resumed run keeps its settings (start a new run for other ones, "
                             "or fine-tune this one with --init)")
    config = replace(saved, **{name: value for name, value in changes.items() if name in RESUMABLE})
    check_counts(config)
    config = replace(config, vec_env=choose_vec_env(config.vec_env, config.n_envs))
    changed = [f"{name} {getattr(saved, name)} -> {getattr(config, name)}" for name in RESUMABLE
               if getattr(saved, name) != getattr(config, name)]
    return config, changed


_NOT_SET = object()


def _conflict(name: str, value: Any, saved: TrainConfig) -> str | None:
    """How ``value`` given for field ``name`` differs from the run ``saved`` (None: it does not)."""
    if name not in ("env_kwargs", "hp_overrides", "eval_env_kwargs"):
        theirs = getattr(saved, name)
        return (None if plain(value) == plain(theirs)
                else f"{OPTIONS.get(name, name)} {_shown(value)} differs from the run's {_shown(theirs)}")
    have = {**saved.hyperparams, **saved.extras.model_dump()} if name == "hp_overrides" else getattr(saved, name)
    for key, given in _leaves(value):
        theirs = have
        for part in key.split("."):
            theirs = theirs.get(part, _NOT_SET) if isinstance(theirs, Mapping) else _NOT_SET
        if plain(given) != plain(theirs):
            shown = key.replace("prior_params.", "params.", 1) if name == "env_kwargs" else key
            return (f"{OPTIONS[name]}{shown}={_shown(given)} differs from the run's "
                    f"{'(not set)' if theirs is _NOT_SET else _shown(theirs)}")
    return None


def _leaves(tree: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``(dotted key, value)`` of every value of a nested mapping."""
    leaves: list[tuple[str, Any]] = []
    for key, value in tree.items():
        leaves += _leaves(value, f"{prefix}{key}.") if isinstance(value, Mapping) else [(f"{prefix}{key}", value)]
    return leaves


def _shown(value: Any) -> str:
    """``value`` as ``--set`` writes it."""
    value = plain(value)
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def resume(run_dir: str | Path, changes: Mapping[str, Any] | None = None, *, command: str = "") -> Path:
    """Continue the run in ``run_dir`` from its newest complete state (``model.zip``, or a newer
    checkpoint of a session that was killed: :func:`~upright.policies.run.newest_model`) with its
    normalisation statistics and, off-policy, its replay buffer, up to its ``steps``, and return
    the run folder. ``changes`` may change only :data:`RESUMABLE` (:func:`resume_config`), and
    ``steps`` must exceed the steps done: ValueError before anything is written otherwise, and
    naming a missing statistics or replay-buffer file. ``command`` (default: this process's
    command line) is appended to ``command.txt`` with the state it resumed from and what it
    changed. Evaluations that a killed session made after that state stay in
    ``learning_curve.csv`` (its steps then repeat). Raises as :func:`train` does, and
    :class:`~upright.policies.folders.FolderLocked` while another process writes the run."""
    import torch  # torch: only when a model is built

    torch.set_num_threads(1)
    run_dir = Path(run_dir)
    load_run_config(run_dir)  # a run folder, before its lock file is made in it
    with locked(run_dir / LOCK_FILE, f"run {run_dir}"):
        return _resume_locked(run_dir, changes or {}, command)


def _resume_locked(run_dir: Path, changes: Mapping[str, Any], command: str) -> Path:
    """:func:`resume` once this process holds the run folder's lock (so the state it reads is
    no other writer's half-written one)."""
    saved = load_run_config(run_dir)
    config, changed = resume_config(saved, changes)
    if config.eval_video:
        env = check_env(config.env_id, config.env_kwargs_with_prior)
        try:
            check_video_logging(env)
        finally:
            env.close()
    on_policy = algorithm(config.algo).on_policy
    normalize = config.extras.normalize
    state = newest_model(run_dir, normalize=normalize, replay_buffer=not on_policy)
    done = model_steps(state)
    if config.steps <= done:
        given = "" if "steps" in changes else " (the run's own)"
        raise ValueError(f"run {str(run_dir)!r} has done {done} steps: steps must exceed them to continue it, "
                         f"got {config.steps}{given}")
    normalizer = normalizer_path(state) if normalize else None
    if normalizer is not None:
        check_pair(state, done, load_normalizer(normalizer), normalizer)
    venv = train_env(config, normalizer)
    model = load_model(config.algo, state, env=venv, tensorboard_log=str(run_dir / "tb"))
    if not on_policy:
        model.load_replay_buffer(replay_buffer_path(state))
    for folder in (run_dir, run_dir / "checkpoints"):  # what a kill left half-written
        for temporary in folder.glob(".*.tmp"):
            temporary.unlink()
    note = f"  # resumed from {state.relative_to(run_dir)} ({done} steps) on code {source_commit() or 'unknown'}"
    history = (run_dir / "command.txt").read_text() if (run_dir / "command.txt").is_file() else ""
    write_text_atomically(run_dir / "command.txt", history + (command or shlex.join(sys.argv)) + note
                          + (f"; changed {', '.join(changed)}" if changed else "") + "\n")
    _write_config(run_dir, config)
    return _session(config, run_dir, model, fresh=False)


def _session(config: TrainConfig, run_dir: Path, model: Any, *, fresh: bool, extra: Sequence[Any] = ()) -> Path:
    """Train ``model`` (a new run's with ``fresh``: the imitation first, when the run has one) up to
    ``config.steps`` with the callbacks, then save the state (:func:`_save_state`) and plot the
    learning curve. Ctrl-C or SIGTERM: saved, then :class:`TrainingInterrupted`; any error in
    training: nothing more saved, :class:`TrainingFailed`."""
    from stable_baselines3.common.callbacks import CallbackList  # SB3 (and torch): only when a model loads

    extras = config.extras
    on_policy = algorithm(config.algo).on_policy
    imitating = fresh and extras.imitate is not None
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    interrupted = False
    failure: Exception | None = None
    try:  # Ctrl-C or SIGTERM from here on (the imitation included) saves a loadable run
        imitation_seconds = _imitate(model, model.get_env(), config, run_dir) if imitating else 0.0
        evaluation = Evaluation(run_dir, config.env_id, config.eval_kwargs_with_prior, every=config.eval_every,
                                episodes=config.eval_episodes, seed=config.eval_seed,
                                has_prior=config.prior is not None, elapsed=imitation_seconds,
                                video=config.eval_video)
        settings = {"algo": config.algo, "env_id": config.env_id, "prior": config.prior or "none",
                    "n_envs": config.n_envs, "vec_env": config.vec_env, "seed": config.seed, "steps": config.steps,
                    "env": config.env_kwargs}
        hyperparameters = {**config.hyperparams, **extras.model_dump(exclude_none=True)}
        callbacks = [FiniteWeights(), RewardTerms(), EpisodeMetrics(), Hyperparameters(settings, hyperparameters),
                     evaluation,
                     Checkpoints(run_dir / "checkpoints", config.checkpoint_every, replay_buffer=not on_policy),
                     *extra]
        if extras.warmup_steps > 0:
            callbacks.append(ActorWarmup(extras.warmup_steps))
        if extras.update_threads > 1:
            callbacks.append(UpdateThreads(extras.update_threads))
        for curriculum, (start, steps) in extras.curricula().items():
            setter, name = CURRICULUM_SETTERS[curriculum]
            callbacks.append(LinearCurriculum(setter, name, start, steps))
        remaining = config.steps - model.num_timesteps
        if remaining > 0:
            with unchecked_distributions():
                model.learn(remaining, callback=CallbackList(callbacks), tb_log_name="run",
                            reset_num_timesteps=fresh and not imitating, progress_bar=config.progress)
            if config.eval_every > 0 and evaluation.num_timesteps > evaluation.last:
                evaluation.evaluate()
    except KeyboardInterrupt:
        interrupted = True
    except Exception as error:  # any error in training: reported, and nothing of it saved
        if _caused_by_interrupt(error):
            interrupted = True
        else:
            failure = error
    finally:
        signal.signal(signal.SIGTERM, previous)
    try:
        if failure is None:
            _save_state(model, run_dir, not on_policy)
    except Diverged as error:
        failure = error
    finally:
        model.get_env().close()
    if failure is not None:
        diverged = (isinstance(failure, Diverged) or not weights_finite(model)  # torch's distributions refuse
                    or (isinstance(failure, ValueError) and "invalid values" in str(failure)))  # NaN/inf parameters
        raise TrainingFailed(run_dir, model.num_timesteps, failure, diverged) from failure
    if (run_dir / "learning_curve.csv").is_file():
        plot_learning_curve(run_dir)
    if interrupted:
        raise TrainingInterrupted(run_dir)
    return run_dir


__all__ = ["CURRICULUM_SETTERS", "OPTIONS", "RESUMABLE", "TrainingFailed", "TrainingInterrupted", "check_teacher", "init_files",
           "new_model", "resolve", "resume", "resume_config", "train", "train_env", "unchecked_distributions",
           "zero_actor_output"]
