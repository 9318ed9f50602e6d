"""SB3 callbacks of ``upright train`` and the saving they share:

- :class:`RewardTerms`: ``reward/<term>``, the reward terms' episode sums;
- :class:`EpisodeMetrics`: ``episode/<metric>``, the training episodes' get-up and walk metrics;
- :class:`Hyperparameters`: the run's settings and hyperparameters as TensorBoard's HParams;
- :class:`Evaluation`: every N steps, episodes on fixed held-out seeds through the shared runner
  with the training normalisation frozen; logs ``eval/*`` (and the prior's own numbers on the same
  seeds as ``prior/*``, computed once; optionally a clip of the policy as the video
  ``eval/video``), appends ``learning_curve.csv``, keeps ``best_model.zip``;
- :class:`Checkpoints`: the model with its normalisation and replay buffer every N steps;
- :class:`ActorWarmup`: the actor frozen for the first environment steps (critic warm-up);
- :class:`LinearCurriculum`: the conditions' random torso push or model variation ramped up over the first steps;
- :class:`FiniteWeights`: a diverged optimiser stops the run after the update that broke it.

Every file they write goes through :func:`~upright.policies.run_folder.write_atomically`, models with their companions through
:func:`save_model_files` (the invariant a run folder keeps is in :mod:`upright.policies.run`).
"""

from __future__ import annotations

import csv
import importlib
import io
import pickle
import time
from pathlib import Path
from typing import Any

import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecNormalize

from upright.envs.render import Camera
from upright.eval.results import aggregate, score, summary_numbers, write_results
from upright.eval.runner import run_episodes
from upright.eval.video import CLIP_SIZE, record_clip
from upright.policies.run import STEPS_STAMP, normalizer_path, replay_buffer_path
from upright.policies.run_folder import CURVE_COLUMNS, read_learning_curve, write_atomically, write_text_atomically
from upright.policies.sb3 import ModelPolicy
from upright.training.vec_env import EPISODE_REWARD_TERMS

class Diverged(RuntimeError):
    """The model's weights are no longer finite: saving it would replace a good model with a
    diverged one."""


def weights_finite(model: Any) -> bool:
    """Whether every parameter of ``model``'s policy is finite."""
    return all(bool(parameter.isfinite().all()) for parameter in model.policy.parameters())


def save_model_files(model: Any, normalizer: VecNormalize | None, model_path: Path, *,
                     replay_buffer: bool = False) -> None:
    """Save ``model`` as ``model_path`` with ``normalizer``'s statistics
    (:func:`~upright.policies.run.normalizer_path`, stamped with the model's steps) and, with
    ``replay_buffer``, its replay buffer (:func:`~upright.policies.run.replay_buffer_path`). Each
    file is written atomically and the model file is renamed last, so that wherever the process is
    killed, a model file on disk was written after (or with) the companions beside it. Raises
    :class:`Diverged` without writing anything when the model's weights are not finite."""
    if not weights_finite(model):
        raise Diverged(f"non-finite weights at step {model.num_timesteps}")
    if replay_buffer:
        write_atomically(replay_buffer_path(model_path), model.save_replay_buffer)
    if normalizer is not None:
        setattr(normalizer, STEPS_STAMP, model.num_timesteps)
        write_atomically(normalizer_path(model_path), lambda temporary: normalizer.save(str(temporary)))
    write_atomically(model_path, model.save)


class FiniteWeights(BaseCallback):
    """Raises :class:`Diverged` at the start of a rollout (after every update) when the model's
    weights are no longer finite: training runs with torch's distribution argument checks off
    (:func:`~upright.training.train.unchecked_distributions`), which would otherwise refuse the
    first non-finite action mean, so a diverged optimiser still stops the run before it collects
    with a broken policy."""

    def _on_rollout_start(self) -> None:
        if not weights_finite(self.model):
            raise Diverged(f"non-finite weights at step {self.num_timesteps}")

    def _on_step(self) -> bool:
        return True


class RewardTerms(BaseCallback):
    """Logs the mean of the finished episodes' reward-term sums as ``reward/<term>``: each copy
    sums its own terms (:class:`~upright.training.vec_env.TrainingInfo`) and hands the sums over in
    the info of an episode's last step."""

    def _on_step(self) -> bool:
        for info, done in zip(self.locals["infos"], self.locals["dones"]):
            if done:
                for term, total in info.get(EPISODE_REWARD_TERMS, {}).items():
                    self.logger.record_mean(f"reward/{term}", total)
        return True


