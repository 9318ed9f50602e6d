"""Determinism across worker counts with stateful policies under ``competition``: the records of a
run do not depend on how many processes ran it or which episodes a process ran before."""

from __future__ import annotations

import gymnasium as gym
import pytest

import upright  # noqa: F401  (registers the ids)
from upright.eval.runner import run_episodes


@pytest.fixture(scope="module")
def sb3_residual(tmp_path_factory):
    """An (untrained, seeded) PPO residual on the keyframe stand-up, saved as a .zip."""
    from stable_baselines3 import PPO

    env = gym.make("upright/NaoGetUp-v0", prior="keyframe", max_episode_seconds=0.5)
    path = tmp_path_factory.mktemp("sb3") / "ppo_keyframe"
    PPO("MlpPolicy", env, n_steps=64, batch_size=64, seed=0, device="cpu").save(path)
    return str(path) + ".zip"


#: (environment, policy (None: the SB3 residual), kwargs, worker counts). Starting a worker costs
#: seconds (an SB3 one imports torch), so the keyframe stand-up, the policy with the most state,
#: runs on 1, 2 and 3 workers and the others on 1 and 2 (4 episodes: 2 per worker).
CASES = {
    "keyframe": ("upright/NaoGetUp-v0", "keyframe", {"start": "random"}, (1, 2, 3)),
    "lipm": ("upright/NaoWalk-v0", "lipm", {}, (1, 2)),
    "sb3-residual-on-keyframe": ("upright/NaoGetUp-v0", None, {"start": "fall", "prior": "keyframe"}, (1, 2)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_records_do_not_depend_on_the_number_of_workers(case, request):
    env_id, policy, kwargs, workers = CASES[case]
    policy = policy or request.getfixturevalue("sb3_residual")
    kwargs = {**kwargs, "conditions": "competition", "max_episode_seconds": 0.5}
    runs = [run_episodes(env_id, policy, 4, env_kwargs=kwargs, seed=11, workers=w, progress=False) for w in workers]
    records = runs[0].records
    assert [r["seed"] for r in records] == [11, 12, 13, 14]
    assert len({r["return"] for r in records}) == 4  # the episodes differ from each other
    for run in runs[1:]:
        assert run.records == records
