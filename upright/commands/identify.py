"""``upright identify``: servo parameters fitted to a robot's recorded joint trajectories, or with
``--excite`` the schedule to record them with (docs/identify.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from upright.commands import Subparsers
from upright.envs.conditions import SERVO_PARAMETERS
from upright.envs.robots import ROBOT_NAMES, get_robot, with_model


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("identify", help="fit servo parameters to a robot's recorded joint trajectories (or, "
                                               "with --excite, write a schedule to record them with); "
                                               "docs/identify.md")
    p.add_argument("log", nargs="?", default=None,
                   help="recording: .npz (time, joints, target, measured), .csv (time,joint,target,measured) or "
                        ".mcap (command and joint-state topics, JSON or ROS 2 messages)")
    p.add_argument("--robot", default=None, help=f"robot: {', '.join(ROBOT_NAMES)}")
    p.add_argument("--model", default=None, metavar="FILE",
                   help="fit the servos of this MJCF of the robot (a team's own model) instead of ours; the log and "
                        "the schedule name the joints and give the angles as it does (docs/your-robot.md)")
    p.add_argument("--map", default=None, metavar="FILE", help="--model's model map (YAML)")
    p.add_argument("--topics", nargs=2, default=None, metavar=("COMMAND", "STATE"),
                   help="an MCAP log's topics of the commanded targets and of the measured joint states "
                        "(default: /joint_commands /joint_states)")
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # optuna: only this command
    from upright.tuning.identify import (EXCITATION_AMPLITUDE, MCAP_TOPICS, excitation, identify, in_model_convention,
                                         in_our_convention, our_actuator_names, read_recording, write_identification,
                                         write_recording)

    if args.robot is None:
        raise ValueError(f"give --robot ({', '.join(ROBOT_NAMES)})")
    robot = with_model(get_robot(args.robot), args.model, args.map)
    if args.excite:
        if args.log is not None or args.topics is not None:
            raise ValueError(f"--excite writes a schedule to play; it reads no LOG, got {args.log or '--topics'!r}")
        if args.seconds is None or args.out is None:
            raise ValueError("--excite needs --seconds and --out FILE (.npz or .csv)")
        schedule = excitation(robot, args.seconds, joints=our_actuator_names(tuple(args.joints), robot)
                              if args.joints else None,
                              amplitude=EXCITATION_AMPLITUDE if args.amplitude is None else args.amplitude)
        path = write_recording(in_model_convention(schedule, robot), args.out)
        print(f"wrote {path}: {len(schedule.time)} targets of {len(schedule.joints)} joints, one per control period of "
              f"{robot.control_period} s; play it on the robot hanging on a stand and log the measured angles "
              "(docs/identify.md)")
        return 0
    if args.seconds is not None or args.joints or args.amplitude is not None:
        raise ValueError("--seconds, --joints and --amplitude are options of --excite")
    if args.log is None:
        raise ValueError("give a LOG to identify servo parameters from, or --excite to write a schedule to record")
    parameters = tuple(args.parameters.split(",")) if args.parameters else SERVO_PARAMETERS
    recording = in_our_convention(read_recording(args.log, tuple(args.topics or MCAP_TOPICS)), robot)
    out = Path(args.out) if args.out else Path("results", "identify", f"{robot.name}-{Path(args.log).stem}")
    result = identify(recording, robot, per=args.per, parameters=parameters, trials=args.trials, seed=args.seed,
                      max_extra_delay=args.max_delay, progress=True)
    yaml_path, png_path = write_identification(result, recording, out, command=args.command_line)
    for group, values in result.parameters.items():
        print(f"{group}: " + ", ".join(f"{p} {v:.4g} (x{result.factors[group][p]:.3f})" for p, v in values.items()))
    print(f"extra delay {result.extra_delay_cycles} control cycles; mean squared tracking error "
          f"{result.model_error:.3g} rad^2 with {'our model' if robot.model is None else 'the model'}, "
          f"{result.error:.3g} with the fit")
    print(f"wrote {yaml_path} and {png_path}")
    return 0


__all__ = ["register", "run"]