def _number(value: Any) -> float | None:
    """``value`` as a number to log (a bool as 0 or 1), or None for what is no single number (None,
    a list, a name)."""
    if isinstance(value, (bool, int, float)) and not isinstance(value, str):
        return float(value)
    return None


class EpisodeMetrics(BaseCallback):
    """Logs the mean over the training episodes that ended since the last log of every single
    number in their ``info["episode_metrics"]`` (:mod:`upright.envs.metrics`) as
    ``episode/<metric>``: get-up ``success``, ``stood_up``, ``time_to_stand`` (s), ``falls``,
    ``tries``, ...; walk ``falls``, ``linear_tracking_error`` (m/s), ``yaw_tracking_error``
    (rad/s), ``distance_before_fall`` (m), ...; booleans as 0/1. A metric an episode lacks (the
    ``time_to_stand`` of an episode that did not stand) is left out of that mean, not counted as 0."""

    def _on_step(self) -> bool:
        for info, done in zip(self.locals["infos"], self.locals["dones"]):
            if done:
                for key, value in info.get("episode_metrics", {}).items():
                    number = _number(value)
                    if number is not None:
                        self.logger.record_mean(f"episode/{key}", number)
        return True


def flat_hyperparameters(values: dict[str, Any], prefix: str = "") -> dict[str, float | str | bool]:
    """``values`` (nested mappings of settings) as TensorBoard's HParams take them: dotted keys
    (``policy_kwargs.net_arch.pi``), numbers and booleans as they are, lists and anything else as
    text, unset (None) values left out."""
    flat: dict[str, float | str | bool] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if value is None:
            continue
        if isinstance(value, dict):
            flat.update(flat_hyperparameters(value, f"{name}."))
        elif isinstance(value, (bool, int, float, str)):
            flat[name] = value
        else:
            flat[name] = str(value)
    return flat


class Hyperparameters(BaseCallback):
    """At the start of training, the run's ``settings`` (algorithm, environment, prior, copies,
    seed, steps, environment keyword arguments as ``env.KEY``) and hyperparameters as TensorBoard's
    HParams, with the metrics its HParams view compares runs on (:data:`HPARAM_METRICS`)."""

    #: Scalars of every run the HParams view shows beside the settings.
    HPARAM_METRICS = ("eval/success_rate", "eval/mean_return", "rollout/ep_rew_mean", "episode/falls")

    def __init__(self, settings: dict[str, Any], hyperparameters: dict[str, Any]) -> None:
        super().__init__()
        self.values = {**flat_hyperparameters(settings), **flat_hyperparameters(hyperparameters)}

    def _on_training_start(self) -> None:
        from stable_baselines3.common.logger import HParam

        metrics = {name: 0.0 for name in self.HPARAM_METRICS}  # filled by the scalars of those names
        self.logger.record("hparams", HParam(self.values, metrics), exclude=("stdout", "log", "json", "csv"))

    def _on_step(self) -> bool:
        return True


#: What TensorBoard's video summary needs beside torch: ``SummaryWriter.add_video`` (SB3's
#: ``Video`` goes through it) encodes the frames as an animated GIF with this module; without it,
#: it prints a note and logs no frames instead of raising.
VIDEO_ENCODER = "moviepy.editor"


def check_video_logging(env: Any) -> None:
    """Check that this installation can log an evaluation clip of ``env`` to TensorBoard:
    ModuleNotFoundError when :data:`VIDEO_ENCODER` is missing (the ``train`` extra installs it),
    :class:`~upright.envs.render.RenderingUnavailable` (saying what to install) when MuJoCo cannot
    render off-screen here."""
    importlib.import_module(VIDEO_ENCODER)
    Camera(env.unwrapped.sim.model, *CLIP_SIZE).close()


