"""The robot-side sections of an export's spec (``upright.training.export_spec``): the joints'
geometry and signs against the MJCF, the kinematic check values against MuJoCo's forward
kinematics of the whole model, the observation semantics against the training conditions, and the
prior test vectors (the shipped ones and fresh recordings of residuals acting inside their prior)
against a fresh Python prior."""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest
import yaml

import upright
from upright.baselines import make_controller
from upright.envs.conditions import get_conditions
from upright.envs.robots import ROBOT_NAMES, RobotSpec
from upright.policies.builtin import RandomPolicy
from upright.policies.controller_record import RecordingController, record_prior_episode
from upright.policies.onnx_policy import SPEC_FILE
from upright.policies.run import zoo_names
from upright.training.export import zoo_export_dir
from upright.training.export_spec import (PRIOR_PYTHON_TOLERANCE, PRIOR_TOLERANCE, PRIOR_VECTORS_FILE, joints_spec,
                                          kinematics_check, observation_semantics, replay_prior_vectors,
                                          training_conditions)

#: The largest prior vectors file of a shipped policy (two 20 s episodes, float64, compressed).
MAX_VECTORS_BYTES = 3 * 1024 * 1024
#: The largest zoo entry (model, normalisation, run files and the export).
MAX_ZOO_ENTRY_BYTES = 5 * 1024 * 1024


def _torso_frame_positions(robot: RobotSpec, pose: str, points: dict) -> dict[str, np.ndarray]:
    """Each check point's position (m) in the torso frame at keyframe ``pose``, from the robot's
    whole MJCF (free joint included) posed in the world: the torso's world pose undone."""
    model = mujoco.MjModel.from_xml_path(str(robot.mjcf))
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key(pose).id)
    mujoco.mj_kinematics(model, data)
    torso = model.body(robot.torso_body).id
    rotation = data.xmat[torso].reshape(3, 3)
    out = {}
    for name, point in points.items():
        body = model.body(point["body"]).id
        world = data.xpos[body] + data.xmat[body].reshape(3, 3) @ np.array(point["pos_m"])
        out[name] = rotation.T @ (world - data.xpos[torso])
    return out


@pytest.mark.parametrize("robot_name", ROBOT_NAMES)
def test_kinematic_check_values_are_the_models_forward_kinematics(robot_name):
    robot = upright.get_robot(robot_name)
    check = kinematics_check(robot)
    model = mujoco.MjModel.from_xml_path(str(robot.mjcf))
    qadr = [model.jnt_qposadr[model.joint(j).id] for j in robot.joint_names]
    assert list(check["poses"]) == list(robot.poses) == [robot.standing_pose, "prone", "supine"]
    assert set(check["points"]) == {*robot.sole_sites, "l_hand", "r_hand"}
    for sole in robot.sole_sites:  # the sole points are the model's sole sites
        site = model.site(sole)
        assert check["points"][sole] == {**check["points"][sole], "body": model.body(site.bodyid[0]).name}
        np.testing.assert_allclose(check["points"][sole]["pos_m"], site.pos, atol=1e-6)
    for pose, values in check["poses"].items():
        np.testing.assert_allclose(values["joint_pos_rad"], model.key(pose).qpos[qadr], atol=1e-9)
        expected = _torso_frame_positions(robot, pose, check["points"])
        for point, position in values["points_m"].items():
            np.testing.assert_allclose(position, expected[point], rtol=0, atol=1e-6, err_msg=f"{pose} {point}")
    stand = check["poses"][robot.standing_pose]["points_m"]
    assert stand[robot.sole_sites[0]][1] > 0 > stand[robot.sole_sites[1]][1]  # left is +y
    assert stand[robot.sole_sites[0]][2] < -0.3  # the soles far below the torso origin


