"""The walk-experiment script's ladder logic and parameter overrides (short real episodes only)."""

from __future__ import annotations

import gymnasium as gym
import pytest
from upright.baselines.lipm import LipmParams
from upright.envs.registration import env_id
from upright.eval import walk_experiments as we


def _rows(*outcomes: tuple[float, bool]) -> list[dict]:
    return [{"speed": speed, "fell": fell} for speed, fell in outcomes]


def test_highest_sustained_needs_every_lower_command_without_a_fall():
    assert we.highest_sustained(_rows((0.1, False), (0.2, False), (0.3, True)))["speed"] == 0.2
    # A success above a fall does not count: the ladder's limit is below the first fall.
    assert we.highest_sustained(_rows((0.1, False), (0.2, True), (0.3, False)))["speed"] == 0.1
    # Order of the rows does not matter; no fall at all: the highest command.
    assert we.highest_sustained(_rows((0.3, False), (0.1, False), (0.2, False)))["speed"] == 0.3
    assert we.highest_sustained(_rows((0.1, True), (0.2, False))) is None
    assert we.highest_sustained([]) is None


def test_params_parse_and_apply_nested_fields():
    changes = we.parse_params(["correction=false", "player.max_step_forward=0.14"])
    assert changes == {"correction": False, "player.max_step_forward": 0.14}
    base = LipmParams.for_robot("nao")
    changed = we.with_params(base, changes)
    assert changed.correction is False and changed.player.max_step_forward == 0.14
    assert changed.player.foot_y == base.player.foot_y and base.correction is True
    with pytest.raises(ValueError, match="no field 'speed_cap'"):
        we.with_params(base, {"player.speed_cap": 1.0})
    with pytest.raises(ValueError, match="KEY=VALUE"):
        we.parse_params(["correction"])


def test_param_policy_builds_the_controller_with_the_changes():
    env = gym.make(env_id("nao", "walk"), command=(0.1, 0.0, 0.0), max_episode_seconds=0.5)
    policy = we.ParamPolicy("step_adjust", {"step_adjustment": False, "leveling.offset_speed": 0.5})
    env.reset(seed=0)
    policy.reset(env, 0)
    assert policy._controller.params.step_adjustment is False
    assert policy._controller.leveling.params.offset_speed == 0.5
    env.close()


def test_ladder_runs_real_episodes_until_the_end_without_a_fall(monkeypatch):
    monkeypatch.setitem(we.LADDERS["nao"], "backward", (0, -1.0, (0.05, 0.1)))
    result = we.ladder("lipm", {}, "nao", "backward", "lab", 1.5, 1)
    assert [r["command"] for r in result["rows"]] == [[-0.05, 0.0, 0.0], [-0.1, 0.0, 0.0]]
    assert result["highest_command"] == 0.1 and result["fell_at"] == []
    # Reported as a speed in the direction: backward velocity measured, sign flipped.
    assert result["highest_measured"] == -result["rows"][-1]["late_velocity"][0]


def test_ladder_stops_at_the_first_command_with_a_fall_in_any_episode(monkeypatch):
    calls = []

    def episode(policy, changes, robot, command, conditions, seconds, seed):
        calls.append((command[1], seed))
        return {"fell": command[1] >= 0.075 and seed == 1, "end_time": seconds, "late_velocity": [0.0, command[1], 0.0]}

    monkeypatch.setattr(we, "run_episode", episode)
    result = we.ladder("step_adjust", {}, "nao", "sideways", "lab", 20.0, 2)
    assert calls == [(0.025, 0), (0.025, 1), (0.05, 0), (0.05, 1), (0.075, 0), (0.075, 1)]
    assert result["highest_command"] == 0.05 and result["highest_measured"] == 0.05
    assert result["fell_at"] == [0.075]


def test_push_ladder_refines_from_the_smallest_impulse_and_stops_at_the_first_fall(monkeypatch):
    tried = []

    def pushed(policy, changes, robot, conditions, impulse, push_time, seconds):
        tried.append((impulse, push_time))
        return impulse >= 1.35 and push_time == we.PUSH_TIMES[2]

    monkeypatch.setattr(we, "_push_episode", pushed)
    result = we.push_limit("lipm", {}, "nao", "lab", 8.0, 0.05, 4.0, 1, smallest=1.25)
    assert sorted({i for i, _ in tried}) == [1.25, 1.3, 1.35]
    assert result["largest_survived_Ns"] == 1.3 and result["first_fall_Ns"] == 1.35
    assert result["rows"][-1]["falls"] == [False, False, True, False]
    with pytest.raises(ValueError, match="must be > 0"):
        we.push_limit("lipm", {}, "nao", "lab", 8.0, 0.0, 4.0, 1)
