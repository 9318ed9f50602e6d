"""Record one episode of a policy to an MP4 file (``upright video``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym

from upright.eval.runner import check_env_id
from upright.policies.base import Policy
from upright.policies.registry import load_policy

VIDEO_FPS = 30  # frames per second of the written video (about; the stride is a whole number of steps)


def record_video(
    env_id: str,
    policy: str | Policy,
    out: Path,
    *,
    env_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
) -> tuple[Path, dict[str, Any]]:
    """Run one episode (seed ``seed``) of ``policy`` in ``env_id`` and write it to the MP4 file
    ``out`` in real time; returns the path and the episode's metrics.

    Raises :class:`~upright.envs.render.RenderingUnavailable` (before simulating) when no OpenGL
    backend can be started.
    """
    import imageio.v2 as imageio

    check_env_id(env_id)
    env = gym.make(env_id, render_mode="rgb_array", **(env_kwargs or {}))
    actor = load_policy(policy) if isinstance(policy, str) else policy
    try:
        observation, info = env.reset(seed=seed)
        actor.reset(env, seed)
        first = env.render()  # fails here, before the episode, without a GL backend
        step_rate = 1.0 / env.unwrapped.robot.control_period  # control steps per simulated second
        stride = max(1, round(step_rate / VIDEO_FPS))
        out.parent.mkdir(parents=True, exist_ok=True)
        with imageio.get_writer(out, fps=step_rate / stride, codec="libx264", macro_block_size=8) as writer:
            writer.append_data(first)
            steps = 0
            while True:
                observation, _, terminated, truncated, info = env.step(actor.act(observation, info))
                steps += 1
                if steps % stride == 0:
                    writer.append_data(env.render())
                if terminated or truncated:
                    break
    finally:
        actor.close()
        env.close()
    return out, info["episode_metrics"]


__all__ = ["VIDEO_FPS", "record_video"]
