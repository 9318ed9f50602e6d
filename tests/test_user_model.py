"""A user's MJCF of one of our robots through a model map (``model=``, ``model_map=``),
``upright check-model`` and every command on such a model (eval, train, export, optimize, report,
the model-variants experiment), on the variant models :mod:`upright.eval.model_variants` writes
from ours: a legs-only robot, knees with a 0.15 rad ``ref``, softer servos, and renamed joints with
a map, of the Wolfgang and of the NAO."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import gymnasium as gym
import mujoco
import numpy as np
import pytest
import yaml

import upright  # noqa: F401  (registers the environments)
from conftest import last_bar
from upright.baselines import make_controller
from upright.cli import main
from upright.envs.robots import ROBOTS, get_robot, with_model
from upright.envs.robots.user_model import MapFile, read_model_map
from upright.envs.simulation import Simulation
from upright.eval.check_model import WIDTH, check_model
from upright.eval.model_variants import (KNEE_REF, OFFSET_ZERO, ROBOT_VARIANTS, SOFT_GAIN, SOFT_SUBSTEPS, flipped_joints,
                                         offset_joint, write_variants)

WOLFGANG, NAO = get_robot("wolfgang"), get_robot("nao")
FLIPPED, OFFSET_JOINT = flipped_joints(WOLFGANG), offset_joint(WOLFGANG)
SOFT_TIMESTEP = WOLFGANG.control_period / SOFT_SUBSTEPS


@pytest.fixture(scope="module")
def all_variants(tmp_path_factory) -> dict[str, dict[str, dict[str, str]]]:
    """The variant models: robot → name → the environment arguments that load it."""
    written = write_variants(tmp_path_factory.mktemp("variants"))
    out: dict[str, dict[str, dict[str, str]]] = {}
    for (robot, name), (model, map_path) in written.items():
        out.setdefault(robot, {})[name] = {"model": str(model), **({"model_map": str(map_path)} if map_path else {})}
    return out


@pytest.fixture(scope="module")
def variants(all_variants) -> dict[str, dict[str, str]]:
    """The Wolfgang variants: name → the environment arguments that load it."""
    return all_variants["wolfgang"]


@pytest.fixture(scope="module")
def nao_variants(all_variants) -> dict[str, dict[str, str]]:
    """The NAO variants: name → the environment arguments that load it."""
    return all_variants["nao"]


def _held(sim: Simulation, targets: np.ndarray, seconds: float) -> np.ndarray:
    """Joint angles (rad, joint order) after holding ``targets`` for ``seconds``."""
    for _ in range(int(round(seconds / sim.robot.control_period))):
        sensors = sim.step(targets)
    return sensors.joint_pos


# ---------------------------------------------------------------------- the map
def _write_map(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "map.yml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("data, message", [
    ({"feets": {}}, "unknown key 'feets'; valid keys: " + ", ".join(MapFile.model_fields)),
    ({"joints": {"LKneee": "l_knee"}}, "unknown key 'joints.LKneee'; valid keys of joints: HeadPan"),
    ({"joints": {"LKnee": {"joint": "l_knee", "sgn": -1}}}, "unknown key 'joints.LKnee.sgn'; valid keys of "
                                                            "joints.LKnee: joint, zero, sign"),
    ({"joints": {"LKnee": {"joint": "l_knee", "sign": 2}}}, "joints.LKnee.sign: input should be 1 or -1, got 2"),
    ({"joints": {"LKnee": {"joint": "l_knee", "zero": "a"}}}, "joints.LKnee.zero: input should be a valid number"),
    ({"imu": {"site": "a", "gyro": "b"}}, "imu: needs either site, or gyro, accel and quat"),
    ({"feet": {"pressure": ["a", "b"]}}, "feet.pressure: value should have at least 8 items"),
    ({"robot": "nao"}, "robot: input should be 'wolfgang', got 'nao'"),
])
def test_map_is_validated_strictly(tmp_path, data, message):
    path = _write_map(tmp_path, data)
    with pytest.raises(ValueError) as error:
        read_model_map(path, WOLFGANG)
    assert str(error.value).startswith(f"{path}: ") and message in str(error.value)
    assert "\n" not in str(error.value)


def test_bad_models_and_maps_are_named(tmp_path, variants):
    with pytest.raises(ValueError, match="model_map 'x.yml' needs model"):
        with_model(WOLFGANG, None, "x.yml")
    with pytest.raises(ValueError, match="model 'nope.xml' does not exist"):
        with_model(WOLFGANG, "nope.xml")
    with pytest.raises(ValueError, match="model map 'nope.yml' does not exist"):
        with_model(WOLFGANG, variants["knee_ref"]["model"], "nope.yml")
    typo = _write_map(tmp_path, {"joints": {"LKnee": "l_kne"}})
    with pytest.raises(ValueError, match="joints.LKnee names 'l_kne', which is no hinge joint of the model"):
        with_model(WOLFGANG, variants["renamed"]["model"], typo)
    with pytest.raises(ValueError, match="the model's joints .* are none of wolfgang's"):  # renamed, no map
        with_model(WOLFGANG, variants["renamed"]["model"])
    with pytest.raises(ValueError, match="none of nao's"):  # a Wolfgang is no NAO
        gym.make("upright/NaoWalk-v0", model=variants["knee_ref"]["model"])


# ---------------------------------------------------------------------- the variants in the simulation
def test_a_variant_needs_its_names_in_the_robots_description(tmp_path, monkeypatch):
    """The variants come from the description alone: one lacking the names a variant needs, or
    naming a variant there is no recipe for, is refused by name before anything is written."""
    monkeypatch.setitem(ROBOTS, "wolfgang", dataclasses.replace(WOLFGANG, head_arm_bodies=()))
    with pytest.raises(ValueError, match="variant 'legs_only' of robot 'wolfgang' needs its description's "
                                         "head_arm_bodies"):
        write_variants(tmp_path, ("wolfgang",))
    monkeypatch.setitem(ROBOT_VARIANTS, "nao", ("soft", "bent"))
    with pytest.raises(ValueError, match=r"robot 'nao' names unknown variants \['bent'\]; valid: legs_only, "):
        write_variants(tmp_path, ("nao",))
    assert not any(tmp_path.iterdir())


def test_knee_ref_is_our_robot(variants):
    """The knees' ref is their zero: the model is ours to the last digits."""
    ours, theirs = Simulation(WOLFGANG), Simulation(with_model(WOLFGANG, **variants["knee_ref"]))
    targets = ours.model.key("walkready").ctrl
    for sim in (ours, theirs):
        sim.reset("walkready", seed=0)
    np.testing.assert_allclose(_held(theirs, targets, 1.0), _held(ours, targets, 1.0), atol=1e-6)