@pytest.mark.parametrize("robot_name", ROBOT_NAMES)
def test_every_joint_has_its_axis_sign_zero_and_limits(robot_name):
    robot = upright.get_robot(robot_name)
    spec = joints_spec(robot)
    model = mujoco.MjModel.from_xml_path(str(robot.mjcf))
    entries = spec["entries"]
    assert [e["name"] for e in entries] == list(robot.joint_names) and [e["index"] for e in entries] == list(
        range(len(robot.joint_names)))
    assert spec["count"] == len(robot.joint_names) and spec["actuators"] == len(robot.actuator_names)
    for entry in entries:
        joint = model.joint(entry["name"])
        axis = np.array(entry["axis"])
        assert abs(np.linalg.norm(axis) - 1.0) < 1e-5 and entry["positive"], entry
        np.testing.assert_allclose(axis, joint.axis, atol=1e-6)  # no body rotations in either model
        k = int(np.argmax(np.abs(axis)))
        if abs(axis[k]) > 0.999999:
            assert entry["sign"] == f"{'+' if axis[k] > 0 else '-'}{'xyz'[k]}"
        assert entry["zero_rad"] == float(joint.qpos0[0]) == 0.0
        assert [entry["lower_rad"], entry["upper_rad"]] == joint.range.tolist()
        assert entry["parent"] == model.body(model.body(joint.bodyid[0]).parentid[0]).name
        driver = robot.coupled_joints.get(entry["name"], entry["name"])
        assert robot.actuator_names[entry["actuator"]] == driver
        assert entry.get("coupled_to") == robot.coupled_joints.get(entry["name"])
    by_name = {e["name"]: e for e in entries}
    if robot_name == "nao":  # Aldebaran's conventions: a positive knee flexes, a positive shoulder pitch lowers the arm
        assert by_name["RHipYawPitch"]["coupled_to"] == "LHipYawPitch" and by_name["RHipYawPitch"]["actuator"] == 12
        assert "24" in spec["orders"] and "23" in spec["orders"]
        for side in "LR":
            assert by_name[f"{side}KneePitch"]["positive"].endswith("moves backward (-x)")
            assert by_name[f"{side}ShoulderPitch"]["positive"].endswith("moves down (-z)")
    elif robot_name == "wolfgang":  # mirrored axes: the left knee flexes positive, the right one negative
        assert by_name["LKnee"]["sign"] == "+y" and by_name["RKnee"]["sign"] == "-y"
        assert by_name["LKnee"]["positive"] == "l_sole moves backward (-x)"
        assert by_name["RKnee"]["positive"] == "r_sole moves forward (+x)"


@pytest.mark.parametrize("preset, velocity, orientation, latency", [
    ("lab", "exact", "exact", "no latency"),
    ("sim2real", "difference", "filter", "measured 1 to 3 (drawn per episode) control cycles"),
])
def test_observation_semantics_follow_the_training_conditions(preset, velocity, orientation, latency):
    env = gym.make("upright/NaoGetUp-v0", prior="keyframe")
    semantics = observation_semantics(env.unwrapped, training_conditions({"conditions": preset}))
    trained = semantics["trained_with"]
    assert (trained["joint_velocity"], trained["orientation"]) == (velocity, orientation)
    assert latency in semantics["latency"]
    blocks = semantics["blocks"]
    assert list(blocks) == list(env.unwrapped.observation_slices())
    assert all(set(block) == {"simulation", "robot"} and all(block.values()) for block in blocks.values())
    assert "backward difference" in blocks["joint_vel"]["robot"]
    assert ("backward difference" in blocks["joint_vel"]["simulation"]) == (velocity == "difference")
    assert ("OrientationFilter" in semantics["orientation"]["simulation"]) == (orientation == "filter")
    assert "multiply each reading by 9.81" in blocks["foot_pressure"]["robot"]
    assert "clipping to the joint limits" in blocks["joint_target"]["simulation"]
    sensors = semantics["pressure_sensors"]
    assert [s["name"] for s in sensors] == list(env.unwrapped.robot.pressure_sensors)
    assert all(s["pos_m"][2] == 0.0 for s in sensors)  # NAO's FSRs lie in the sole plane
    assert training_conditions({"conditions": get_conditions("sim2real").to_dict()}) == get_conditions("sim2real")
    assert training_conditions({}) == get_conditions("lab")