class Evaluation(BaseCallback):
    """Every ``every`` environment steps (and at the end of training, :meth:`evaluate`): ``episodes``
    episodes from seed ``seed`` of the deterministic policy through
    :func:`upright.eval.runner.run_episodes`, observations normalised with a frozen copy of the
    training statistics. Writes ``eval/<steps>/results.json``, appends ``learning_curve.csv`` and
    saves ``best_model.zip`` (+ ``best_vecnormalize.pkl``) on a new best. With a prior, the
    prior alone (the zero residual) is evaluated once on the same seeds and logged as ``prior/*``
    beside every evaluation. With ``video``, the start of the first evaluation episode again (seed
    ``seed``) as a small clip (:func:`~upright.eval.video.record_clip`: a few frames per
    simulated second, at most :data:`~upright.eval.video.CLIP_SECONDS` s, played in real time),
    logged to TensorBoard as the video ``eval/video`` at the evaluation's step (only there: no
    stdout, CSV or JSON). A resumed run continues the wall-clock and the best score of the rows
    already in ``learning_curve.csv`` (the best only while its ``best_model.zip`` is there); a run
    that started before training (``elapsed`` seconds of imitation, its steps already counted) is
    evaluated once when training starts."""

    def __init__(self, run_dir: Path, env_id: str, env_kwargs: dict[str, Any], *, every: int, episodes: int,
                 seed: int, has_prior: bool, elapsed: float = 0.0, video: bool = False) -> None:
        super().__init__()
        self.run_dir, self.env_id, self.env_kwargs = run_dir, env_id, env_kwargs
        self.every, self.episodes, self.seed, self.has_prior = every, episodes, seed, has_prior
        self.video = video
        rows = read_learning_curve(run_dir / "learning_curve.csv")
        self.wall_offset = rows[-1]["wall_seconds"] if rows else elapsed
        kept = (run_dir / "best_model.zip").is_file()
        self._best: tuple[float, ...] | None = max((score(r) for r in rows), default=None) if kept else None
        self._start = time.monotonic()
        self.last = 0
        self._prior: dict[str, float | None] | None = None

    def _on_training_start(self) -> None:
        self._start = time.monotonic()
        self.last = self.num_timesteps
        if self.every > 0 and self.num_timesteps > 0 and not (self.run_dir / "learning_curve.csv").is_file():
            self.evaluate()  # the imitated policy, before PPO changes it

    def _on_step(self) -> bool:
        if self.every > 0 and self.num_timesteps - self.last >= self.every:
            self.evaluate()
        return True

    def _run(self, policy: Any, out: Path) -> dict[str, float | None]:
        run = run_episodes(self.env_id, policy, self.episodes, env_kwargs=self.env_kwargs, seed=self.seed,
                           progress=False)
        result = aggregate(run)
        write_results(result, out)
        # Ctrl-C or SIGTERM during the evaluation: the runner kept the finished episodes (written
        # above); stop the training too, before a curve row or a best model comes from them.
        if run.interrupted:
            raise KeyboardInterrupt
        return summary_numbers(result)

    def evaluate(self) -> dict[str, float | None]:
        """Evaluate now, log and record (see the class)."""
        self.last = self.num_timesteps
        normalizer = None
        if isinstance(self.training_env, VecNormalize):
            normalizer = pickle.loads(pickle.dumps(self.training_env))  # the statistics, not the environments
            normalizer.training = False
        policy = ModelPolicy(self.model, normalizer, name=f"{self.run_dir.name}@{self.num_timesteps}")
        numbers = self._run(policy, self.run_dir / "eval" / f"{self.num_timesteps:09d}")
        for key, value in numbers.items():
            if value is not None:
                self.logger.record(f"eval/{key}", value)
        if self.has_prior:
            if self._prior is None:
                self._prior = self._run("zero", self.run_dir / "eval" / "prior")
            for key, value in self._prior.items():
                if value is not None:
                    self.logger.record(f"prior/{key}", value)
        wall = self.wall_offset + time.monotonic() - self._start
        self._append_curve(numbers, wall)
        if self._best is None or score(numbers) > self._best:
            self._best = score(numbers)
            save_model_files(self.model, self.training_env if normalizer is not None else None,
                             self.run_dir / "best_model.zip")
        if self.video:  # after the row and the best model: an interrupt while rendering keeps them
            self._log_clip(policy)
        self.logger.dump(self.num_timesteps)
        return numbers

    def _log_clip(self, policy: ModelPolicy) -> None:
        """Record the clip of ``policy`` and hand it to the logger as the video ``eval/video``
        (TensorBoard only; SB3's ``Video`` takes the frames as (batch, time, channel, height,
        width))."""
        from stable_baselines3.common.logger import Video

        frames, fps = record_clip(self.env_id, policy, env_kwargs=self.env_kwargs, seed=self.seed)
        video = torch.from_numpy(frames).permute(0, 3, 1, 2).unsqueeze(0)
        self.logger.record("eval/video", Video(video, fps), exclude=("stdout", "log", "json", "csv"))

    def _append_curve(self, numbers: dict[str, float | None], wall: float) -> None:
        path = self.run_dir / "learning_curve.csv"
        text = io.StringIO()
        writer = csv.writer(text)
        if path.is_file():
            text.write(path.read_text())
        else:
            writer.writerow(CURVE_COLUMNS)
        row = {"steps": self.num_timesteps, "wall_seconds": round(wall, 2), **numbers}
        writer.writerow(["" if row[c] is None else row[c] for c in CURVE_COLUMNS])
        write_text_atomically(path, text.getvalue())