def test_knee_ref_taken_one_to_one_pitches_the_feet(tmp_path, variants):
    """The knee's ref not taken as its zero (zero_from_ref false): check-model shows the soles
    moved at every reference pose."""
    path = _write_map(tmp_path, {"zero_from_ref": False})
    report = check_model(variants["knee_ref"]["model"], "wolfgang", path)
    assert f"ref {KNEE_REF:+.4f} rad NOT taken as zero" in report
    assert "walkready  l_sole" in report and "prone      r_sole" in report


def test_renamed_model_with_its_map_is_our_robot(variants):
    """Names, actuator order, signs, a zero offset, the IMU and the foot pressure from geoms: the
    same robot, read in our names and angles."""
    robot = with_model(WOLFGANG, **variants["renamed"])
    ours, theirs = Simulation(WOLFGANG), Simulation(robot)
    assert theirs.model.actuator(0).name == WOLFGANG.actuator_names[0]
    spec_joint = theirs.model.joint(OFFSET_JOINT)
    assert spec_joint.range[0] == pytest.approx(ours.model.joint(OFFSET_JOINT).range[0])
    targets = ours.model.key("walkready").ctrl
    start = [sim.reset("walkready", seed=0) for sim in (ours, theirs)]
    np.testing.assert_allclose(start[1].joint_pos, start[0].joint_pos, atol=1e-12)
    np.testing.assert_allclose(_held(theirs, targets, 1.0), _held(ours, targets, 1.0), atol=1e-4)
    # Standing, the quarter-sole sensors of the foot geoms read what our cleat sensors read.
    np.testing.assert_allclose(theirs.sensors().foot_pressure, ours.sensors().foot_pressure, rtol=0.02, atol=0.2)
    assert theirs.sensors().foot_pressure.sum() == pytest.approx(ours.weight, rel=0.02)


