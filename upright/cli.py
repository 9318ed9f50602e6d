"""The ``upright`` command line: ``info``, ``check-model`` (a user's MJCF of a robot against ours),
``view``, ``bench``, ``report`` (the main job), ``eval``,
``video``, ``experiment`` (a paper's protocol by name), ``optimize`` (controller parameters),
``identify`` (servo parameters fitted to a robot's joint logs), ``train`` (residual or from-scratch
policies), ``ship`` (a trained policy into the zoo), ``export`` (a trained policy as ONNX with its
robot-side spec), ``zoo-conf`` (our hyperparameters as rl-baselines3-zoo's ``--conf-file``), ``soak``
(random and extreme actions everywhere, counting exceptions, non-finite values and blow-ups) and
``check-same`` (a refactoring's bit-identity on this machine against a git revision)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

import upright  # noqa: F401  (selects the GL backend before mujoco renders)
from upright import __version__
from upright.envs.base import load_params_file
from upright.envs.conditions import PRESETS, SERVO_PARAMETERS, TERRAINS
from upright.envs.render import RenderingUnavailable
from upright.envs.robots import ROBOT_NAMES, get_robot
from upright.eval.bench.speed import format_bench, format_parts, run_bench, run_parts
from upright.eval.comparison import prior_alone
from upright.eval.experiments import experiments, run_experiment
from upright.eval.history import (DEFAULT_DOCS_DIR, add_run, read_curves, read_runs, record_paths, runs_tables,
                                   write_docs)
from upright.eval.pictures import render_pose
from upright.eval.report import write_report
from upright.eval.results import aggregate, print_table, write_results
from upright.eval.check_model import check_model
from upright.eval.robot_info import robot_info
from upright.eval.runner import check_episodes, resolve_policy, run_episodes
from upright.eval.same_machine import CASES, check_same
from upright.eval.settings import env_settings, parse_settings, split_settings
from upright.eval.soak import check_soak, print_result, soak, write
from upright.eval.tables import print_tables
from upright.eval.video import join_videos, record_video
from upright.policies.algorithms import ALGOS
from upright.policies.base import Policy
from upright.envs.files import writable_file, writable_folder
from upright.policies.onnx_policy import export_env, is_export_policy
from upright.policies.run import is_run_policy, run_env_kwargs
from upright.policies.run_folder import TrainConfig
from upright.training.config import BATCHED_MIN_ENVS, SUBPROC_MIN_CORES, VEC_ENVS, split_train_settings
from upright.training.export import OPS, export, export_zoo
from upright.training.export_measure import measure as measure_export
from upright.training.ship import ship
from upright.training.zoo_conf import zoo_conf_text


def _cmd_info(args: argparse.Namespace) -> int:
    print(robot_info(args.robot))
    return 0


def _cmd_check_model(args: argparse.Namespace) -> int:
    print(check_model(args.model, args.robot, args.map))
    return 0


def _cmd_view(args: argparse.Namespace) -> int:
    try:
        path = render_pose(args.robot, args.pose, args.scene, Path(args.out), settle=args.settle,
                           width=args.width, height=args.height)
    except RenderingUnavailable as error:
        print(f"upright view: {error}", file=sys.stderr)
        return 3
    print(f"wrote {path}")
    return 0


def _int_list(text: str, option: str) -> list[int]:
    """The comma-separated integers >= 1 of ``option``; ValueError naming a bad item."""
    values = []
    for item in text.split(","):
        try:
            value = int(item)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"{option} takes integers >= 1 separated by commas, got {item!r}")
        values.append(value)
    return values


def _cmd_bench(args: argparse.Namespace) -> int:
    if args.steps < 1:
        raise ValueError(f"--steps must be >= 1, got {args.steps}")
    if args.out:
        writable_file(args.out)
    if not args.training and (args.n_envs is not None or args.vec_env is not None):
        raise ValueError("--n-envs and --vec-env are options of --training")
    if args.training and args.parts:
        raise ValueError("--parts is an option of the environment bench, not of --training")
    if args.set and not args.training:
        raise ValueError("--set is an option of --training (hyperparameters, hp.KEY=VALUE)")
    command = f"upright bench --steps {args.steps}"
    if args.training:
        from upright.training import bench  # torch, SB3: only this command
        from upright.training.config import split_train_settings

        env_kwargs, hp = split_train_settings(parse_settings(args.set))
        if env_kwargs:
            raise ValueError(f"upright bench --training --set takes hyperparameters (hp.KEY=VALUE), got {args.set}")

        if args.n_envs is None and args.vec_env is not None:
            raise ValueError("--vec-env goes with --n-envs (the scaling table)")
        if args.n_envs is not None:
            vec_envs = (args.vec_env or "dummy,subproc").split(",")
            for vec_env in vec_envs:
                if vec_env not in VEC_ENVS:
                    raise ValueError(f"--vec-env takes {', '.join(VEC_ENVS)} separated by commas, got {vec_env!r}")
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
            counts = _int_list(args.n_envs, "--n-envs")

            def measured(row: Any) -> None:  # the bench takes minutes: each row on stderr as it comes
                train = getattr(row, "train_steps_per_s", None)
                print(f"measured {row.env_id} {getattr(row, 'vec_env', 'processes')} x{row.n_envs}: environment "
                      f"{row.env_steps_per_s:.0f} steps/s" + (f", training {train:.0f}" if train else ""),
                      file=sys.stderr, flush=True)

            rows = bench.run_scaling_bench(args.steps, counts, vec_envs, hp_overrides=hp, report=measured)
            text = bench.format_scaling_bench(rows, load=load)
            text += "\n\n" + bench.format_machine_ceiling(bench.run_machine_ceiling(args.steps, counts, report=measured))
            command += f" --training --n-envs {args.n_envs}" + (f" --vec-env {args.vec_env}" if args.vec_env else "")
        else:
            text = bench.format_training_bench(bench.run_training_bench(args.steps, hp_overrides=hp))
            command += " --training"
        command += "".join(f" --set {item}" for item in args.set)
    else:
        text = format_bench(run_bench(args.steps))
        if args.parts:
            text += "\n\nWhere the time goes:\n" + format_parts(run_parts(args.steps))
            command += " --parts"
    print(text)
    if args.out:
        _write_bench_page(Path(args.out), text, command)
    return 0


def _write_bench_page(path: Path, text: str, command: str) -> None:
    """``text`` (a bench's tables) as a generated Markdown page, headed by the command that wrote it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# Speed: `{command}`\n\nGenerated by `{command} --out {path}`; one run, one machine (the tables' last "
                    f"line), ratios measured side by side.\n\n```\n{text}\n```\n")
    print(f"wrote {path}")


