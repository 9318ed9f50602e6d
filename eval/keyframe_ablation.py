"""The stand-up paper's claim as an ablation: joint-error compensation on versus off with worn joints.

Worn joints (Reichenberg & Laue 2025, section 3.2: a hip-yaw-pitch that lags or gets stuck by more
than 20° during the leg-closing phase, plus weak leg motors), drawn per episode from its seed:

* ``LHipYawPitch`` (which drives both hip-yaw-pitch hinges): with probability 1/2 a first-order lag
  with time constant ``hyp_lag`` s, else a stuck window starting uniformly in the leg-closing
  phase of the motion (``closing`` s after the start: supine = ``fromSitting`` splits, prone =
  ``frontUpright`` pull-in) lasting ``stuck_duration`` s;
* ``L/RHipPitch``, ``L/RHipRoll``, ``L/RKneePitch`` strength drawn from ``strength`` (0.6–0.8).

Both arms of the ablation see exactly the same episodes (same seeds → same wear). To check the
"20–30°", the peak hip-yaw-pitch error the controller measures (request 3 cycles ago − measured)
in the leg-closing phase is recorded for the first ``--check`` episodes with compensation off.
Flat floor, otherwise ``lab``.

``python -m upright.eval.keyframe_ablation --episodes 100 --out results/keyframe_ablation``
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from upright.envs.conditions import Conditions, SampledConditions, Wear
from upright.eval.results import aggregate, print_table, write_results
from upright.eval.runner import run_episodes
from upright.policies.builtin import ControllerPolicy

#: Leg-closing phase (s after the episode start, lab timing of the unworn motion) per start pose.
CLOSING = {"supine": (3.5, 4.3), "prone": (2.1, 2.9)}
WEAK_JOINTS = ("LHipPitch", "RHipPitch", "LHipRoll", "RHipRoll", "LKneePitch", "RKneePitch")


@dataclass(frozen=True)
class WornHipConditions(Conditions):
    """``lab`` plus the per-episode worn hip-yaw-pitch and weak hip/knee motors described above."""

    closing: tuple[float, float] = (3.5, 4.3)
    hyp_lag: tuple[float, float] = (0.05, 0.10)
    stuck_duration: tuple[float, float] = (0.15, 0.3)
    strength: tuple[float, float] = (0.6, 0.8)

    def sample(self, joint_names: tuple[str, ...], rng: np.random.Generator) -> SampledConditions:
        """Draw this episode's wear (see module docstring); everything else as ``lab``."""
        base = super().sample(joint_names, rng)
        wear = dict(zip(joint_names, base.wear))
        if rng.random() < 0.5:
            wear["LHipYawPitch"] = Wear(lag=float(rng.uniform(*self.hyp_lag)))
        else:
            start = float(rng.uniform(*self.closing))
            wear["LHipYawPitch"] = Wear(stuck=((start, float(rng.uniform(*self.stuck_duration))),))
        for joint in WEAK_JOINTS:
            wear[joint] = Wear(strength=float(rng.uniform(*self.strength)))
        return replace(base, wear=tuple(wear[j] for j in joint_names))


class KeyframeVariant(ControllerPolicy):
    """The ``keyframe`` controller with some :class:`~upright.baselines.keyframe.KeyframeParams` changed."""

    def __init__(self, label: str, **params: Any) -> None:
        super().__init__(label)
        self.label = label
        self.changes = params

    def reset(self, env: gym.Env, seed: int | None) -> None:
        self.name = "keyframe"
        super().reset(env, seed)
        self.name = self.label  # the run's label; the controller was built as "keyframe"
        self._controller.configure(**self.changes)