def test_renamed_nao_with_its_map_is_our_robot(nao_variants):
    """A NAO under other names, signs and a zero, its pressure sensors, sole sites and head top
    named by the map: the same robot, its hip yaw-pitch coupling included."""
    ours, theirs = Simulation(NAO), Simulation(with_model(NAO, **nao_variants["renamed"]))
    targets = ours.model.key("stand").ctrl.copy()
    for sim in (ours, theirs):
        sim.reset("stand", seed=0)
    np.testing.assert_allclose(_held(theirs, targets, 1.0), _held(ours, targets, 1.0), atol=1e-4)
    np.testing.assert_allclose(theirs.sensors().foot_pressure, ours.sensors().foot_pressure, rtol=1e-3, atol=0.05)
    # The hip yaw-pitch turned (the right joint follows through the coupling): the feet slide a
    # little, within millimetres of ours.
    targets[NAO.actuator_names.index("LHipYawPitch")] = -0.3
    np.testing.assert_allclose(_held(theirs, targets, 1.0), _held(ours, targets, 1.0), atol=5e-3)
    assert theirs.sensors().joint_pos[NAO.joint_names.index("RHipYawPitch")] == pytest.approx(-0.3, abs=0.05)
    report = check_model(nao_variants["renamed"]["model"], "nao", nao_variants["renamed"]["model_map"])
    assert "RKneePitch      <- r_knee_pitch       sign -1 (turns the other way)" in report
    assert "every sole and hand within 0.1 mm of ours" in report


def test_soft_and_legs_only_nao(nao_variants):
    """The softer NAO keeps its servos and its 3 ms timestep; the legs-only NAO refuses the get-ups
    and builds the walks."""
    sim = Simulation(with_model(NAO, **nao_variants["soft"]))
    assert sim.n_substeps == SOFT_SUBSTEPS and sim.model.opt.timestep == pytest.approx(0.003)
    ours = Simulation(NAO).model.actuator_gainprm[:, 0]
    np.testing.assert_allclose(sim.model.actuator_gainprm[:, 0], SOFT_GAIN * ours)
    legs = with_model(NAO, nao_variants["legs_only"]["model"])
    assert len(legs.missing_joints) == 12 and "LWristYaw" in legs.missing_joints
    with pytest.raises(ValueError, match="baseline 'keyframe' \\(getup\\) needs the arms"):
        make_controller("keyframe", legs, "getup")
    for name in ("step_adjust", "lipm"):
        make_controller(name, legs, "walk")


def test_soft_model_keeps_its_servos_and_timestep(variants):
    sim = Simulation(with_model(WOLFGANG, **variants["soft"]))
    assert sim.model.opt.timestep == SOFT_TIMESTEP and sim.n_substeps == 4
    ours = Simulation(WOLFGANG)
    np.testing.assert_allclose(sim.model.actuator_gainprm[:, 0], SOFT_GAIN * ours.model.actuator_gainprm[:, 0])
    sim.reset("walkready", seed=0)
    ours.reset("walkready", seed=0)
    targets = ours.model.key("walkready").ctrl
    # Softer servos sag further under the same load.
    sag = np.abs(_held(sim, targets, 1.0) - targets[list(WOLFGANG.joint_actuator_index)]).max()
    assert sag > np.abs(_held(ours, targets, 1.0) - targets[list(WOLFGANG.joint_actuator_index)]).max()


def test_legs_only_holds_and_reports_the_missing_joints(variants):
    with pytest.warns(UserWarning, match="lacks 8 joints of wolfgang, held at the standing pose's angles: HeadPan"):
        env = gym.make("upright/WolfgangWalk-v0", **variants["legs_only"])
    ours = gym.make("upright/WolfgangWalk-v0")
    robot = env.unwrapped.robot
    assert robot.missing_joints == ("HeadPan", "HeadTilt", "LShoulderPitch", "LShoulderRoll", "LElbow",
                                    "RShoulderPitch", "RShoulderRoll", "RElbow")
    assert env.observation_space.shape == ours.observation_space.shape
    assert env.action_space.shape == ours.action_space.shape
    obs, _ = env.reset(seed=0)
    held = ours.unwrapped.sim.model.key("walkready").qpos[7:15]
    sim = env.unwrapped.sim
    for _ in range(100):  # random arm and head targets: the missing joints do not follow
        obs, *_ = env.step(env.action_space.sample())
    joint_pos = sim.sensors().joint_pos[:8]
    np.testing.assert_allclose(joint_pos, held, atol=1e-3)
    assert sim.total_mass == pytest.approx(6.095, abs=1e-3)
    assert not sim.unstable


