"""``upright train``: a residual (``--prior``) or from-scratch policy trained with
stable-baselines3, as a new run folder or the continuation of one (``--resume``; docs/training.md)."""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import Any

from upright.commands import Subparsers
from upright.envs.files import writable_folder
from upright.envs.render import RenderingUnavailable
from upright.eval.settings import parse_settings
from upright.policies.algorithms import ALGOS
from upright.eval.video import CLIP_FPS, CLIP_SECONDS, CLIP_SIZE
from upright.policies.run_folder import TrainConfig
from upright.training.config import BATCHED_MIN_ENVS, SUBPROC_MIN_CORES, VEC_ENVS, split_train_settings

#: ``upright train`` options and the :class:`~upright.policies.run_folder.TrainConfig` fields they set.
_TRAIN_FIELDS = {"env": "env_id", "prior": "prior", "algo": "algo", "steps": "steps", "n_envs": "n_envs",
                 "seed": "seed", "hyperparams": "hyperparams_file", "out": "out", "name": "name", "init": "init",
                 "eval_every": "eval_every", "eval_episodes": "eval_episodes", "eval_video": "eval_video",
                 "checkpoint_every": "checkpoint_every", "progress": "progress", "vec_env": "vec_env"}


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("train", help="train a residual (--prior) or from-scratch policy with stable-baselines3",
                              description="Options left out take the defaults below for a new run; --resume keeps "
                                          "the run's own settings, refuses options that differ from them and changes "
                                          "only --steps (more than done), --eval-every, --eval-video, "
                                          "--checkpoint-every and --progress.")
    p.add_argument("--env", default=None, help="environment id, e.g. upright/WolfgangGetUp-v0")
    p.add_argument("--prior", default=None, help="baseline the policy is a residual on (default: from scratch)")
    p.add_argument("--algo", default=None, help=f"{', '.join(ALGOS)} (default: {TrainConfig.algo})")
    p.add_argument("--steps", type=int, default=None,
                   help=f"total environment steps (default: {TrainConfig.steps}; resumed: the run's own)")
    p.add_argument("--n-envs", type=int, default=None,
                   help=f"environment copies (default: {TrainConfig.n_envs})")
    p.add_argument("--vec-env", default=None, metavar="|".join(VEC_ENVS),
                   help="vector environment of the copies: dummy (one process), subproc (a worker process each, one "
                        "BLAS/torch thread each), batched (one worker process per usable core, each stepping its share "
                        f"of the copies), auto (subproc from {SUBPROC_MIN_CORES} usable cores; below, batched from "
                        f"{BATCHED_MIN_ENVS} copies, else dummy); "
                        "the run's config.yml records the class it ran with (default: auto; resumed: the run's own)")
    p.add_argument("--seed", type=int, default=None,
                   help=f"seed of the first training environment (default: {TrainConfig.seed})")
    p.add_argument("--hyperparams", default=None, metavar="FILE",
                   help="hyperparameter YAML (default: the shipped training/hyperparams/ALGO.yml)")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="environment keyword arguments, params.KEY prior overrides and hp.KEY hyperparameters, "
                        "e.g. --set start=random residual_scale=0.3 hp.learning_rate=1e-4 "
                        "hp.policy_kwargs.log_std_init=-3")
    p.add_argument("--out", default=None, help=f"folder of the runs (default: {TrainConfig.out})")
    p.add_argument("--name", default=None, help="run folder name (default: ALGO-PRIOR-N)")
    p.add_argument("--resume", default=None, metavar="RUN_DIR",
                   help="continue this run (from its newest complete checkpoint if it was killed) up to its steps "
                        "or --steps total steps")
    p.add_argument("--init", default=None, metavar="POLICY",
                   help="fine-tune: start a new run from this trained policy's weights and normalisation "
                        "(a run folder, one of its .zip files or zoo:NAME; same algorithm and spaces; copied "
                        "into the run's init/), with this command's hyperparameters")
    p.add_argument("--eval-every", type=int, default=None,
                   help=f"evaluate every N steps (0: never; default {TrainConfig.eval_every})")
    p.add_argument("--eval-episodes", type=int, default=None,
                   help=f"episodes per evaluation (default: {TrainConfig.eval_episodes})")
    p.add_argument("--eval-set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="environment keyword arguments that differ in the evaluation (the task the policy is "
                        "for; loading and shipping the run use them too), e.g. --set start=random,standing "
                        "--eval-set start=random")
    p.add_argument("--eval-video", action=argparse.BooleanOptionalAction, default=None,
                   help="at each evaluation also a short clip of the policy (the first evaluation seed, at most "
                        f"{CLIP_SECONDS:g} s at {CLIP_FPS} frames/s, {CLIP_SIZE[0]}x{CLIP_SIZE[1]}) as the TensorBoard "
                        "video eval/video; needs off-screen rendering (exit 3 without it) "
                        f"(default: {'on' if TrainConfig.eval_video else 'off'})")
    p.add_argument("--checkpoint-every", type=int, default=None,
                   help=f"checkpoint every N steps (default: {TrainConfig.checkpoint_every})")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help=f"progress bar (default: {'on' if TrainConfig.progress else 'off'})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """A new run from the options given (the others: :class:`TrainConfig`'s defaults), or with
    ``--resume`` the continuation of one, which gets only the options given, to check them
    against the run's own settings. Exit 130 when interrupted (the run saved, resumable), 1 when
    training failed, 3 (before anything is written) when ``--eval-video`` cannot render here."""
    from upright.training.train import TrainingFailed, TrainingInterrupted, resume, train  # torch, SB3: only this command

    env_kwargs, hp = split_train_settings(parse_settings(args.set))
    eval_env_kwargs, eval_hp = split_train_settings(parse_settings(args.eval_set))
    if eval_hp:
        raise ValueError(f"--eval-set takes environment keyword arguments only, got hp.{next(iter(eval_hp))}")
    if args.resume is None and args.env is None:
        raise ValueError("give --env ID (or --resume RUN_DIR)")
    if args.resume is not None and args.init is not None:
        raise ValueError(f"--init {args.init!r} starts a new run; --resume continues one: give one of them")
    given: dict[str, Any] = {field: getattr(args, option) for option, field in _TRAIN_FIELDS.items()
                             if getattr(args, option) is not None}
    for field, value in (("env_kwargs", env_kwargs), ("hp_overrides", hp), ("eval_env_kwargs", eval_env_kwargs)):
        if value:
            given[field] = value
    try:
        if args.resume is not None:
            writable_folder(args.resume, "--resume")
            run_dir = resume(args.resume, given, command=args.command_line)
        else:
            writable_folder(args.out or TrainConfig.out)
            run_dir = train(TrainConfig(**given, command=args.command_line))
    except RenderingUnavailable as error:
        print(f"upright train: --eval-video: {error}", file=sys.stderr)
        return 3
    except TrainingInterrupted as stopped:
        print(f"upright train: interrupted; saved {stopped.run_dir} (continue with --resume {stopped.run_dir})",
              file=sys.stderr)
        return 130
    except TrainingFailed as failed:
        if not failed.diverged and failed.__cause__ is not None:  # a fault, not the optimiser: where it happened
            traceback.print_exception(failed.__cause__, file=sys.stderr)
        print(f"upright train: {failed}", file=sys.stderr)
        return 1
    print(f"wrote {run_dir}")
    return 0


__all__ = ["register", "run"]
