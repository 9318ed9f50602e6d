"""Controller parameters (contract 1): Params.load, dotted overrides with type conversion and
named errors, make_controller/default_params with params, ControllerPolicy.params/controller."""

from __future__ import annotations

import math
from dataclasses import FrozenInstanceError

import gymnasium as gym
import numpy as np
import pytest

import upright.envs  # noqa: F401  (registers the environments)
from upright.baselines import Controller, controller_names, default_params, make_controller
from upright.baselines.common.data import si_units
from upright.baselines.walk.step_adjust import StepAdjustParams
from upright.envs.robots import get_robot
from upright.policies.builtin import ControllerPolicy


def test_unit_rule_turns_degree_keys_into_radians_in_nested_mappings():
    raw = {"a_deg": 90, "b": 2, "c": {"d_deg": [180.0, 90.0], "e": [1, 2]}}
    assert si_units(raw) == {"a": math.pi / 2, "b": 2, "c": {"d": (math.pi, math.pi / 2), "e": [1, 2]}}


def test_overrides_reach_nested_fields_and_convert_to_the_field_type():
    params = default_params("lipm", "nao")
    changed = params.with_overrides({"player.max_step_forward": "0.15", "correction": "false", "first_support": -1.0,
                                     "observer_measurement_std": [0.2, 0.003]})
    assert changed.player.max_step_forward == 0.15 and type(changed.player.max_step_forward) is float
    assert changed.correction is False and changed.first_support == -1 and type(changed.first_support) is int
    assert changed.observer_measurement_std == (0.2, 0.003)
    assert changed.player.foot_y == params.player.foot_y and params.player.max_step_forward != 0.15
    assert params.with_overrides({"player": {"max_turn": 0.5}}).player.max_turn == 0.5
    # an optional field takes the command line's "null" as None
    wolfgang = default_params("lipm", "wolfgang")
    unlimited = wolfgang.with_overrides({"speed_max": "null", "speed_max_backward": "null"})
    assert wolfgang.speed_max is not None and unlimited.speed_max is None and unlimited.speed_max_backward is None
    with pytest.raises(FrozenInstanceError):
        params.com_height = 1.0  # type: ignore[misc]


def test_unknown_or_badly_typed_overrides_are_named():
    params = StepAdjustParams.load("nao")
    with pytest.raises(ValueError, match=r"unknown key 'leveling\.speed'; valid keys of leveling: .*offset_speed"):
        params.with_overrides({"leveling.speed": 1.0})
    with pytest.raises(ValueError, match="period: input should be a valid number"):
        params.with_overrides({"period.x": 1.0})
    with pytest.raises(ValueError, match="step_adjustment: input should be a valid boolean"):
        params.with_overrides({"step_adjustment": "maybe"})
    with pytest.raises(ValueError, match="foot_area: too few values, got 1"):
        params.with_overrides({"foot_area": [0.1]})


@pytest.mark.parametrize("value", [float("nan"), "inf", -math.inf, "1e999"])
def test_a_parameter_that_is_no_finite_number_is_refused_and_gym_make_refuses_it(value):
    with pytest.raises(ValueError, match="max_forward: input should be a finite number"):
        StepAdjustParams.load("nao").with_overrides({"max_forward": value})
    with pytest.raises(ValueError, match="max_forward: input should be a finite number"):
        gym.make("upright/NaoWalk-v0", prior="step_adjust", prior_params={"max_forward": value})


@pytest.mark.parametrize("name", ["keyframe", "spline", "spline_nostab", "lipm", "step_adjust"])
def test_make_controller_takes_defaults_a_params_set_or_overrides(name):
    robot = get_robot("nao")
    defaults = default_params(name, "nao")
    built = make_controller(name, robot)
    assert isinstance(built, Controller) and built.params == defaults
    key = {"keyframe": "compensation_scale", "spline": "rise_time", "spline_nostab": "rise_time",
           "lipm": "player.step_duration", "step_adjust": "gyro_balance"}[name]
    head, _, leaf = key.rpartition(".")
    changed = make_controller(name, robot, params={key: 0.5}).params
    assert getattr(getattr(changed, head) if head else changed, leaf) == 0.5
    given = defaults.with_overrides({key: 0.25})
    assert make_controller(name, robot, params=given).params is given
    with pytest.raises(ValueError, match="unknown key 'no_such_knob'"):
        make_controller(name, robot, params={"no_such_knob": 1})


def test_make_controller_refuses_another_family_s_params():
    with pytest.raises(TypeError, match="LipmParams"):
        make_controller("step_adjust", "nao", params=default_params("lipm", "nao"))


def test_spline_nostab_defaults_are_spline_without_stabiliser():
    assert default_params("spline_nostab", "wolfgang") == default_params("spline", "wolfgang").with_overrides(
        {"stabilizing": False})
    assert set(controller_names()) >= {"keyframe", "lipm", "spline", "spline_nostab", "step_adjust"}


def test_controller_policy_builds_its_controller_with_params_and_label():
    env = gym.make("upright/WolfgangGetUp-v0", max_episode_seconds=0.1)
    policy = ControllerPolicy("spline", params={"fail_safe": False}, label="spline-no-failsafe")
    assert policy.name == "spline-no-failsafe" and policy.params == {"fail_safe": False}
    assert policy.controller is None
    observation, info = env.reset(seed=0)
    policy.reset(env, 0)
    assert policy.controller.params.fail_safe is False
    assert policy.controller.params.stabilizing is True
    action = policy.act(observation, info)
    assert np.all(np.isfinite(action))
    assert ControllerPolicy("lipm").name == "lipm"
    env.close()
