"""Record one episode of a policy to an MP4 file (``upright video``), or the start of one as a
small clip in memory (a training run's evaluation video), through the runner with a
frame-grabbing observer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from upright.envs.render import Camera
from upright.eval.runner import Observer, run_episodes
from upright.policies.base import Policy

VIDEO_FPS = 30  # frames per second of the written video (about; the stride is a whole number of steps)
#: A clip (:func:`record_clip`): frames per simulated second (about, as :data:`VIDEO_FPS`), its
#: longest simulated time (s) and its frame size (width, height in pixels), small enough that one
#: clip per periodic evaluation of a training run stays a small part of its TensorBoard events.
CLIP_FPS = 5
CLIP_SECONDS = 10.0
CLIP_SIZE = (320, 240)


def frame_stride(env: gym.Env, fps: float) -> int:
    """The whole number of control steps of ``env`` between two frames closest to ``1 / fps`` s
    (at least 1)."""
    step_rate = 1.0 / env.unwrapped.robot.control_period  # control steps per simulated second
    return max(1, round(step_rate / fps))


class VideoRecorder(Observer):
    """Writes the episode to the MP4 file ``out`` in real time: the first frame after the reset,
    then every ``stride``-th control step, ``stride`` the whole number of steps closest to
    ``1 / fps`` s. Needs an environment made with ``render_mode="rgb_array"``; adds ``video`` (the
    path) to the record."""

    def __init__(self, out: Path, fps: float = VIDEO_FPS) -> None:
        self.out = out
        self.fps = fps
        self._writer: Any = None
        self._stride = 1
        self._steps = 0

    def on_reset(self, env: gym.Env, policy: Policy, info: dict[str, Any]) -> None:
        import imageio.v2 as imageio  # imageio: only when a video is written

        first = env.render()  # fails here, before the episode, without a GL backend
        self._stride = frame_stride(env, self.fps)
        self._steps = 0
        self.out.parent.mkdir(parents=True, exist_ok=True)
        step_rate = 1.0 / env.unwrapped.robot.control_period  # control steps per simulated second
        self._writer = imageio.get_writer(self.out, fps=step_rate / self._stride, codec="libx264", macro_block_size=8)
        self._writer.append_data(first)

    def on_step(self, env: gym.Env, policy: Policy, action: np.ndarray, info: dict[str, Any]) -> None:
        self._steps += 1
        if self._steps % self._stride == 0:
            self._writer.append_data(env.render())

    def on_episode_end(self, env: gym.Env, policy: Policy, record: dict[str, Any]) -> dict[str, Any]:
        self._writer.close()
        self._writer = None
        return {"video": str(self.out)}


def record_video(
    env_id: str,
    policy: str | Policy,
    out: Path,
    *,
    env_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
) -> tuple[Path, dict[str, Any]]:
    """Run one episode (seed ``seed``) of ``policy`` in ``env_id`` and write it to the MP4 file
    ``out`` in real time; returns the path and the episode's record.

    Raises :class:`~upright.envs.render.RenderingUnavailable` (before simulating) when no OpenGL
    backend can be started.
    """
    run = run_episodes(env_id, policy, 1, env_kwargs={**(env_kwargs or {}), "render_mode": "rgb_array"}, seed=seed,
                       progress=False, observers=[VideoRecorder(out)])
    if run.interrupted:
        raise KeyboardInterrupt
    return out, run.records[0]


class ClipRecorder(Observer):
    """Keeps a short clip of the episode in memory: the first frame after the reset, then every
    :func:`frame_stride`-th control step for ``fps``, rendered off-screen at ``size`` (width,
    height) by a camera of its own (so the environment needs no ``render_mode``), and ends the
    episode once ``seconds`` of simulated time are in the clip. Adds ``clip`` (frames, height,
    width, 3; uint8) and ``clip_fps`` (the frames per simulated second) to the record."""

    def __init__(self, fps: float = CLIP_FPS, seconds: float = CLIP_SECONDS, size: tuple[int, int] = CLIP_SIZE) -> None:
        if fps <= 0 or seconds <= 0:
            raise ValueError(f"a clip needs fps > 0 and seconds > 0, got fps={fps!r} seconds={seconds!r}")
        self.fps, self.seconds, self.size = fps, seconds, size
        self._camera: Camera | None = None
        self._frames: list[np.ndarray] = []
        self._stride = 1
        self._steps = 0
        self._last = 0

    def _grab(self, env: gym.Env) -> None:
        assert self._camera is not None, "on_reset first"
        self._frames.append(self._camera.render(env.unwrapped.sim.data))

    def on_reset(self, env: gym.Env, policy: Policy, info: dict[str, Any]) -> None:
        self._camera = Camera(env.unwrapped.sim.model, *self.size)  # fails here, before the episode, without GL
        self._stride = frame_stride(env, self.fps)
        self._last = round(self.seconds / env.unwrapped.robot.control_period)
        self._steps = 0
        self._frames = []
        self._grab(env)

    def on_step(self, env: gym.Env, policy: Policy, action: np.ndarray, info: dict[str, Any]) -> bool:
        self._steps += 1
        if self._steps % self._stride == 0:
            self._grab(env)
        return self._steps >= self._last

    def on_episode_end(self, env: gym.Env, policy: Policy, record: dict[str, Any]) -> dict[str, Any]:
        if self._camera is not None:
            self._camera.close()
            self._camera = None
        step_rate = 1.0 / env.unwrapped.robot.control_period  # control steps per simulated second
        return {"clip": np.stack(self._frames), "clip_fps": step_rate / self._stride}


def record_clip(env_id: str, policy: str | Policy, *, env_kwargs: dict[str, Any] | None = None, seed: int = 0,
                fps: float = CLIP_FPS, seconds: float = CLIP_SECONDS,
                size: tuple[int, int] = CLIP_SIZE) -> tuple[np.ndarray, float]:
    """The first ``seconds`` (s, simulated) of one episode (seed ``seed``) of ``policy`` in
    ``env_id`` as a clip held in memory (:class:`ClipRecorder`): the frames (frames, height,
    width, 3; uint8) and the frames per simulated second, so that it plays in real time.

    Raises :class:`~upright.envs.render.RenderingUnavailable` (before simulating) when no OpenGL
    backend can be started.
    """
    run = run_episodes(env_id, policy, 1, env_kwargs=env_kwargs, seed=seed, progress=False,
                       observers=[ClipRecorder(fps, seconds, size)])
    if run.interrupted:
        raise KeyboardInterrupt
    (record,) = run.records
    return record["clip"], record["clip_fps"]


def join_videos(parts: list[tuple[Path, str]], out: Path) -> Path:
    """Write the MP4 file ``out``: the videos of ``parts`` (path, label) side by side, left to
    right, each labelled in its top-left corner; a shorter one holds its last frame. The videos
    must have the same frame size and rate (the same environment's)."""
    import imageio.v2 as imageio  # imageio: only when a video is written
    from PIL import Image, ImageDraw

    readers = [imageio.get_reader(path) for path, _ in parts]
    writer = imageio.get_writer(out, fps=readers[0].get_meta_data()["fps"], codec="libx264", macro_block_size=8)
    streams = [iter(reader) for reader in readers]
    last: list[np.ndarray | None] = [None] * len(parts)
    while True:
        ended = 0
        for i, stream in enumerate(streams):  # one frame from each video at a time (not all in memory)
            frame = next(stream, None)
            if frame is None:
                ended += 1
            else:
                tile = Image.fromarray(frame)
                ImageDraw.Draw(tile).text((8, 8), parts[i][1], fill=(255, 255, 255))
                last[i] = np.asarray(tile)
        if ended == len(parts):
            break
        writer.append_data(np.hstack(last))
    writer.close()
    for reader in readers:
        reader.close()
    return out


__all__ = ["CLIP_FPS", "CLIP_SECONDS", "CLIP_SIZE", "VIDEO_FPS", "ClipRecorder", "VideoRecorder", "frame_stride",
           "join_videos", "record_clip", "record_video"]
