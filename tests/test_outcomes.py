"""Episode outcomes of the shipped policies and of their priors (the ``keyframe``, ``spline`` and
``step_adjust`` baselines) agree with their published held-out numbers on any machine, within the
binomial interval.

Each shipped policy's manifest holds its held-out evaluation: the seeds, and for the policy and its
prior alone the count of get-up episodes in which the robot stood up, or of walks with a fall, out of
200. The first :data:`EPISODES` of those seeds are run again here. On the machine that published the
numbers they give the same episodes to the bit; on another machine the episodes differ once chaos
has amplified the last bits, so each is a new draw of the same distribution. The count must lie in
the central 99.9 % of the binomial distribution of :data:`EPISODES` draws at the published rate:
a false alarm about once in a thousand checks of a count, while a robot that can no longer stand
up, or a walk that falls in most walks, is outside.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from scipy.stats import binom

from upright.eval.comparison import prior_alone
from upright.eval.runner import run_episodes
from upright.policies.run import run_env_kwargs, zoo_entry, zoo_names

#: Episodes per policy: the first of the published held-out seeds.
EPISODES = 8
#: Two-sided probability outside the accepted counts.
ALPHA = 0.001
SHIPPED = zoo_names()


def accepted(rate: float, episodes: int = EPISODES) -> tuple[int, int]:
    """The counts (inclusive) within the central 1 - :data:`ALPHA` of Binomial(``episodes``, ``rate``)."""
    return int(binom.ppf(ALPHA / 2, episodes, rate)), int(binom.isf(ALPHA / 2, episodes, rate))


def outcome(records: list[dict[str, Any]], task: str) -> int:
    """Get-up episodes in which the robot stood up, or walks with a fall."""
    return sum(bool(r["stood_up"]) if task == "getup" else int(r["falls"]) > 0 for r in records)


def published(name: str, runs: str) -> tuple[str, int, int, str, int]:
    """Of the shipped policy ``name``'s held-out evaluation of ``runs`` (``residual`` or ``prior``):
    environment id, count, episodes, task and first seed."""
    manifest = yaml.safe_load((zoo_entry(name) / "manifest.yml").read_text())
    evaluation = manifest["evaluation"]
    result, episodes = evaluation[runs], int(evaluation["episodes"])
    count = (int(result["stood_up"][0]) if result["task"] == "getup"
             else round(float(result["falls_per_episode"]) * episodes))  # a walk ends at its fall
    return manifest["env_id"], count, episodes, result["task"], int(evaluation["seeds"][0])


@pytest.mark.slow  # statistical: 8 whole episodes per policy (`.ci/run` runs the slow tests too)
@pytest.mark.parametrize("runs", ["residual", "prior"])
@pytest.mark.parametrize("name", SHIPPED)
def test_held_out_outcomes_lie_in_the_published_interval(name, runs):
    env_id, count, episodes, task, seed = published(name, runs)
    kwargs = run_env_kwargs(f"zoo:{name}")
    policy, kwargs = (f"zoo:{name}", kwargs) if runs == "residual" else prior_alone(kwargs)
    run = run_episodes(env_id, policy, EPISODES, env_kwargs=kwargs, seed=seed, workers=1, progress=False)
    low, high = accepted(count / episodes)
    got = outcome(run.records, task)
    assert low <= got <= high, (f"{name} ({runs}): {got} of {EPISODES} episodes, published {count} of {episodes}: "
                                f"accepted {low}..{high}")