def test_baselines_that_need_missing_joints_refuse(variants):
    robot = with_model(WOLFGANG, variants["legs_only"]["model"])
    for name in ("spline", "keyframe"):
        with pytest.raises(ValueError, match=f"baseline '{name}' \\(getup\\) needs the arms, and the model .* lacks "
                                             "LShoulderPitch"):
            make_controller(name, robot, "getup")
    for name in ("step_adjust", "lipm"):
        make_controller(name, robot, "walk")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="needs the arms"):
            gym.make("upright/WolfgangGetUp-v0", prior="spline", **variants["legs_only"])


@pytest.mark.parametrize("variant", ["knee_ref", "soft", "renamed"])
def test_getup_baseline_runs_on_a_variant(variants, variant):
    """The spline get-up as a prior (zero residual) on the variant: it acts and the episode runs."""
    env = gym.make("upright/WolfgangGetUp-v0", prior="spline", start="prone", max_episode_seconds=1.0,
                   **variants[variant])
    obs, _ = env.reset(seed=3)
    for _ in range(100):
        obs, reward, terminated, truncated, info = env.step(np.zeros(env.action_space.shape, dtype=np.float32))
        if terminated or truncated:
            break
    assert np.all(np.isfinite(obs)) and not info["sim_unstable"]


# ---------------------------------------------------------------------- check-model
def test_check_model_reports_each_variant(variants, capsys):
    reports = {name: check_model(kwargs["model"], "wolfgang", kwargs.get("model_map"))
               for name, kwargs in variants.items()}
    for report in reports.values():
        assert max(len(line) for line in report.splitlines()) <= WIDTH
    legs = reports["legs_only"]
    assert "joints: 12 of 20 present" in legs and "missing (held at walkready): HeadPan" in legs
    assert "walkready  l_hand" in legs and "missing" in legs
    assert "mass: ours 7.500 kg, theirs 6.095 kg (-18.7 %)" in legs
    knee = reports["knee_ref"]
    assert f"LKnee           <- LKnee              zero {KNEE_REF:+.4f} rad (the joint's ref)" in knee
    assert "every sole and hand within 0.1 mm of ours" in knee and "every servo as ours" in knee
    soft = reports["soft"]
    assert "LKnee           kp 60/24 torque 12.9/10.32" in soft
    assert "timestep      2.5 ms (4 per 10 ms cycle)   (ours: 2 ms (5 per 10 ms cycle))" in soft
    renamed = reports["renamed"]
    for joint in FLIPPED:
        assert f"{joint:<15} <- " in renamed and "sign -1 (turns the other way)" in renamed
    assert f"zero {OFFSET_ZERO:+.4f} rad (map)" in renamed
    assert "every servo as ours" in renamed and "every link's mass, CoM and inertia as ours" in renamed
    # The command line prints the same report.
    assert main(["check-model", variants["soft"]["model"], "--robot", "wolfgang"]) == 0
    assert capsys.readouterr().out.strip() == soft


def test_check_model_flags_an_inertia_about_the_joint(tmp_path):
    """A thigh's tensor written about the hip (the parallel-axis term added) is flagged."""
    spec = mujoco.MjSpec.from_file(str(WOLFGANG.mjcf))
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    body = model.body("l_upper_leg").id
    offset = model.body_ipos[body]  # the CoM from the body's origin, which is on the hip pitch axis
    rot = np.empty(9)
    mujoco.mju_quat2Mat(rot, model.body_iquat[body])
    rot = rot.reshape(3, 3)
    tensor = rot @ np.diag(model.body_inertia[body]) @ rot.T
    about_joint = tensor + model.body_mass[body] * (offset @ offset * np.eye(3) - np.outer(offset, offset))
    thigh = spec.body("l_upper_leg")
    thigh.fullinertia = [about_joint[0, 0], about_joint[1, 1], about_joint[2, 2], about_joint[0, 1],
                         about_joint[0, 2], about_joint[1, 2]]
    path = tmp_path / "heavy_thigh.xml"
    path.write_text(spec.to_xml())
    report = check_model(path, "wolfgang")
    row = next(line for line in report.splitlines() if line.startswith("  LHipPitch "))
    assert row.endswith("about joint?")
    assert "MJCF inertias are about the CoM" in report