def _cmd_report(args: argparse.Namespace) -> int:
    writable_folder(args.out)
    path = write_report(Path(args.out), bench_steps=args.bench_steps, episodes=args.episodes,
                        episode_seconds=args.episode_seconds)
    print(f"wrote {path}")
    return 0


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


def _folder_name(policy: str) -> str:
    """A one-component folder name for ``policy``: a baseline or ``zoo:NAME`` as it is, a run
    folder by its name, a model file by its run folder's name and its stem (no path separators, so
    ``results/eval/`` holds one folder per policy whatever path it was given by)."""
    path = Path(policy)
    return f"{path.parent.name}-{path.stem}" if path.suffix == ".zip" else path.name


def _cmd_eval(args: argparse.Namespace) -> int:
    env_kwargs, policy = _episode_settings(args)
    name = policy if isinstance(policy, str) else policy.name
    out = Path(args.out) if args.out else Path("results", "eval", f"{args.env.split('/')[-1]}-{_folder_name(name)}")
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


def _cmd_video(args: argparse.Namespace) -> int:
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


def _setting_text(value: Any) -> str:
    """``value`` written as ``--set`` reads it (lists comma-separated, None as ``none``)."""
    if isinstance(value, (tuple, list)):
        return ",".join(map(str, value))
    return "none" if value is None else str(value)