@pytest.mark.parametrize("env_id, kwargs, call", [
    ("upright/NaoGetUp-v0", {"prior": "keyframe", "start": "prone", "tempo_range": 2.0}, "set_tempo"),
    ("upright/NaoWalk-v0", {"prior": "step_adjust", "residual_on": "steps", "command": (0.1, 0.0, 0.2)},
     "set_step_residual"),
])
def test_a_residual_acting_inside_its_prior_is_recorded_with_its_calls(env_id, kwargs, call):
    """A random residual on the tempo or the step targets: its calls are part of the prior's
    inputs, and a fresh prior fed them (and the Sensors) gives the recorded targets."""
    env = gym.make(env_id, conditions="competition", max_episode_seconds=0.6, **kwargs)
    episode = record_prior_episode(env, RandomPolicy(), seed=5)
    assert episode.cycles == 51 and list(episode.inputs) == [call]
    values = episode.inputs[call]
    assert np.isnan(values[0]).all() and not np.isnan(values[1:]).any()  # none before the first step
    if "command" in kwargs:
        np.testing.assert_array_equal(episode.command, kwargs["command"])
    base = env.unwrapped
    prior = make_controller(kwargs["prior"], base.robot, base.task, params=base.prior.params)
    np.testing.assert_allclose(episode.replay(prior), episode.targets, rtol=0, atol=PRIOR_PYTHON_TOLERANCE)
    assert isinstance(base.prior, type(prior))  # the environment's own prior is back in place


def test_the_recording_holds_one_episode_from_its_start():
    env = gym.make("upright/NaoWalk-v0", prior="step_adjust")
    _, info = env.reset(seed=0)
    recorder = RecordingController(env.unwrapped.prior, seed=0)
    recorder.reset(info["sensors"])
    with pytest.raises(ValueError, match="reset twice"):
        recorder.reset(info["sensors"])
    with pytest.raises(ValueError, match="command changed after reset"):
        recorder.set_command(np.zeros(3))


@pytest.mark.parametrize("name", zoo_names())
def test_shipped_prior_vectors_reproduce_with_the_python_prior(name):
    """The committed vectors are two whole episodes from their first cycle, and a fresh prior built
    from the spec gives their targets within the Python tolerance; the files stay small."""
    directory = zoo_export_dir(name)
    spec = yaml.safe_load((directory / SPEC_FILE).read_text())
    section = spec["prior_vectors"]
    assert section["tolerance_rad"] == PRIOR_TOLERANCE and section["python_tolerance_rad"] == PRIOR_PYTHON_TOLERANCE
    replayed = replay_prior_vectors(directory)
    assert [episode.seed for episode, _ in replayed] == [section["first_seed"] + k for k in range(section["episodes"])]
    period = spec["timing"]["control_period_s"]
    for episode, targets in replayed:
        time = episode.sensors["time"]
        assert time[0] == 0.0 and np.allclose(np.diff(time), period) and episode.cycles > 100
        assert (episode.command is not None) == (spec["task"] == "walk")
        error = np.abs(targets - episode.targets).max(axis=1)
        worst = int(error.argmax())
        assert error[worst] <= PRIOR_PYTHON_TOLERANCE, f"seed {episode.seed} cycle {worst}: {error[worst]:.3e} rad"
    assert (directory / PRIOR_VECTORS_FILE).stat().st_size < MAX_VECTORS_BYTES
    assert sum(p.stat().st_size for p in directory.parent.rglob("*") if p.is_file()) < MAX_ZOO_ENTRY_BYTES