def test_bad_map_on_the_command_line_is_one_line(tmp_path, variants, capsys):
    path = _write_map(tmp_path, {"sites": {"l_foot": "x"}})
    assert main(["check-model", variants["renamed"]["model"], "--robot", "wolfgang", "--map", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown key 'sites.l_foot'; valid keys of sites: l_sole, r_sole, head_top" in err


def test_export_spec_says_which_joints_were_held(variants):
    """A policy trained on a legs-only model: the spec's joints.required names the held joints."""
    from upright.training.export_spec import joints_spec

    required = joints_spec(with_model(WOLFGANG, variants["legs_only"]["model"]))["required"]
    assert "lacks HeadPan, HeadTilt, LShoulderPitch" in required and "held at the walkready pose's angles" in required
    assert joints_spec(WOLFGANG)["required"].startswith("all:")


def test_walk_baseline_walks_on_the_legs_only_model(variants):
    """step_adjust needs only the legs: on the legs-only model it walks 3 s without falling."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = gym.make("upright/WolfgangWalk-v0", prior="step_adjust", command=(0.15, 0.0, 0.0),
                       max_episode_seconds=3.0, **variants["legs_only"])
    env.reset(seed=0)
    start = env.unwrapped.sim.torso_pose()[0]
    done = False
    while not done:
        _, _, terminated, truncated, info = env.step(np.zeros(env.action_space.shape, dtype=np.float32))
        done = terminated or truncated
    position = env.unwrapped.sim.torso_pose()[0]
    assert not terminated and position[2] > 0.3 and position[0] - start[0] > 0.2


# ---------------------------------------------------------------------- a user's model in every command
def _model_settings(kwargs: dict[str, str]) -> list[str]:
    """The ``--set`` items that load a variant."""
    return [f"{key}={value}" for key, value in kwargs.items()]


def test_eval_runs_on_a_users_model_and_refuses_what_it_lacks(tmp_path, variants, capsys):
    out = tmp_path / "eval"
    assert main(["eval", "--env", "upright/WolfgangWalk-v0", "--policy", "step_adjust", "--episodes", "1", "--out",
                 str(out), "--set", *_model_settings(variants["renamed"]), "max_episode_seconds=1"]) == 0
    result = yaml.safe_load((out / "results.json").read_text())
    assert result["env_kwargs"]["model_map"] == variants["renamed"]["model_map"] and result["episodes"] == 1
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the missing joints' warning
        assert main(["eval", "--env", "upright/WolfgangGetUp-v0", "--policy", "spline", "--episodes", "1", "--out",
                     str(tmp_path / "refused"), "--set", *_model_settings(variants["legs_only"])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "baseline 'spline' (getup) needs the arms" in err


@pytest.fixture(scope="module")
def model_run(tmp_path_factory, variants) -> Path:
    """A tiny residual run (64 PPO steps on the spline prior) trained on the renamed Wolfgang with its map."""
    out = tmp_path_factory.mktemp("runs")
    assert main(["train", "--env", "upright/WolfgangGetUp-v0", "--prior", "spline", "--steps", "64", "--n-envs", "1",
                 "--vec-env", "dummy", "--no-progress", "--eval-every", "0", "--checkpoint-every", "64", "--out",
                 str(out), "--name", "renamed", "--set", *_model_settings(variants["renamed"]),
                 "max_episode_seconds=0.5", "hp.n_steps=64", "hp.batch_size=64", "hp.n_epochs=1",
                 "hp.policy_kwargs.net_arch=16,16"]) == 0
    return out / "WolfgangGetUp-v0" / "renamed"


def test_train_keeps_the_model_in_its_run(model_run, variants):
    """The run's config records the model, and loading the run rebuilds its environment on it."""
    from upright.policies.run import run_env_kwargs

    config = yaml.safe_load((model_run / "config.yml").read_text())
    assert config["env_kwargs"]["model"] == variants["renamed"]["model"]
    kwargs = run_env_kwargs(str(model_run))
    assert kwargs["model_map"] == variants["renamed"]["model_map"]
    env = gym.make("upright/WolfgangGetUp-v0", **kwargs)
    assert env.unwrapped.robot.model == Path(variants["renamed"]["model"])


def test_export_carries_the_model(model_run, variants, tmp_path):
    """The export's spec names the model the policy was trained on, and its checks (the graph
    against the policy, the prior's test vectors) ran on it."""
    out = tmp_path / "export"
    assert main(["export", str(model_run), "--out", str(out)]) == 0
    spec = yaml.safe_load((out / "policy.yml").read_text())
    assert spec["environment"]["kwargs"]["model"] == variants["renamed"]["model"]
    assert spec["training"]["env_kwargs"]["model_map"] == variants["renamed"]["model_map"]
    assert (out / "prior_vectors.npz").stat().st_size > 0


def test_optimize_runs_its_trials_on_a_users_model(tmp_path, variants, capsys):
    settings = _model_settings(variants["legs_only"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the missing joints' warning
        assert main(["optimize", "--controller", "step_adjust", "--robot", "wolfgang", "--sampler", "random",
                     "--trials", "1", "--repetitions", "1", "--out", str(tmp_path / "walk"), "--set", *settings,
                     "max_episode_seconds=0.5"]) == 0
        assert f"model={variants['legs_only']['model']}" in (tmp_path / "walk" / "best_params.yaml").read_text()
        capsys.readouterr()
        assert main(["optimize", "--controller", "spline", "--robot", "wolfgang", "--trials", "1", "--out",
                     str(tmp_path / "getup"), "--set", *settings]) == 2
    assert "baseline 'spline' (getup) needs the arms" in capsys.readouterr().err


def test_report_evaluates_on_a_users_model(tmp_path, variants, capsys):
    """The report's evaluation on the legs-only model: the walks run on it, the get-up baselines and
    residuals that need the arms are skipped in one line; a model needs one robot."""
    from upright.eval.report import evaluate_all

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the missing joints' warning
        results = evaluate_all(tmp_path, episodes=1, workers=1, episode_seconds=0.2, robots=("wolfgang",),
                               settings=variants["legs_only"])
    assert {r["env"] for r in results} == {"upright/WolfgangGetUp-v0", "upright/WolfgangWalk-v0"}
    assert all(r["env_kwargs"]["model"] == variants["legs_only"]["model"] for r in results)
    policies = {r["policy"] for r in results}
    assert {"step_adjust", "lipm", "zero"} <= policies and not {"spline", "keyframe"} & policies
    assert "cells whose baseline or prior needs joints the model lacks" in capsys.readouterr().out
    assert main(["report", "--set", f"model={variants['soft']['model']}", "--out", str(tmp_path / "both")]) == 2
    assert "is a model of one robot: report on that robot alone (--robot" in capsys.readouterr().err


@pytest.mark.slow
def test_the_whole_report_on_a_users_model(tmp_path, variants):
    """``upright report --robot wolfgang --set model=...``: its page opens with the model, and the
    robot's section with check-model's comparison."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the missing joints' warning
        assert main(["report", "--robot", "wolfgang", "--set", *_model_settings(variants["legs_only"]), "--out",
                     str(tmp_path), "--episodes", "1", "--episode-seconds", "0.3", "--bench-steps", "5"]) == 0
    page = (tmp_path / "report.md").read_text()
    assert f"Every evaluation, check and picture of wolfgang on the model {variants['legs_only']['model']}" in page
    assert "joints: 12 of 20 present" in page and "## nao" not in page


def test_the_model_variants_experiment_runs_each_row_on_each_variant(tmp_path, capsys):
    """``upright experiment model-variants`` (one short episode per cell): the walks run on the
    legs-only NAO, the get-ups and the shipped get-up are not run there, saying why."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the missing joints' warning
        assert main(["experiment", "model-variants", "--episodes", "1", "--out", str(tmp_path), "--set", "robots=nao",
                     "variants=legs_only", "max_episode_seconds=0.3"]) == 0
    done, total = last_bar(capsys.readouterr().err, "model-variants")
    assert done == total > 0  # the bar's total: the cells run, the refused ones left out
    page = (tmp_path / "results.md").read_text()
    assert "| NaoGetUp keyframe | not run: needs the arms |" in page
    assert "| NaoGetUp nao-getup-residual-keyframe | not run: its prior keyframe needs the arms |" in page
    walks = [line for line in page.splitlines() if line.startswith("| NaoWalk ") and line.count("|") == 3]
    assert len(walks) == 2 and all(" | 1/1, " in line for line in walks)
    models = yaml.safe_load((tmp_path / "results.json").read_text())["data"]["models"]
    assert models["nao"]["legs_only"]["model"] == str(tmp_path / "models" / "nao" / "legs_only.xml")
