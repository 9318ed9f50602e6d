"""``upright export``: a trained policy as ONNX (observation in, action out) with the spec a
robot-side implementer follows and example inputs and outputs, or as a plain SB3 model
(``--sb3``); ``--measure`` the shipped exports against their SB3 policies (docs/export.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from upright.commands import Subparsers
from upright.envs.files import writable_folder
from upright.training.export import OPS, export, export_zoo
from upright.training.export_measure import measure as measure_export
from upright.training.plain_sb3 import write_plain_sb3, write_zoo_sb3


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("export", help="write a trained policy as ONNX (observation in, action out) with the "
                                             "spec a robot-side implementer follows and example inputs and outputs "
                                             "(docs/export.md)")
    p.add_argument("policy", nargs="?", default=None,
                   help="a run folder of upright train, one of its .zip files, or zoo:NAME")
    p.add_argument("--out", default=None, help="output folder (replaced if it holds an earlier export); "
                                               "--measure: results folder (default: results/export)")
    p.add_argument("--zoo", action="store_true", help="export every policy of your zoo ($UPRIGHT_ZOO, else "
                                                      "./policies/zoo) into ZOO/NAME/onnx/ (with --sb3: ZOO/NAME/sb3/)")
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
    p.add_argument("--sb3", action="store_true",
                   help="instead of ONNX: an actor-only SB3 model with its VecNormalize and env.yml, which plain "
                        "PPO.load and evaluate_policy take without upright's training code (policies/zoo/README.md)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.measure:
        out = Path(args.out) if args.out else Path("results", "export")
        writable_folder(out)
        paths = measure_export(out, episodes=args.episodes, observations=args.observations, workers=args.workers,
                               docs=args.docs, command=args.command_line)
        print("wrote " + " and ".join(map(str, paths)))
        return 0
    if args.sb3 and args.ops != "default":
        raise ValueError(f"--ops {args.ops} is an option of the ONNX export, not of --sb3")
    if args.zoo:
        folder = "sb3" if args.sb3 else "onnx"
        if args.policy is not None or args.out is not None:
            raise ValueError(f"--zoo writes every policy's export beside it in your zoo (ZOO/NAME/{folder}/): "
                             "give no POLICY and no --out")
        paths = write_zoo_sb3() if args.sb3 else export_zoo(args.ops)
    elif args.policy is None or args.out is None:
        raise ValueError("give POLICY and --out DIR (or --zoo, or --measure)")
    else:
        writable_folder(args.out)
        paths = [write_plain_sb3(args.policy, args.out) if args.sb3 else export(args.policy, args.out, args.ops)]
    for path in paths:
        print(f"wrote {path}/ ({', '.join(sorted(f.name for f in path.iterdir() if f.is_file()))})")
    return 0


__all__ = ["register", "run"]
