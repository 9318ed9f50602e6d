"""``upright eval`` and ``upright video``: a policy's episodes in an environment, measured (the
metrics of N episodes) or recorded (one episode as an MP4). Both take the same arguments for the
environment, the policy and their settings."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from upright.commands import Subparsers
from upright.envs.residual import load_params_file
from upright.envs.conditions import PRESETS
from upright.envs.files import writable_file, writable_folder
from upright.envs.render import RenderingUnavailable
from upright.eval.comparison import prior_alone
from upright.eval.results import aggregate, print_table, write_results
from upright.eval.runner import check_episodes, resolve_policy, run_episodes
from upright.eval.settings import env_settings, parse_settings, split_settings
from upright.eval.video import join_videos, record_video
from upright.policies.base import Policy
from upright.policies.onnx_policy import export_env, is_export_policy
from upright.policies.run import is_run_policy, run_env_kwargs


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("eval", help="run a policy for N episodes in parallel, print and write the metrics "
                                           "(of the finished episodes; exit 1 when an episode failed)")
    _add_episode_arguments(p)
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--workers", type=int, default=1, help="worker processes (default: 1, in this process)")
    p.add_argument("--out", default=None, help="output directory (default: results/eval/ENV-POLICY)")
    p.set_defaults(func=run_eval)

    p = subparsers.add_parser("video", help="record one episode of a policy to an MP4 file")
    _add_episode_arguments(p)
    p.add_argument("--out", required=True, help="output MP4 file")
    p.add_argument("--beside-prior", action="store_true",
                   help="a trained residual (left) and its prior alone (right) on the same seed, side by side")
    p.set_defaults(func=run_video)


def _add_episode_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments ``eval`` and ``video`` share: environment, policy, seed, keyword arguments."""
    p.add_argument("--env", required=True, help="environment id, e.g. upright/NaoGetUp-v0")
    p.add_argument("--policy", required=True,
                   help="policy name (zero, random, hold, a baseline), a run folder of upright train, one of its "
                        ".zip files, zoo:NAME, an export onnx:DIR, a hand-designed residual (feedback:NAME or a "
                        ".yml, with --set prior=...) or an SB3 .zip")
    p.add_argument("--seed", type=int, default=0, help="seed of the first episode (episode i: seed + i)")
    p.add_argument("--start", default=None, help="get-up start: prone, supine, side, fall, random, standing")
    p.add_argument("--conditions", default=None, help=f"conditions preset: {', '.join(PRESETS)}")
    p.add_argument("--params", default=None, metavar="FILE",
                   help="controller parameter overrides (YAML of dotted keys, e.g. upright optimize's best_params.yaml)")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="more environment keyword arguments and params.KEY controller overrides, "
                        "e.g. --set command=0.25,0,0 max_episode_seconds=5 params.compensation=false")


def _episode_settings(args: argparse.Namespace) -> tuple[dict[str, Any], str | Policy]:
    """The environment keyword arguments (a trained policy's own, under the ``--set`` settings plus
    ``--start`` and ``--conditions``, each named in one place only) and the policy (with the
    controller overrides of the ``--params`` file and the ``--set params.KEY=VALUE`` items over them;
    for a policy trained on a prior they override that prior's ``prior_params`` instead). A trained
    policy keeps the prior it was trained with: ``--set prior=`` naming another is a ValueError."""
    kwargs, params = split_settings(parse_settings(args.set))
    if args.params is not None:
        params = {**load_params_file(args.params), **params}
    for key in ("start", "conditions"):
        value = getattr(args, key)
        if value is not None:
            if key in kwargs:
                raise ValueError(f"{key} given both as --{key} and as --set {key}=...")
            kwargs[key] = value
    exported = is_export_policy(args.policy)
    trained = export_env(args.policy)[1] if exported else run_env_kwargs(args.policy)
    if "prior" in kwargs and (exported or is_run_policy(args.policy)) and kwargs["prior"] != trained.get("prior"):
        own = f"prior {trained['prior']!r}" if trained.get("prior") else "no prior"
        raise ValueError(f"policy {args.policy!r} was trained with {own}, got --set prior={kwargs['prior']!r}; "
                         "its actions are residuals of its own prior: leave prior out")
    if trained and params:  # a trained residual: the overrides apply to its prior
        if "prior" not in trained:
            raise ValueError(f"policy {args.policy!r} was trained without a prior and takes no params, got {params}")
        return env_settings(kwargs, params, trained), resolve_policy(args.policy, {})
    return env_settings(kwargs, {}, trained), resolve_policy(args.policy, params)