def peak_hyp_errors(start: str, conditions: Conditions, episodes: int) -> list[float]:
    """Peak |hip-yaw-pitch error| (deg; request 3 cycles ago − measured, as the controller sees
    it) in the leg-closing phase (``closing`` + 0.6 s) per episode with compensation off: checks
    that the wear gives the intended 20–30°."""
    peaks = []
    env = gym.make("upright/NaoGetUp-v0", start=start, conditions=conditions)
    policy = KeyframeVariant("keyframe-compensation-off", compensation=False)
    for seed in range(episodes):
        observation, info = env.reset(seed=seed)
        policy.reset(env, seed)
        peak = 0.0
        while True:
            observation, _, terminated, truncated, info = env.step(policy.act(observation, info))
            c = policy._controller
            if conditions.closing[0] <= c.sensors.time <= conditions.closing[1] + 0.6:
                peak = max(peak, abs(float(c.errors.raw[c.robot.actuator_names.index("LHipYawPitch")])))
            if terminated or truncated:
                break
        peaks.append(peak)
    env.close()
    return peaks


def run(episodes: int, out: Path, workers: int, starts: tuple[str, ...], check: int = 20,
        arms: tuple[str, ...] = ("on", "off")) -> dict[str, Any]:
    """Run both arms for every start; write JSON + Markdown under ``out``; return the summary."""
    summary: dict[str, Any] = {}
    lines = ["| start | compensation | success | 95 % CI | time to stand min/mean/max (s) |", "|---|---|---|---|---|"]
    for start in starts:
        conditions = WornHipConditions(closing=CLOSING[start])
        for label, on in (("on", True), ("off", False)):
            if label not in arms:
                continue
            policy = KeyframeVariant(f"keyframe-compensation-{label}", compensation=on)
            result = aggregate(run_episodes("upright/NaoGetUp-v0", policy, episodes, workers=workers,
                                            env_kwargs={"start": start, "conditions": conditions}))
            result["env_kwargs"]["conditions"] = "WornHipConditions"  # its fields are in result["conditions"]
            write_results(result, out / f"{start}_{label}")
            print_table(result)
            r, tts = result, result["time_to_stand"]
            summary[f"{start}/{label}"] = {k: r[k] for k in ("episodes", "successes", "success_rate", "success_ci95", "time_to_stand")}
            lines.append(f"| {start} | {label} | {r['successes']}/{r['episodes']} ({100 * r['success_rate']:.0f} %) | "
                         f"[{r['success_ci95'][0]:.2f}, {r['success_ci95'][1]:.2f}] | "
                         + " / ".join("—" if tts[k] is None else f"{tts[k]:.2f}" for k in ("min", "mean", "max")) + " |")
        if check < 1:
            continue
        peaks = peak_hyp_errors(start, conditions, check)
        summary[f"{start}/peak_hyp_error_deg"] = {"episodes": check, "min": min(peaks), "median": float(np.median(peaks)),
                                                  "max": max(peaks), "values": peaks}
        lines.append(f"| {start} | peak HYP error (compensation off, first {check} episodes) | "
                     f"min {min(peaks):.1f}° / median {np.median(peaks):.1f}° / max {max(peaks):.1f}° | | |")
    tag = "_".join(arms) + ("" if check > 0 else "_nocheck")
    (out / f"ablation_{tag}.md").write_text("\n".join(lines) + "\n")
    (out / f"ablation_{tag}.json").write_text(json.dumps(summary, indent=2, default=str))
    print("\n".join(lines))
    return summary


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--episodes N --out DIR --workers W --starts supine prone``."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--out", type=Path, default=Path("results/keyframe_ablation"))
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--check", type=int, default=20, help="episodes for the peak hip-yaw-pitch error check (0: none)")
    p.add_argument("--arms", nargs="+", default=["on", "off"], choices=["on", "off"],
                   help="compensation on/off arms to run (to run them in separate processes)")
    p.add_argument("--starts", nargs="+", default=["supine", "prone"], choices=sorted(CLOSING))
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    run(args.episodes, args.out, args.workers, tuple(args.starts), args.check, tuple(args.arms))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
