"""Baseline ``keyframe``: compensation arithmetic (paper eqs. 1–4), interpolation, the motion data,
and real stand-ups in the MuJoCo environment."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from upright.baselines import make_controller
from upright.baselines.common.data import data_path
from upright.baselines.keyframe.compensation import (
    JointErrorEstimator,
    applied_error,
    compensation,
    entry_percent,
)
from upright.baselines.keyframe.controller import KeyframeController, KeyframeParams
from upright.baselines.keyframe.library import CompensationEntry, interpolate, load_library
from upright.envs.conditions import get_conditions
from upright.envs.robots import get_robot
from upright.policies.builtin import ControllerPolicy

import upright  # noqa: F401  (registers the ids)

NAO = get_robot("nao")


# ---------------------------------------------------------------- equation 4, each case
def test_applied_error_is_zero_when_prediction_and_error_disagree_in_sign():
    # raw 5, previous 8: predicted 3·(5−8)+5 = −4 → opposite sign → 0
    assert applied_error(np.array([5.0]), np.array([8.0]))[0] == 0.0
    # raw 0 → product 0 → 0
    assert applied_error(np.array([0.0]), np.array([3.0]))[0] == 0.0


def test_applied_error_uses_prediction_when_it_is_closer_to_zero():
    # raw 10, previous 11: predicted 3·(−1)+10 = 7, |7| < |10| → 7
    assert applied_error(np.array([10.0]), np.array([11.0]))[0] == pytest.approx(7.0)
    assert applied_error(np.array([-10.0]), np.array([-11.0]))[0] == pytest.approx(-7.0)


def test_applied_error_never_over_predicts():
    # raw 10, previous 8 (error growing): predicted 16 → the raw 10 is used
    assert applied_error(np.array([10.0]), np.array([8.0]))[0] == pytest.approx(10.0)
    assert applied_error(np.array([-10.0]), np.array([-8.0]))[0] == pytest.approx(-10.0)


def test_raw_error_uses_the_request_of_three_cycles_ago():
    est = JointErrorEstimator(size=2, delay=3)
    est.reset(np.zeros(2))
    for request in ([1.0, 10.0], [2.0, 20.0], [3.0, 30.0]):
        est.update(np.zeros(2))
        est.push(np.array(request))
    est.update(np.array([0.5, 5.0]))  # now the request [1, 10] of 3 cycles ago is due
    assert est.raw == pytest.approx([0.5, 5.0])
    est.push(np.array([4.0, 40.0]))
    est.update(np.zeros(2))
    assert est.raw == pytest.approx([2.0, 20.0])


def test_unstiffened_joint_has_no_error():
    est = JointErrorEstimator(size=1, delay=1)
    est.reset(np.zeros(1))
    est.push(np.array([np.nan]))
    est.update(np.array([7.0]))
    assert est.raw[0] == 0.0


def test_compensation_with_zero_range_start_is_equation_1():
    entry = CompensationEntry(joint=0, a=0.0, b=10.0, predict=False, hip_pitch_difference=False,
                              apply=((1, 0.5), (2, -1.0)))
    offsets = compensation([entry], raw=np.array([6.0, 0, 0]), applied=np.zeros(3), hip_pitch_difference=0.0, size=3)
    assert offsets == pytest.approx([0.0, 6.0 * 0.5, 6.0 * -1.0])  # R̂ = R + Δ·p


def test_compensation_uses_the_predicted_error_for_predict_entries():
    entry = CompensationEntry(joint=0, a=0.0, b=10.0, predict=True, hip_pitch_difference=False, apply=((1, 1.0),))
    offsets = compensation([entry], raw=np.array([6.0, 0.0]), applied=np.array([4.0, 0.0]),
                           hip_pitch_difference=0.0, size=2)
    assert offsets[1] == pytest.approx(4.0)


def test_entry_percent_dead_band_opposite_signs_and_clip():
    band = CompensationEntry(0, 2.0, 10.0, False, False, ())
    assert entry_percent(band, 1.0) == 0.0
    assert entry_percent(band, 6.0) == pytest.approx(0.5)
    neg = CompensationEntry(0, -1.0, -10.0, False, False, ())
    assert entry_percent(neg, -5.5) == pytest.approx(0.5)
    assert entry_percent(neg, 3.0) == 0.0
    mixed = CompensationEntry(0, -5.0, 5.0, False, False, ())
    assert entry_percent(mixed, -10.0) == pytest.approx(2.0)  # not clipped
    hpd = CompensationEntry(None, 10.0, 15.0, False, True, ())
    assert entry_percent(hpd, 40.0) == 1.0  # hip-pitch-difference entries are clipped to 1


# ---------------------------------------------------------------- interpolation and data
def test_interpolation_types():
    for kind in ("linear", "sin_min_to_max", "sin_zero_to_max"):
        assert interpolate(kind, 0.0) == pytest.approx(0.0)
        assert interpolate(kind, 1.0) == pytest.approx(1.0)
        assert interpolate(kind, 2.0) == pytest.approx(1.0)
    assert interpolate("linear", 0.25) == pytest.approx(0.25)
    assert interpolate("sin_min_to_max", 0.5) == pytest.approx(0.5)
    assert interpolate("sin_min_to_max", 0.25) < 0.25  # slow start
    assert interpolate("sin_zero_to_max", 0.5) == pytest.approx(np.sin(np.pi / 4))
    with pytest.raises(ValueError, match="cubic"):
        interpolate("cubic", 0.5)


def test_nao_library_loads_every_motion():
    lib = load_library(NAO)
    assert {"front", "back", "recoverGeneric", "stand", "sit", "restartFront", "restartBack"} <= set(lib.motions)
    assert {"armSavingFront", "armSavingBack"} <= set(lib.blocks)
    front = lib.blocks["front"].keyframes[0]
    assert front.duration == 400.0
    assert front.angles[NAO.actuator_names.index("LShoulderRoll")] == pytest.approx(71.9)


def test_a_blocks_self_compensation_keeps_the_files_degrees_and_resolves_its_joints(tmp_path):
    """``fromSitting``'s self-compensation: the file's dead band as it stands (deg, the unit of the
    engine's errors), the factor on each named actuator; an unknown joint is refused at load."""
    own = load_library(NAO).blocks["fromSitting"].self_compensation
    assert own.dead_band == 2.0
    assert own.gains[NAO.actuator_names.index("LKneePitch")] == 0.7
    assert own.gains[NAO.actuator_names.index("HeadYaw")] == 0.0
    text = data_path("keyframe_nao.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("joints: [LHipYawPitch,", "joints: [LHipYawPich,", 1))
    with pytest.raises(ValueError, match="LHipYawPich"):
        load_library(NAO, bad)


@pytest.mark.parametrize("old, new, message", [
    ("LAnklePitch: 0.57", "LAnklePich: 0.57", "LAnklePich"),
    ("roll_over: rollOver", "roll_over: rolOver", "engine.roll_over names unknown motion 'rolOver'"),
    ("- {motion: front, pre: {var: pitch, range: [0, 2000]}}", "- {motion: frnt, pre: {var: pitch, range: [0, 2000]}}",
     "follow-up to unknown motion 'frnt'"),
])
def test_bad_data_raises_naming_the_value(tmp_path, old, new, message):
    text = data_path("keyframe_nao.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace(old, new, 1))
    with pytest.raises(ValueError, match=message):
        load_library(NAO, bad)


def test_feature_switches_and_scales_are_overrides():
    c = KeyframeController(NAO, KeyframeParams(compensation=False))
    assert not c.params.compensation
    c = make_controller("keyframe", NAO, "getup", params={"compensation": "true", "oscillation": False,
                                                           "balancer_p_scale": 2})
    assert c.params.compensation and not c.params.oscillation and c.params.balancer_p_scale == 2.0
    assert KeyframeParams.load("wolfgang") == KeyframeParams()
    with pytest.raises(ValueError, match="compensation_scales"):
        c.params.with_overrides({"compensation_scales": 0.5})
    with pytest.raises(ValueError, match="tempo must be > 0, got -1"):
        c.params.with_overrides({"tempo": -1})


def _played_durations(params: dict, seconds: float) -> set[tuple[str, float, float]]:
    """(block, library duration ms, played duration ms) of the keyframes a real prone start in
    ``lab`` plays in its first ``seconds`` with keyframe parameters ``params``."""
    env = gym.make("upright/NaoGetUp-v0", start="prone", conditions="lab", max_episode_seconds=seconds)
    policy = ControllerPolicy("keyframe", params=params)
    observation, info = env.reset(seed=0)
    policy.reset(env, 0)
    played = set()
    while True:
        observation, _, terminated, truncated, info = env.step(policy.act(observation, info))
        c = policy.controller
        if c.state == "working":
            played.add((c.block.name, c.kf.duration, c.duration))
        if terminated or truncated:
            break
    env.close()
    return played


def test_tempo_divides_every_keyframe_duration():
    """``tempo`` plays each keyframe in ``duration / tempo`` (a wait's stretch may only lengthen
    it), checked on the keyframes a real prone start plays in its first second."""
    played = _played_durations({"tempo": 1.25}, 1.0)
    assert all(duration >= library / 1.25 - 1e-9 for _, library, duration in played)
    assert any(library > 100 and duration == pytest.approx(library / 1.25) for _, library, duration in played)


def test_tempo_blocks_limit_the_tempo_to_the_named_blocks():
    """With ``tempo_blocks`` the tempo speeds up those blocks only: a prone start's ``front`` block
    plays faster while its rise (``frontUpright``) keeps the library's timing; an unknown block is
    named with the valid ones."""
    played = _played_durations({"tempo": 1.25, "tempo_blocks": "front"}, 4.0)
    blocks = {block for block, _, _ in played}
    assert {"front", "frontUpright"} <= blocks, blocks
    assert any(block == "front" and library > 100 and duration == pytest.approx(library / 1.25)
               for block, library, duration in played)
    assert all(duration >= library - 1e-9 for block, library, duration in played if block != "front")
    with pytest.raises(ValueError, match="unknown block 'frnt' for nao; valid: front, frontUpright"):
        make_controller("keyframe", NAO, "getup", params={"tempo_blocks": ["frnt"]})


# ---------------------------------------------------------------- real stand-ups
def _episode(env: gym.Env, params: dict, seed: int) -> tuple[ControllerPolicy, dict]:
    """One whole episode of the keyframe with ``params`` in ``env`` (closed after it): the policy
    and the last step's info."""
    policy = ControllerPolicy("keyframe", params=params)
    observation, info = env.reset(seed=seed)
    policy.reset(env, seed)
    while True:
        observation, _, terminated, truncated, info = env.step(policy.act(observation, info))
        if terminated or truncated:
            break
    env.close()
    return policy, info


@pytest.mark.parametrize("start", ["prone", "supine"])
def test_stands_up_in_lab_conditions(start):
    env = gym.make("upright/NaoGetUp-v0", start=start, conditions="lab", max_episode_seconds=9.0)
    policy, info = _episode(env, {}, 0)
    metrics = info["episode_metrics"]
    assert metrics["success"], metrics
    assert policy.controller.status == "finished"


@pytest.mark.parametrize("roll_over", [True, False])
def test_a_loaded_torso_stands_up_from_supine_by_rolling_onto_its_front(roll_over):
    """With 0.5 kg on the torso the back stand-up cannot tip the torso over the arms and breaks up.
    With ``roll_over`` (ours) the next try rolls the robot onto its front, and the front stand-up
    rises under the load; B-Human's engine (without it) repeats the back stand-up until the episode ends."""
    env = gym.make("upright/NaoGetUp-v0", start="supine", conditions=get_conditions("lab").changed(
        {"torso_mass": [0.5, 0.5]}))
    policy, info = _episode(env, {"roll_over": roll_over}, 1)
    motions = [name for _, name, kind, _ in policy.controller.history if kind == "kf"]
    assert policy.controller.tries >= 1, policy.controller.history
    assert ("rollOver" in motions) == roll_over
    assert info["episode_metrics"]["success"] == roll_over, info["episode_metrics"]


def test_registered_as_prior():
    env = gym.make("upright/NaoGetUp-v0", prior="keyframe", max_episode_seconds=0.1)
    observation, _ = env.reset(seed=1)
    assert observation.shape == env.observation_space.shape
    assert isinstance(make_controller("keyframe", NAO, "getup"), KeyframeController)
    env.close()


def test_side_recovery_turns_the_robot_and_it_stands_up():
    """On its side (torso rolled 90°, controller running from the first instant) the recover block
    branches to the side recovery, which turns the robot onto its back; it then stands up."""
    from upright import Simulation

    sim = Simulation("nao", "lab")
    qpos = sim.model.key("stand").qpos.copy()
    qpos[3:7] = [np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0]
    qpos[2] = 0.1
    sensors = sim.reset("stand", seed=0, qpos=qpos)
    controller = KeyframeController(NAO)
    controller.reset(sensors, np.random.default_rng(0))
    assert abs(np.rad2deg(sensors.fused[1])) > 80
    for _ in range(int(14.0 / NAO.control_period)):
        sensors = sim.step(controller.step(sensors))
    blocks = {name for _, name, _, _ in controller.history}
    assert blocks & {"recoverBack", "recoverFront"}, controller.history
    assert blocks & {"back", "front"}
    assert sim.head_height() > 0.45 and np.rad2deg(sim.torso_tilt()) < 20