def folder_name(policy: str) -> str:
    """A one-component folder name for ``policy``: a baseline or ``zoo:NAME`` as it is, a run
    folder by its name, a model file by its run folder's name and its stem (no path separators, so
    ``results/eval/`` holds one folder per policy whatever path it was given by)."""
    path = Path(policy)
    return f"{path.parent.name}-{path.stem}" if path.suffix == ".zip" else path.name


def run_eval(args: argparse.Namespace) -> int:
    """Exit 1 when an episode failed (the finished ones are still written), 130 when interrupted."""
    env_kwargs, policy = _episode_settings(args)
    name = policy if isinstance(policy, str) else policy.name
    out = Path(args.out) if args.out else Path("results", "eval", f"{args.env.split('/')[-1]}-{folder_name(name)}")
    writable_folder(out)  # before the episodes, not after them
    check_episodes(args.env, policy, env_kwargs, seed=args.seed)  # a bad setting or parameter: before the bar
    run = run_episodes(args.env, policy, args.episodes, env_kwargs=env_kwargs, seed=args.seed, workers=args.workers,
                       keep_failed=True)
    result = aggregate(run)
    print_table(result)
    json_path, md_path = write_results(result, out)
    print(f"wrote {json_path} and {md_path}")
    for failure in run.failed:
        print(f"upright eval: episode {failure['episode']} (seed {failure['seed']}) failed: {failure['error']}",
              file=sys.stderr)
    if run.interrupted:
        return 130
    missing = run.episodes_requested - len(run.records) - len(run.failed)
    if missing:
        print(f"upright eval: {missing} of {run.episodes_requested} episodes did not run (the run stopped when a "
              "worker died)", file=sys.stderr)
    return 1 if run.failed else 0


def run_video(args: argparse.Namespace) -> int:
    """Exit 3 (one line saying what is missing) where MuJoCo cannot render."""
    env_kwargs, policy = _episode_settings(args)
    out = Path(args.out)
    writable_file(out)
    try:
        if not args.beside_prior:
            path, record = record_video(args.env, policy, out, env_kwargs=env_kwargs, seed=args.seed)
            print(f"wrote {path} ({record['steps']} steps, return {record['return']:.2f})")
            return 0
        if env_kwargs.get("prior") is None:
            raise ValueError(f"--beside-prior needs a policy trained on a prior; {args.policy!r} has none")
        prior, prior_kwargs = prior_alone(env_kwargs)
        parts = []
        for run_policy, kwargs, suffix in ((policy, env_kwargs, ".residual.mp4"), (prior, prior_kwargs, ".prior.mp4")):
            part = out.with_name(out.stem + suffix)
            _, record = record_video(args.env, run_policy, part, env_kwargs=kwargs, seed=args.seed)
            name = run_policy if isinstance(run_policy, str) else run_policy.name
            parts.append((part, f"{name}: {record['steps']} steps, return {record['return']:.0f}"
                                + (f", success {record['success']}" if "success" in record else "")))
            print(f"wrote {part} ({parts[-1][1]})")
    except RenderingUnavailable as error:
        print(f"upright video: {error}", file=sys.stderr)
        return 3
    print(f"wrote {join_videos(parts, out)} (left: {parts[0][1]}; right: {parts[1][1]})")
    return 0


__all__ = ["folder_name", "register", "run_eval", "run_video"]