class Checkpoints(BaseCallback):
    """Whenever the environment steps pass a multiple of ``every``: the model, its normalisation
    statistics (when it normalises) and its replay buffer (with ``replay_buffer``) as
    ``folder/model_N_steps.zip``, ``model_vecnormalize_N_steps.pkl`` and
    ``model_replay_buffer_N_steps.pkl`` (SB3's CheckpointCallback names, which wrote them in place
    and the model first), written by :func:`save_model_files` so that a checkpoint whose model file
    exists is complete."""

    def __init__(self, folder: Path, every: int, *, replay_buffer: bool) -> None:
        super().__init__()
        self.folder, self.every, self.replay_buffer = folder, every, replay_buffer
        self._last = 0

    def _on_training_start(self) -> None:
        self.folder.mkdir(exist_ok=True)
        self._last = self.num_timesteps

    def _on_step(self) -> bool:
        if self.num_timesteps // self.every > self._last // self.every:
            self._last = self.num_timesteps
            save_model_files(self.model, self.model.get_vec_normalize_env(),
                             self.folder / f"model_{self.num_timesteps}_steps.zip", replay_buffer=self.replay_buffer)
        return True


def actor_parameters(model: Any) -> list[Any]:
    """The parameters of ``model``'s actor: PPO's policy network, action layer and log-std; the
    actor of SAC/TD3."""
    policy = model.policy
    if hasattr(policy, "actor"):
        return list(policy.actor.parameters())
    params = [*policy.mlp_extractor.policy_net.parameters(), *policy.action_net.parameters()]
    if isinstance(getattr(policy, "log_std", None), type(params[0])):
        params.append(policy.log_std)
    return params


class ActorWarmup(BaseCallback):
    """Freezes the actor (no gradient) until ``steps`` environment steps, so that the critic learns
    the prior's values first (the "burn-in" of residual policy learning)."""

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = steps
        self._frozen = False

    def _set(self, frozen: bool) -> None:
        for parameter in actor_parameters(self.model):
            parameter.requires_grad_(not frozen)
        self._frozen = frozen

    def _on_training_start(self) -> None:
        self._set(self.num_timesteps < self.steps)

    def _on_step(self) -> bool:
        if self._frozen and self.num_timesteps >= self.steps:
            self._set(False)
        return True


class LinearCurriculum(BaseCallback):
    """A curriculum over one strength of the training copies' conditions: ``start`` of it at
    step 0, rising linearly to all of it at ``steps`` environment steps, set before each rollout
    through the environments' ``setter`` (``set_push_strength``: the conditions' continuous random
    push, ``hp.push_curriculum_*``; ``set_model_variation``: their model variation,
    ``hp.model_curriculum_*``). The periodic evaluation's environments are separate and always
    feel all of it; a resumed run goes on from its step count. TensorBoard: ``curriculum/NAME``."""

    def __init__(self, setter: str, name: str, start: float, steps: int) -> None:
        super().__init__()
        self.setter = setter
        self.name = name
        self.start = start
        self.steps = steps

    def strength(self, step: int) -> float:
        """The fraction that acts at environment step ``step``."""
        return self.start + (1.0 - self.start) * min(1.0, step / self.steps)

    def _on_rollout_start(self) -> None:
        strength = self.strength(self.num_timesteps)
        self.training_env.env_method(self.setter, strength)
        self.logger.record(f"curriculum/{self.name}", strength)

    def _on_step(self) -> bool:
        return True


class UpdateThreads(BaseCallback):
    """``threads`` torch threads while the model updates, one while it collects transitions
    (``hp.update_threads``): SB3 calls ``on_rollout_end`` just before each update and
    ``on_rollout_start`` before the next collection."""

    def __init__(self, threads: int) -> None:
        super().__init__()
        self.threads = threads

    def _on_rollout_start(self) -> None:
        torch.set_num_threads(1)

    def _on_rollout_end(self) -> None:
        torch.set_num_threads(self.threads)

    def _on_training_end(self) -> None:
        self._on_rollout_start()

    def _on_step(self) -> bool:
        return True


__all__ = ["VIDEO_ENCODER", "ActorWarmup", "Checkpoints", "Diverged", "EpisodeMetrics", "Evaluation", "FiniteWeights",
           "Hyperparameters", "LinearCurriculum", "RewardTerms", "UpdateThreads", "actor_parameters",
           "check_video_logging", "flat_hyperparameters", "save_model_files", "weights_finite"]