def _wrapped(text: str, width: int = 80, indent: str = "  ", hang: str = "") -> list[str]:
    """``text`` in lines of at most ``width`` characters, each after ``indent`` (continuations also
    after ``hang``), broken after spaces and after the commas of a list setting (``a,b,c``), so
    that a long ``--set`` default stays readable at 80 columns."""
    import re

    lines, line = [], indent
    for piece in re.split(r"(?<=[ ,])", text):
        if line.strip() and len(line + piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = indent + hang
        line += piece
    return [*lines, line.rstrip()] if line.strip() else lines


def _cmd_experiment(args: argparse.Namespace) -> int:
    # Registers the optimize-* and sweep-* protocols, which sit above eval's registry (optuna: only
    # this command).
    from upright.training import sweep_workers  # noqa: F401
    from upright.tuning import protocols  # noqa: F401

    if args.list:
        for name, experiment in experiments().items():
            options = " ".join(f"{k}={_setting_text(v)}" for k, v in experiment.options.items())
            print("\n".join([name, *_wrapped(experiment.summary), *(_wrapped(f"--set {options}", hang="  ") if options else [])]))
        return 0
    if args.name is None:
        raise ValueError("give an experiment NAME (upright experiment --list names them)")
    out = Path(args.out) if args.out else Path("results", args.name)
    writable_folder(out)
    run_experiment(args.name, out, episodes=args.episodes, workers=args.workers, settings=parse_settings(args.set),
                   seed=args.seed, docs=args.docs, command=args.command_line, resume=args.resume)
    print(f"wrote {out / 'results.json'} and {out / 'results.md'}")
    return 0


def _cmd_optimize(args: argparse.Namespace) -> int:
    from upright.tuning import OptimizeConfig, optimize  # optuna: only this command

    if not args.controller or not args.robot:
        raise ValueError("give --controller and --robot")
    out = Path(args.out) if args.out else Path("results", "optimize", f"{args.controller}-{args.robot}"
                                                + (f"-{args.start}" if args.start else "") + f"-{args.sampler}")
    writable_folder(out)
    config = OptimizeConfig(
        controller=args.controller, robot=args.robot, start=args.start, conditions=args.conditions,
        sampler=args.sampler, objective=args.objective, trials=args.trials, repetitions=args.repetitions,
        storage=args.storage, study=args.study, workers=args.workers, seed=args.seed, out=out, space=args.space,
        startup=args.startup, prune=args.prune, hand_tuned=not args.no_hand_tuned, settings=parse_settings(args.set))
    summary = optimize(config)
    best = summary["best"]
    if best:
        print(f"best trial {best['number']}: {best['successes']}/{best['episodes']} repetitions succeeded, "
              f"components {', '.join(f'{k} {v:.1f}' for k, v in best['components'].items())}")
    print(f"wrote {out / 'summary.md'} and {out / 'best_params.yaml'} (study {summary['study']} in {summary['storage']})")
    return 0


def _cmd_identify(args: argparse.Namespace) -> int:
    # optuna: only this command
    from upright.tuning.identify import (EXCITATION_AMPLITUDE, excitation, identify, read_recording,
                                         write_identification, write_recording)

    if args.robot is None:
        raise ValueError(f"give --robot ({', '.join(ROBOT_NAMES)})")
    robot = get_robot(args.robot)
    if args.excite:
        if args.log is not None:
            raise ValueError(f"--excite writes a schedule to play; it reads no LOG, got {args.log!r}")
        if args.seconds is None or args.out is None:
            raise ValueError("--excite needs --seconds and --out FILE (.npz or .csv)")
        schedule = excitation(robot, args.seconds, joints=tuple(args.joints) if args.joints else None,
                              amplitude=EXCITATION_AMPLITUDE if args.amplitude is None else args.amplitude)
        path = write_recording(schedule, args.out)
        print(f"wrote {path}: {len(schedule.time)} targets of {len(schedule.joints)} joints, one per control period of "
              f"{robot.control_period} s; play it on the robot hanging on a stand and log the measured angles "
              "(docs/identify.md)")
        return 0
    if args.seconds is not None or args.joints or args.amplitude is not None:
        raise ValueError("--seconds, --joints and --amplitude are options of --excite")
    if args.log is None:
        raise ValueError("give a LOG to identify servo parameters from, or --excite to write a schedule to record")
    parameters = tuple(args.parameters.split(",")) if args.parameters else SERVO_PARAMETERS
    recording = read_recording(args.log)
    out = Path(args.out) if args.out else Path("results", "identify", f"{robot.name}-{Path(args.log).stem}")
    result = identify(recording, robot, per=args.per, parameters=parameters, trials=args.trials, seed=args.seed,
                      max_extra_delay=args.max_delay, progress=True)
    yaml_path, png_path = write_identification(result, recording, out, command=args.command_line)
    for group, values in result.parameters.items():
        print(f"{group}: " + ", ".join(f"{p} {v:.4g} (x{result.factors[group][p]:.3f})" for p, v in values.items()))
    print(f"extra delay {result.extra_delay_cycles} control cycles; mean squared tracking error "
          f"{result.model_error:.3g} rad^2 with our model, {result.error:.3g} with the fit")
    print(f"wrote {yaml_path} and {png_path}")
    return 0


#: ``upright train`` options and the :class:`~upright.policies.run_folder.TrainConfig` fields they set.
_TRAIN_FIELDS = {"env": "env_id", "prior": "prior", "algo": "algo", "steps": "steps", "n_envs": "n_envs",
                 "seed": "seed", "hyperparams": "hyperparams_file", "out": "out", "name": "name", "init": "init",
                 "eval_every": "eval_every", "eval_episodes": "eval_episodes",
                 "checkpoint_every": "checkpoint_every", "progress": "progress", "vec_env": "vec_env"}


def _cmd_train(args: argparse.Namespace) -> int:
    """A new run from the options given (the others: :class:`TrainConfig`'s defaults), or with
    ``--resume`` the continuation of one, which gets only the options given, to check them
    against the run's own settings."""

    from upright.training.train import TrainingFailed, TrainingInterrupted, resume, train  # torch, SB3: only this command

    if args.sweep is not None or args.summary:
        return _cmd_train_sweep(args)
    if args.resume == "":
        raise ValueError("give --resume RUN_DIR (a bare --resume continues a --sweep study)")
    if (args.trials is not None or args.storage is not None or args.study is not None or args.workers is not None
            or args.docs):
        raise ValueError("--trials, --storage, --study, --workers and --docs are options of --sweep SPACE.yml")
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


def _cmd_train_sweep(args: argparse.Namespace) -> int:
    """``upright train --sweep SPACE.yml``: a study of training runs (docs/sweeps.md); with
    ``--summary`` only the summary of its trials so far."""
    from upright.training.sweep import SweepConfig, sweep  # torch, SB3, optuna: only this command

    if args.sweep is None:
        raise ValueError("--summary needs --sweep SPACE.yml (and --storage/--study/--out if the sweep had them)")
    given = [f"--{option.replace('_', '-')}" for option in _TRAIN_FIELDS if option not in ("out", "seed")
             and getattr(args, option) is not None] + (["--eval-set"] if args.eval_set else [])
    if given or args.resume not in (None, ""):
        raise ValueError(f"{(given or ['--resume RUN_DIR'])[0]} is not an option of --sweep: the space file's "
                         "train and set blocks hold every trial run's options")
    if args.out:
        writable_folder(args.out)
    config = SweepConfig(space=args.sweep, trials=args.trials or 20, storage=args.storage, study=args.study,
                         workers=args.workers or 1, seed=args.seed or 0, out=Path(args.out) if args.out else None,
                         settings=parse_settings(args.set), resume=args.resume == "")
    summary = sweep(config, run=not args.summary, docs=Path("docs", "results") if args.docs else None,
                    command=args.command_line)
    states = summary["states"]
    print(f"study {summary['study']} in {summary['storage']}: {states['complete']} complete, {states['pruned']} "
          f"pruned, {states['fail']} failed trials")
    if summary["ship"]:
        print(f"best trial {summary['best']['number']}: {summary['objective']} {summary['best']['value']:.4g}; "
              f"ship it with: {summary['ship']}")
    return 0


def _cmd_soak(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else Path("results", "soak")
    writable_folder(out)
    check_soak(args.steps, workers=args.workers, seed=args.seed, envs=args.env, conditions=args.conditions,
               starts=args.start, priors=args.prior)  # bad input leaves no folder behind
    out.mkdir(parents=True, exist_ok=True)
    (out / "cells.jsonl").unlink(missing_ok=True)
    result = soak(args.steps, workers=args.workers, seed=args.seed, envs=args.env, conditions=args.conditions,
                  starts=args.start, priors=args.prior, progress=args.progress, log=out / "cells.jsonl")
    print_result(result)
    write(result, out, command=args.command_line, docs=Path("docs", "results") if args.docs else None)
    print(f"wrote {out / 'results.json'} and {out / 'results.md'}" + (" and docs/results/soak.md" if args.docs else ""))
    if result.interrupted:
        return 130
    return 1 if result.failed else 0


def _cmd_check_same(args: argparse.Namespace) -> int:
    if args.list:
        for name, (env_id, kwargs, scale) in CASES.items():
            print(f"{name:<42} {env_id} {kwargs} actions ±{scale}")
        return 0
    commit, differences = check_same(args.against, args.case, steps=args.steps)
    cases = len(args.case or CASES)
    if not differences:
        print(f"identical to the bit: {cases} cases, {args.steps} steps each, at {args.against} ({commit[:12]}) "
              "and in the working tree")
        return 0
    for difference in differences:
        print(difference)
    print(f"{len(differences)} of {cases} cases differ from {args.against} ({commit[:12]})")
    return 1


def _cmd_ship(args: argparse.Namespace) -> int:
    entry = ship(args.run, args.name, model=args.model, zoo=args.zoo, overwrite=args.overwrite)
    print(f"wrote {entry} (load it as --policy zoo:{args.name})")
    return 0


def _cmd_history(args: argparse.Namespace) -> int:
    record, page = record_paths(args.docs_dir)
    for run in args.add:
        row = add_run(run, record, verdict=args.verdict, shipped=args.shipped, changed=args.changed,
                      round_=args.round)
        print(f"recorded {row['name']} in {record / 'runs.csv'} and {record / 'curves.csv'}")
    if args.docs:
        own_dir = Path(args.docs_dir) != DEFAULT_DOCS_DIR
        command = "upright history --docs" + (f" --docs-dir {args.docs_dir}" if own_dir else "")
        for path in write_docs(page, record, command=command):
            print(f"wrote {path}")
    elif not args.add:  # the terminal's short form: the page has every column
        table = runs_tables(read_runs(record), read_curves(record))[0]
        short = ("name", "env", "prior", "algo", "steps", "periodic", "prior_alone", "shipped")
        print_tables([replace(table, columns=[c for c in table.columns if c.key in short])])
    return 0


def _cmd_zoo_conf(args: argparse.Namespace) -> int:
    text = zoo_conf_text(args.algo, args.prior, args.env or None, args.hyperparams)
    if args.out is None:
        print(text, end="")
        return 0
    writable_file(args.out)
    Path(args.out).write_text(text)
    print(f"wrote {args.out} (python -m rl_zoo3.train --algo {args.algo} --env ID --gym-packages upright "
          f"--conf-file {args.out})")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    if args.measure:
        out = Path(args.out) if args.out else Path("results", "export")
        writable_folder(out)
        paths = measure_export(out, episodes=args.episodes, observations=args.observations, workers=args.workers,
                               docs=args.docs, command=args.command_line)
        print("wrote " + " and ".join(map(str, paths)))
        return 0
    if args.zoo:
        if args.policy is not None or args.out is not None:
            raise ValueError("--zoo writes every shipped policy's export beside it (policies/zoo/NAME/onnx/): "
                             "give no POLICY and no --out")
        paths = export_zoo(args.ops)
    elif args.policy is None or args.out is None:
        raise ValueError("give POLICY and --out DIR (or --zoo, or --measure)")
    else:
        writable_folder(args.out)
        paths = [export(args.policy, args.out, args.ops)]
    for path in paths:
        print(f"wrote {path}/ ({', '.join(sorted(f.name for f in path.iterdir() if f.is_file()))})")
    return 0


def _add_episode_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments ``eval`` and ``video`` share: environment, policy, seed, keyword arguments."""
    p.add_argument("--env", required=True, help="environment id, e.g. upright/NaoGetUp-v0")
    p.add_argument("--policy", required=True, help="policy name (zero, random, hold, a baseline), a run folder of upright train, one of its .zip files, zoo:NAME, an export onnx:DIR, a hand-designed residual (feedback:NAME or a .yml, with --set prior=...) or an SB3 .zip")
    p.add_argument("--seed", type=int, default=0, help="seed of the first episode (episode i: seed + i)")
    p.add_argument("--start", default=None, help="get-up start: prone, supine, side, fall, random, standing")
    p.add_argument("--conditions", default=None, help=f"conditions preset: {', '.join(PRESETS)}")
    p.add_argument("--params", default=None, metavar="FILE",
                   help="controller parameter overrides (YAML of dotted keys, e.g. upright optimize's best_params.yaml)")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="more environment keyword arguments and params.KEY controller overrides, "
                        "e.g. --set command=0.25,0,0 max_episode_seconds=5 params.compensation=false")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="upright",
        description="Humanoid get-up and walking environments in MuJoCo (NAO V6, Wolfgang-OP).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("info", help="print a robot's joints, limits, servos, masses and total mass")
    p.add_argument("robot", choices=ROBOT_NAMES)
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("check-model", help="what a user's MJCF of a robot does differently from ours: kinematics, "
                                           "masses, inertias, servos, simulation settings (docs/your-robot.md)")
    p.add_argument("model", help="the user's MJCF file")
    p.add_argument("--robot", required=True, choices=ROBOT_NAMES)
    p.add_argument("--map", default=None, help="the model map (YAML): names, zero offsets, signs, sensors")
    p.set_defaults(func=_cmd_check_model)

    p = sub.add_parser("view", help="render a picture of a robot in a named pose on a terrain")
    p.add_argument("robot", choices=ROBOT_NAMES)
    p.add_argument("--pose", default=None, help="keyframe name (default: the standing pose)")
    p.add_argument("--scene", default="flat", choices=TERRAINS, help="terrain (default: flat)")
    p.add_argument("--out", required=True, help="output PNG file")
    p.add_argument("--settle", type=float, default=0.0, help="simulate this many seconds first (servos hold the pose)")
    p.add_argument("--width", type=int, default=640)
    p.add_argument("--height", type=int, default=480)
    p.set_defaults(func=_cmd_view)

    p = sub.add_parser("bench", help="environment steps/s per environment and preset against raw physics and "
                                     "Gymnasium's HumanoidStandup-v5, side by side")
    p.add_argument("--steps", type=int, default=400, help="control steps per measurement (default: 400)")
    p.add_argument("--training", action="store_true",
                   help="instead: PPO and SAC training steps/s against the environment alone for the residual "
                        "configurations, and where PPO's time goes (--steps environment steps each; 2048 is a good "
                        "value)")
    p.add_argument("--n-envs", default=None, metavar="N,N,...",
                   help="with --training: PPO steps/s against the number of environments instead, e.g. 1,2,4, "
                        "wall-clock (an idle machine), with the efficiency over linear")
    p.add_argument("--vec-env", default=None, metavar="CLASS,...",
                   help="with --n-envs: the vector environment classes, of dummy, subproc, batched, auto "
                        "(default: dummy,subproc)")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="hp.KEY=VALUE",
                   help="with --training: hyperparameters over the shipped ones, e.g. --set hp.update_threads=8 "
                        "(the scaling table's one-copy base row keeps one update thread)")
    p.add_argument("--parts", action="store_true",
                   help="also: where each environment's step time goes (physics and the environment's own parts, "
                        "lab and turf, µs per step; wall-clock, so on an idle machine)")
    p.add_argument("--out", help="also write the tables to this Markdown page (e.g. docs/results/speed.md, "
                                 "docs/results/training-speed.md)")
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser("report", help="the main job: simulate and render both robots, benchmark, write a report")
    p.add_argument("--out", default="results", help="output directory (default: results)")
    p.add_argument("--bench-steps", type=int, default=400, help="control steps per bench measurement (default: 400)")
    p.add_argument("--episodes", type=int, default=8, help="episodes per environment and policy (default: 8)")
    p.add_argument("--episode-seconds", type=float, default=None,
                   help="cap every evaluated episode at this many seconds (default: each environment's own length)")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("eval", help="run a policy for N episodes in parallel, print and write the metrics "
                                    "(of the finished episodes; exit 1 when an episode failed)")
    _add_episode_arguments(p)
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--workers", type=int, default=1, help="worker processes (default: 1, in this process)")
    p.add_argument("--out", default=None, help="output directory (default: results/eval/ENV-POLICY)")
    p.set_defaults(func=_cmd_eval)

    p = sub.add_parser("video", help="record one episode of a policy to an MP4 file")
    _add_episode_arguments(p)
    p.add_argument("--out", required=True, help="output MP4 file")
    p.add_argument("--beside-prior", action="store_true",
                   help="a trained residual (left) and its prior alone (right) on the same seed, side by side")
    p.set_defaults(func=_cmd_video)

    p = sub.add_parser("experiment", help="run a paper's protocol by name (--list names them)")
    p.add_argument("name", nargs="?", default=None, help="the protocol's registered name")
    p.add_argument("--list", action="store_true", help="list the protocols, one line each")
    p.add_argument("--episodes", type=int, default=None, help="episodes per cell (default: the protocol's)")
    p.add_argument("--workers", type=int, default=1, help="worker processes per run (default: 1, in this process)")
    p.add_argument("--seed", type=int, default=0, help="seed of the first episode of every cell (episode i: seed + i)")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="the protocol's options, environment keyword arguments and params.KEY controller overrides")
    p.add_argument("--out", default=None, help="output directory (default: results/NAME)")
    p.add_argument("--docs", action="store_true", help="also write docs/results/NAME.md")
    p.add_argument("--resume", action="store_true",
                   help="read back the cells an earlier run into --out finished with the same settings")
    p.set_defaults(func=_cmd_experiment)

    p = sub.add_parser("optimize", help="optimise a controller's parameters with Optuna (the spline paper's method)")
    p.add_argument("--controller", default=None, help="baseline name: spline, keyframe, lipm, step_adjust")
    p.add_argument("--robot", default=None, choices=ROBOT_NAMES)
    p.add_argument("--start", default=None, help="get-up start: front (= prone), back (= supine), side, fall, random")
    p.add_argument("--conditions", default=None, help="conditions preset (default: the search space's)")
    p.add_argument("--sampler", default="motpe", choices=("tpe", "motpe", "cmaes", "random"))
    p.add_argument("--objective", default=None,
                   help="letters: get-up S success, T time, H head, P pitch (default STH); walk F falls, "
                        "E linear error, Y yaw error, V speed shortfall (default FE)")
    p.add_argument("--trials", type=int, default=100, help="finished trials the study should have (default: 100)")
    p.add_argument("--repetitions", type=int, default=3, help="episodes per trial, each with its own seed (default: 3)")
    p.add_argument("--storage", default=None,
                   help="Optuna storage URL: sqlite:///F.db, postgresql://user@host/db, journal:FILE "
                        "(default: OUT/study.db, or OUT/study.journal with --workers > 1)")
    p.add_argument("--study", default=None, help="study name (default: controller-robot-start-sampler-objective)")
    p.add_argument("--workers", type=int, default=1, help="local worker processes on the study (default: 1)")
    p.add_argument("--seed", type=int, default=0, help="sampler seed and base of the episode seeds")
    p.add_argument("--out", default=None, help="output folder (default: results/optimize/CONTROLLER-ROBOT[-START]-SAMPLER)")
    p.add_argument("--space", default=None, help="search space YAML (default: the shipped one)")
    p.add_argument("--startup", type=int, default=None, help="random trials before the sampler's model")
    p.add_argument("--prune", action="store_true", help="median pruning between repetitions (single objective)")
    p.add_argument("--no-hand-tuned", action="store_true", help="do not enqueue the hand-tuned parameters first")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="environment keyword arguments and params.KEY overrides held fixed in every trial")
    p.set_defaults(func=_cmd_optimize)

    p = sub.add_parser("identify", help="fit servo parameters to a robot's recorded joint trajectories (or, with "
                                        "--excite, write a schedule to record them with); docs/identify.md")
    p.add_argument("log", nargs="?", default=None,
                   help="recording: .npz (time, joints, target, measured) or .csv (time,joint,target,measured)")
    p.add_argument("--robot", default=None, help=f"robot: {', '.join(ROBOT_NAMES)}")
    p.add_argument("--per", default="class", help="class: one set of parameters per servo class (default); joint: "
                                                   "one per joint")
    p.add_argument("--parameters", default=None, metavar="P,P",
                   help="parameters to fit, comma-separated (default: gain,torque,damping,armature,frictionloss; "
                        "the others keep the model's values)")
    p.add_argument("--trials", type=int, default=300, help="CMA-ES trials per extra delay (default: 300)")
    p.add_argument("--max-delay", type=int, default=3,
                   help="extra command delays tried: 0..N control cycles on top of the robot's own (default: 3)")
    p.add_argument("--seed", type=int, default=0, help="sampler seed (default: 0)")
    p.add_argument("--out", default=None, help="output folder (default: results/identify/ROBOT-LOG); --excite: the "
                                               "schedule file (.npz or .csv)")
    p.add_argument("--excite", action="store_true",
                   help="write a schedule of chirps and sines within the joint limits for the robot to play")
    p.add_argument("--seconds", type=float, default=None, help="--excite: length of the schedule (s)")
    p.add_argument("--joints", nargs="+", default=None, metavar="NAME",
                   help="--excite: the joints to move (default: every actuator)")
    p.add_argument("--amplitude", type=float, default=None,
                   help="--excite: largest amplitude (rad) about the standing pose (default: 0.3)")
    p.set_defaults(func=_cmd_identify)

    p = sub.add_parser("train", help="train a residual (--prior) or from-scratch policy with stable-baselines3",
                       description="Options left out take the defaults below for a new run; --resume keeps the "
                                   "run's own settings, refuses options that differ from them and changes only "
                                   "--steps (more than done), --eval-every, --checkpoint-every and --progress.")
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
    p.add_argument("--resume", nargs="?", const="", default=None, metavar="RUN_DIR",
                   help="continue this run (from its newest complete checkpoint if it was killed) up to its steps "
                        "or --steps total steps; with --sweep (no RUN_DIR): continue the existing study")
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
    p.add_argument("--checkpoint-every", type=int, default=None,
                   help=f"checkpoint every N steps (default: {TrainConfig.checkpoint_every})")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help=f"progress bar (default: {'on' if TrainConfig.progress else 'off'})")
    p.add_argument("--sweep", default=None, metavar="SPACE.yml",
                   help="a study of training runs on Optuna over the space file's hp.*, reward_scales.* and "
                        "environment values (docs/sweeps.md); --out (default: results/sweeps/SPACE) holds the "
                        "trial runs and the summary, --seed seeds the sampler")
    p.add_argument("--trials", type=int, default=None,
                   help="--sweep: finished trials the study should have, over every worker (default: 20)")
    p.add_argument("--storage", default=None,
                   help="--sweep: Optuna storage URL, postgresql://user@host/db for workers on many machines "
                        "(default: OUT/study.db, or OUT/study.journal with --workers > 1)")
    p.add_argument("--study", default=None, help="--sweep: study name (default: the space file's name)")
    p.add_argument("--workers", type=int, default=None, help="--sweep: local worker processes (default: 1)")
    p.add_argument("--summary", action="store_true",
                   help="--sweep: only write the summary of the study's trials so far (table, plots, ship command)")
    p.add_argument("--docs", action="store_true",
                   help="--sweep: also write the summary to docs/results (sweep-<study>.md, and its plots in "
                        "docs/results/sweeps)")
    p.set_defaults(func=_cmd_train)

    p = sub.add_parser("soak", help="random and extreme actions in every environment, preset, start and prior; "
                                    "count exceptions, non-finite values and physics blow-ups (exit 1 on the first two)")
    p.add_argument("--steps", type=int, default=1_000_000,
                   help="environment steps per environment, split over its cells (default: 1000000, hours)")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default: 1, in this process)")
    p.add_argument("--seed", type=int, default=0, help="base seed (cell k: seed + k * 1000000)")
    p.add_argument("--env", nargs="+", default=None, metavar="ID", help="only these environments")
    p.add_argument("--conditions", nargs="+", default=None, metavar="NAME",
                   help="only these conditions (the presets and ramp, obstacles, worst)")
    p.add_argument("--start", nargs="+", default=None, metavar="START", help="only these get-up starts")
    p.add_argument("--prior", nargs="+", default=None, metavar="NAME", help="only these priors (none: no prior)")
    p.add_argument("--out", default=None, help="output directory (default: results/soak); OUT/cells.jsonl grows "
                                               "by one line per finished cell")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="progress bar")
    p.add_argument("--docs", action="store_true", help="also write docs/results/soak.md")
    p.set_defaults(func=_cmd_soak)

    p = sub.add_parser("check-same", help="refactoring check: the environment cases at a git revision and in the "
                                          "working tree, on this machine, must agree to the last bit")
    p.add_argument("--against", default="HEAD", help="git revision to compare with (default: HEAD)")
    p.add_argument("--steps", type=int, default=200, help="control steps per case (default: 200)")
    p.add_argument("--case", nargs="+", default=None, metavar="NAME", help="only these cases (--list names them)")
    p.add_argument("--list", action="store_true", help="list the cases, one line each")
    p.set_defaults(func=_cmd_check_same)

    p = sub.add_parser("ship", help="copy a trained model of a run folder into the zoo (policies/zoo/NAME)")
    p.add_argument("run", help="run folder of upright train")
    p.add_argument("--name", required=True, help="zoo name, e.g. nao-getup-residual-keyframe")
    p.add_argument("--model", default="best",
                   help="best: the best held-out evaluation during training (default); final: the final model; "
                        "selected: the checkpoint named in the run's selection.json (upright experiment "
                        "checkpoint-selection)")
    p.add_argument("--zoo", default=None, help="zoo folder (default: $UPRIGHT_ZOO or the package's policies/zoo)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing entry of that name")
    p.set_defaults(func=_cmd_ship)

    p = sub.add_parser("history", help="the record of every training run (DOCS_DIR/training/): print it, "
                                       "add finished run folders to it, write its page and learning curves")
    p.add_argument("--add", nargs="+", default=[], metavar="RUN_DIR",
                   help="record these run folders of upright train (config, command, learning curve, the "
                        "prior's evaluation, selection.json)")
    p.add_argument("--verdict", default="", help="--add: what became of the run, e.g. 'not shipped: below the prior'")
    p.add_argument("--shipped", default="", help="--add: the zoo entry and checkpoint it was shipped as, if any")
    p.add_argument("--changed", default="", help="--add: what the run changed against the runs before it")
    p.add_argument("--round", type=int, default=None, help="--add: the round of runs it belongs to")
    p.add_argument("--docs", action="store_true",
                   help="write DOCS_DIR/training-runs.md and the learning-curve PNGs of curves.yaml")
    p.add_argument("--docs-dir", default=str(DEFAULT_DOCS_DIR), metavar="DOCS_DIR",
                   help="the folder holding the record (DOCS_DIR/training/: runs.csv, curves.csv, curves.yaml) "
                        "and its page; default: docs/results of the current directory")
    p.set_defaults(func=_cmd_history)

    p = sub.add_parser("export", help="write a trained policy as ONNX (observation in, action out) with the spec "
                                      "a robot-side implementer follows and example inputs and outputs "
                                      "(docs/export.md)")
    p.add_argument("policy", nargs="?", default=None,
                   help="a run folder of upright train, one of its .zip files, or zoo:NAME")
    p.add_argument("--out", default=None, help="output folder (replaced if it holds an earlier export); "
                                               "--measure: results folder (default: results/export)")
    p.add_argument("--zoo", action="store_true", help="export every shipped policy into policies/zoo/NAME/onnx/")
    p.add_argument("--ops", default="default", choices=OPS,
                   help="operators: default (Gemm layers), compiled-nn (only what B-Human's CompiledNN reads: "
                        "MatMul + Add layers, ReLU; a Tanh actor is refused)")
    p.add_argument("--measure", action="store_true",
                   help="instead: the shipped exports against their SB3 policies (action parity on --observations "
                        "observations, --episodes runner episodes each, time per call) into --out")
    p.add_argument("--observations", type=int, default=1000,
                   help="--measure: observations per policy (default: 1000)")
    p.add_argument("--episodes", type=int, default=100, help="--measure: runner episodes per policy and runtime "
                                                              "(default: 100)")
    p.add_argument("--workers", type=int, default=1, help="--measure: worker processes (default: 1)")
    p.add_argument("--docs", action="store_true", help="--measure: also write docs/results/export.md")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("zoo-conf", help="write our hyperparameters as rl-baselines3-zoo's --conf-file (one "
                                        "complete block per environment id)")
    p.add_argument("--algo", default="ppo", choices=ALGOS, help="algorithm (default: ppo)")
    p.add_argument("--prior", default=None, help="the prior's blocks (ID:PRIOR) and env_kwargs prior=PRIOR")
    p.add_argument("--env", action="append", default=[], help="an environment id (repeat; default: all)")
    p.add_argument("--hyperparams", default=None, help="hyperparameter file (default: the shipped one)")
    p.add_argument("--out", default=None, help="YAML file to write (default: print it)")
    p.set_defaults(func=_cmd_zoo_conf)
    return parser


def command_line(argv: list[str]) -> str:
    """The command ``upright ARGV`` as results, summaries and run folders record it, with the password
    of any database URL in it hidden (``--storage URL``, ``--set storage=URL``)."""
    if not any("://" in word and "@" in word for word in argv):
        return shlex.join(["upright", *argv])
    from upright.tuning.storage import shown_storage  # SQLAlchemy: only for a command line that holds a URL

    return shlex.join(["upright", *map(shown_storage, argv)])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    args.command_line = command_line(argv)
    try:
        return int(args.func(args))
    except ValueError as error:  # bad input: a clear message, no traceback
        print(f"upright {args.command}: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a file that cannot be read or written, a folder another process writes
        print(f"upright {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"upright {args.command}: interrupted", file=sys.stderr)
        return 130


__all__ = ["build_parser", "command_line", "main"]
