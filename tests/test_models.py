"""Model facts against the reference numbers, standing and lying behaviour on flat ground."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from reference_data import (
    NAO_JOINTS,
    NAO_MASS,
    NAO_TORSO_HEIGHT,
    WOLFGANG_JOINTS,
    WOLFGANG_MASS,
    WOLFGANG_TRUNK_HEIGHT,
)
from conftest import assert_hyp_coupled, hold
from upright import Simulation, get_robot

REFERENCE = {
    "nao": (NAO_JOINTS, NAO_MASS, NAO_TORSO_HEIGHT, 0.01),
    "wolfgang": (WOLFGANG_JOINTS, WOLFGANG_MASS, WOLFGANG_TRUNK_HEIGHT, 0.02),
}


def test_model_loads_alone_with_keyframes(robot):
    spec = get_robot(robot)
    model = mujoco.MjModel.from_xml_path(str(spec.mjcf))
    keys = {model.key(i).name for i in range(model.nkey)}
    assert set(spec.poses) <= keys
    for pose in spec.poses:
        key = model.key(pose)
        # ctrl of each keyframe = the joint angles of the actuated joints
        qadr = model.jnt_qposadr[model.actuator_trnid[:, 0]]
        np.testing.assert_allclose(key.ctrl, key.qpos[qadr], atol=1e-9)


def test_joint_names_order_axes_limits(robot):
    joints, _, _, _ = REFERENCE[robot]
    model = mujoco.MjModel.from_xml_path(str(get_robot(robot).mjcf))
    hinges = [i for i in range(model.njnt) if model.jnt_type[i] == mujoco.mjtJoint.mjJNT_HINGE]
    assert [model.joint(i).name for i in hinges] == [j[0] for j in joints]
    data = mujoco.MjData(model)
    data.qpos[:] = model.qpos0  # torso at identity, all joints at zero
    mujoco.mj_kinematics(model, data)
    for name, axis, lower, upper in joints:
        j = model.joint(name).id
        expected = np.array(axis, dtype=float) / np.linalg.norm(axis)
        np.testing.assert_allclose(data.xaxis[j], expected, atol=1e-3, err_msg=name)
        np.testing.assert_allclose(model.jnt_range[j], [lower, upper], atol=1e-4, err_msg=name)


def test_total_mass(robot):
    _, mass, _, _ = REFERENCE[robot]
    model = mujoco.MjModel.from_xml_path(str(get_robot(robot).mjcf))
    assert model.body_subtreemass[1] == pytest.approx(mass, rel=0.01)


def test_standing_torso_height_from_kinematics(robot):
    _, _, height, tolerance = REFERENCE[robot]
    sim = Simulation(robot)
    sim.reset()
    torso, _ = sim.torso_pose()
    soles = sim.sole_positions()
    # both soles on the ground (Wolfgang's walkready angles are slightly asymmetric left/right)
    assert abs(soles[0, 2] - soles[1, 2]) < 3e-3
    assert torso[2] - soles[:, 2].mean() == pytest.approx(height, abs=tolerance)


def test_standing_ten_seconds(robot):
    sim = Simulation(robot)
    sim.reset(seed=0)
    start, _ = sim.torso_pose()
    tilt0 = sim.torso_tilt()
    worst = {"tilt": 0.0, "drift": 0.0}

    def record(s: Simulation) -> None:
        pos, _ = s.torso_pose()
        worst["tilt"] = max(worst["tilt"], abs(s.torso_tilt() - tilt0))
        worst["drift"] = max(worst["drift"], float(np.linalg.norm(pos[:2] - start[:2])))

    hold(sim, 10.0, every_step=record)
    assert not sim.unstable
    assert np.rad2deg(worst["tilt"]) < 5.0
    assert worst["drift"] < 0.02


@pytest.mark.parametrize("pose", ["prone", "supine"])
def test_lying_settles_without_penetration(robot, pose):
    sim = Simulation(robot)
    sim.reset(pose, seed=0, height_offset=0.05)
    deepest = {"value": 0.0}

    def record(s: Simulation) -> None:
        deepest["value"] = max(deepest["value"], s.floor_penetration())

    hold(sim, 2.0, every_step=record)
    assert not sim.unstable
    assert deepest["value"] < 0.005
    assert sim.kinetic_energy() < 0.01
    # still settled a moment later: not sliding or creeping
    pos0, _ = sim.torso_pose()
    hold(sim, 0.5)
    pos1, _ = sim.torso_pose()
    assert np.linalg.norm(pos1 - pos0) < 0.005


@pytest.mark.parametrize("pose", ["prone", "supine"])
def test_lying_keyframes_have_no_self_penetration(robot, pose):
    sim = Simulation(robot)
    sim.reset(pose, seed=0, height_offset=0.05)
    ground = {g for g in range(sim.model.ngeom) if sim.model.geom_bodyid[g] == 0}
    for i in range(sim.data.ncon):
        c = sim.data.contact[i]
        if c.geom1 not in ground and c.geom2 not in ground:
            assert c.dist > -1e-3, (sim.model.geom(c.geom1).name, sim.model.geom(c.geom2).name, c.dist)
    assert_hyp_coupled(sim)
