"""``upright export``: the ONNX graph against the SB3 policy it comes from (real models, real
episodes), its spec, the torch-free runtime (``onnx:DIR``), CompiledNN's operator set, the shipped
exports and the refusals."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import onnx
import pytest
import yaml
from onnx import numpy_helper

import upright
from upright.cli import main
from upright.envs.sensors import Sensors, observation_from_sensors
from upright.policies.onnx_policy import (EXAMPLES_FILE, GRAPH_FILE, SPEC_FILE, SUMS_FILE, ExportedActor, OnnxPolicy,
                                          export_env, sha256_bytes)
from upright.policies.registry import load_policy
from upright.policies.run import load_run_policy, zoo_names
from upright.training.export import (COMPILED_NN_OPERATORS, EXAMPLE_TOLERANCE, HELD_OUT_SEED, build_export, record,
                                     zoo_export_dir)
from upright.training.export_spec import PRIOR_PYTHON_TOLERANCE, PRIOR_VECTORS_FILE, replay_prior_vectors

ENV = "upright/WolfgangGetUp-v0"
#: A PPO run of 128 steps on the spline prior with 16-unit layers; the actor's last layer is not
#: zeroed, so the graph has non-trivial weights everywhere. 1 s episodes keep the examples short.
TINY_TRAIN = ["train", "--env", ENV, "--prior", "spline", "--steps", "128", "--n-envs", "2", "--no-progress",
              "--eval-every", "0", "--checkpoint-every", "128", "--set", "max_episode_seconds=1", "hp.n_steps=64",
              "hp.batch_size=64", "hp.n_epochs=1", "hp.policy_kwargs.net_arch=16,16", "hp.zero_init=false"]
MAX_EXPORT_BYTES = 1024 * 1024


def _train(tmp: Path, activation: str) -> Path:
    assert main([*TINY_TRAIN, f"hp.policy_kwargs.activation_fn={activation}", "--out", str(tmp / "runs"),
                 "--name", activation]) == 0
    return tmp / "runs" / "WolfgangGetUp-v0" / activation


@pytest.fixture(scope="module")
def relu_run(tmp_path_factory) -> Path:
    return _train(tmp_path_factory.mktemp("relu"), "relu")


@pytest.fixture(scope="module")
def tanh_run(tmp_path_factory) -> Path:
    return _train(tmp_path_factory.mktemp("tanh"), "tanh")


@pytest.fixture(scope="module")
def relu_export(relu_run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("exports") / "relu"
    assert main(["export", str(relu_run), "--out", str(out)]) == 0
    return out


def _operators(directory: Path) -> set[str]:
    return {node.op_type for node in onnx.load(directory / GRAPH_FILE).graph.node}


def _examples(directory: Path) -> dict[str, np.ndarray]:
    with np.load(directory / EXAMPLES_FILE) as data:
        return dict(data)


def _sb3_actions(name: str, observations: np.ndarray) -> np.ndarray:
    policy = load_run_policy(name)
    return np.stack([policy.act(observation, {}) for observation in observations])


def _no_leftovers(parent: Path) -> list[str]:
    return [p.name for p in parent.iterdir() if p.name.startswith(".")]


def test_export_writes_graph_spec_and_examples(relu_run, relu_export):
    graph = onnx.load(relu_export / GRAPH_FILE)
    onnx.checker.check_model(graph, full_check=True)
    assert graph.opset_import[0].version == 13 and graph.ir_version == 7
    assert _operators(relu_export) == {"Sub", "Mul", "Clip", "Gemm", "Relu"}
    spec = yaml.safe_load((relu_export / SPEC_FILE).read_text())
    assert spec["model"]["sha256"] == sha256_bytes((relu_export / GRAPH_FILE).read_bytes())
    assert spec["robot"] == "wolfgang" and spec["task"] == "getup"
    assert spec["timing"]["control_period_s"] == 0.01 and spec["timing"]["actuation_delay_cycles"] == 1
    assert spec["environment"] == {**spec["environment"], "id": ENV,
                                   "kwargs": {"max_episode_seconds": 1, "prior": "spline"}}
    robot = upright.get_robot("wolfgang")
    layout = spec["observation"]["layout"]
    assert [row["index"] for row in layout] == list(range(spec["observation"]["size"])) and len(layout) == 100
    assert [row["name"] for row in layout if row["prior_target"]] == [f"prior_target.{a}" for a in robot.actuator_names]
    action = spec["action"]
    assert action["kind"] == "residual" and action["residual_scale"] == 0.2 and action["clip"] == [-1.0, 1.0]
    assert [joint["actuator"] for joint in action["joints"]] == list(robot.actuator_names)
    assert spec["prior"]["name"] == "spline" and spec["prior"]["params"]["trunk_height"] > 0
    assert spec["model"]["layers"] == [{"in": 100, "out": 16, "activation": "Relu"},
                                       {"in": 16, "out": 16, "activation": "Relu"},
                                       {"in": 16, "out": 20, "activation": None}]
    examples = _examples(relu_export)
    assert examples["observation"].shape == (spec["examples"]["count"], 100) and examples["action"].shape[1] == 20
    assert set(examples["seed"]) <= {HELD_OUT_SEED, HELD_OUT_SEED + 1}
    actor = ExportedActor(relu_export)
    np.testing.assert_allclose(actor(examples["observation"]), examples["action"], rtol=0, atol=1e-6)
    sb3 = _sb3_actions(str(relu_run), examples["observation"])
    assert np.abs(sb3).max() > 1e-3  # a graph of zeros would pass the parity check trivially
    np.testing.assert_allclose(examples["action"], sb3, rtol=0, atol=1e-5)
    assert sum(p.stat().st_size for p in relu_export.iterdir()) < MAX_EXPORT_BYTES
    assert {"joints", "kinematics_check", "prior_vectors"} <= set(spec) and "semantics" in spec["observation"]
    assert spec["observation"]["semantics"]["trained_with"]["joint_velocity"] == "exact"  # lab: no conditions given


def test_prior_vectors_are_the_examples_episodes_and_reproduce(relu_export):
    """``prior_vectors.npz`` holds the episodes the examples come from, from their first cycle: the
    examples' observations are the recorded Sensors and prior targets of their step (float32), and
    a fresh prior built from the spec answers the recorded inputs with the recorded targets."""
    spec = yaml.safe_load((relu_export / SPEC_FILE).read_text())
    names = [row["name"] for row in spec["observation"]["layout"]]
    columns = {block: [i for i, name in enumerate(names) if name.startswith(f"{block}.")]
               for block in ("joint_pos", "joint_vel", "joint_target", "foot_pressure", "prior_target")}
    replayed = replay_prior_vectors(relu_export)
    assert [episode.seed for episode, _ in replayed] == [HELD_OUT_SEED, HELD_OUT_SEED + 1]
    for episode, targets in replayed:
        np.testing.assert_allclose(targets, episode.targets, rtol=0, atol=PRIOR_PYTHON_TOLERANCE)
        assert episode.sensors["time"][0] == 0.0 and episode.cycles == 101  # reset and 1 s of 10 ms steps
    examples = _examples(relu_export)
    for observation, seed, step in zip(examples["observation"], examples["seed"], examples["step"]):
        episode = replayed[int(seed) - HELD_OUT_SEED][0]
        recorded = {**{block: episode.sensors[block][step] for block in columns if block != "prior_target"},
                    "prior_target": episode.targets[step]}
        for block, index in columns.items():
            np.testing.assert_array_equal(observation[index], recorded[block].astype(np.float32), err_msg=block)


def test_compiled_nn_export_uses_only_compiled_nn_operators(relu_run, relu_export, tmp_path, capsys):
    """The graph of ``--ops compiled-nn``; the export shows one progress bar whose total is the
    episodes it records (the examples' and the prior vectors'), and no bar of its own runs."""
    from conftest import last_bar

    out = tmp_path / "compiled"
    capsys.readouterr()
    assert main(["export", str(relu_run), "--out", str(out), "--ops", "compiled-nn"]) == 0
    err = capsys.readouterr().err
    assert last_bar(err, f"export {relu_run}") == (4, 4) and " · " not in err
    operators = _operators(out)
    assert operators <= COMPILED_NN_OPERATORS and {"MatMul", "Add", "Relu"} <= operators, operators
    assert yaml.safe_load((out / SPEC_FILE).read_text())["model"]["ops"] == "compiled-nn"
    observations = _examples(relu_export)["observation"]
    np.testing.assert_allclose(ExportedActor(out)(observations), ExportedActor(relu_export)(observations),
                               rtol=0, atol=1e-6)


def test_compiled_nn_refuses_a_tanh_actor(tanh_run, tmp_path, capsys):
    out = tmp_path / "tanh"
    assert main(["export", str(tanh_run), "--out", str(out), "--ops", "compiled-nn"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "Tanh" in error and "activation_fn=relu" in error, error
    assert not out.exists() and _no_leftovers(tmp_path) == []
    assert main(["export", str(tanh_run), "--out", str(out)]) == 0  # the default operators have Tanh
    assert "Tanh" in _operators(out)


@pytest.mark.parametrize("policy, message", [
    ("keyframe", "'keyframe' is a built-in, classical or hand-designed policy: there is no trained network to export"),
    ("zero", "'zero' is a built-in, classical or hand-designed policy: there is no trained network to export"),
    ("zoo:nonexistent", "unknown zoo policy 'zoo:nonexistent'"),
    ("{run}/model.zip", "is no run folder of upright train, .zip file of one or zoo:NAME"),
])
def test_nothing_to_export_is_refused(policy, message, relu_run, tmp_path, capsys):
    """Built-ins, baselines, unknown names and an SB3 model outside its run folder (here a copy of
    a run's model.zip: a network, but no environment or normalisation to write the spec from)."""
    (tmp_path / "plain").mkdir()
    shutil.copy(relu_run / "model.zip", tmp_path / "plain" / "model.zip")
    assert main(["export", policy.format(run=tmp_path / "plain"), "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip()
    assert message in error and len(error.splitlines()) == 1, error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]


def test_a_run_without_its_normaliser_is_refused(relu_run, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(relu_run, run)
    (run / "vecnormalize.pkl").unlink()
    assert main(["export", str(run), "--out", str(tmp_path / "out")]) == 2
    assert "vecnormalize.pkl is missing" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_failed_export_leaves_the_old_one(relu_run, relu_export, tmp_path, monkeypatch, capsys):
    out = tmp_path / "export"
    shutil.copytree(relu_export, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def fail(*args, **kwargs):
        raise ValueError("recording failed")

    monkeypatch.setattr("upright.training.export.record", fail)
    assert main(["export", str(relu_run), "--out", str(out), "--ops", "compiled-nn"]) == 2
    assert "recording failed" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before and _no_leftovers(tmp_path) == []


def test_an_out_folder_that_is_no_export_is_kept(relu_run, tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    assert main(["export", str(relu_run), "--out", str(tmp_path / "mine")]) == 2
    assert "exists and is no export folder" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]


def test_the_runtime_refuses_a_wrong_observation(relu_export):
    actor = ExportedActor(relu_export)
    with pytest.raises(ValueError, match=re.escape("observation must have shape (100,) or (batch, 100)")):
        actor(np.zeros(99, dtype=np.float32))
    env = gym.make("upright/WolfgangGetUp-v0")  # no prior: 80 observations, not 100
    with pytest.raises(ValueError, match="takes observation size 100, the environment has shape"):
        OnnxPolicy(f"onnx:{relu_export}").reset(env, 0)


def test_the_runtime_refuses_a_graph_of_another_spec(relu_export, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(relu_export, copy)
    graph = onnx.load(copy / GRAPH_FILE)
    graph.doc_string = "changed"
    onnx.save(graph, copy / GRAPH_FILE)
    with pytest.raises(ValueError, match="does not match its spec"):
        ExportedActor(copy)


def test_the_runtime_needs_neither_torch_nor_sb3(relu_export):
    """In a fresh interpreter: load ``onnx:DIR`` through the registry and act in its environment."""
    script = f"""
import sys
import gymnasium as gym
import upright
from upright.policies.onnx_policy import export_env
from upright.policies.registry import load_policy
name = "onnx:{relu_export}"
env_id, kwargs = export_env(name)
env = gym.make(env_id, **kwargs)
policy = load_policy(name)
observation, info = env.reset(seed=1)
policy.reset(env, 1)
for _ in range(5):
    observation, *_, info = env.step(policy.act(observation, info))
loaded = sorted(m for m in ("torch", "stable_baselines3") if m in sys.modules)
print("loaded:", loaded)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "loaded: []" in result.stdout, result.stdout


def test_eval_runs_an_export_in_the_environment_of_its_spec(relu_export, tmp_path):
    out = tmp_path / "eval"
    assert main(["eval", "--env", ENV, "--policy", f"onnx:{relu_export}", "--episodes", "1", "--out", str(out),
                 "--set", "max_episode_seconds=0.3"]) == 0
    result = json.loads((out / "results.json").read_text())
    assert result["env_kwargs"] == {"max_episode_seconds": 0.3, "prior": "spline"} and result["episodes"] == 1
    assert main(["eval", "--env", ENV, "--policy", f"onnx:{relu_export}", "--set", "prior=keyframe"]) == 2


@pytest.mark.parametrize("env_id, kwargs", [
    ("upright/NaoGetUp-v0", {"prior": "keyframe", "start": "prone"}),
    ("upright/NaoWalk-v0", {"prior": "step_adjust", "command": (0.1, 0.0, 0.0), "observe_odometry": True,
                            "observe_gait": True}),
])
def test_observation_from_sensors_is_the_environments_observation(env_id, kwargs):
    """The robot-side function gives the environment's observation to the bit, and the layout of
    the spec names what each entry is."""
    from upright.training.export import observation_layout

    env = gym.make(env_id, conditions="competition", **kwargs)
    base = env.unwrapped
    observation, info = env.reset(seed=3)
    layout = observation_layout(base)
    for _ in range(10):
        observation, *_, info = env.step(env.action_space.sample() * 0.1)
        sensors: Sensors = info["sensors"]
        task_block = base.residual.task_block(base._extra_observation())  # the task's, then the residual's
        np.testing.assert_array_equal(observation, observation_from_sensors(sensors, task_block, info["prior_targets"]))
        for row in layout:
            if match := re.fullmatch(r"Sensors\.(\w+)\[(\d+)\]", row["source"]):
                assert observation[row["index"]] == np.float32(getattr(sensors, match[1])[int(match[2])]), row
            elif row["prior_target"]:
                k = int(re.search(r"\[(\d+)\]", row["source"])[1])
                assert observation[row["index"]] == np.float32(info["prior_targets"][k]), row
    if base.task == "walk":
        names, slices = [row["name"] for row in layout], base.observation_slices()
        assert names[slices["command"]] == ["command.vx", "command.vy", "command.yaw_rate"]
        assert all(name.startswith("odometry.") for name in names[slices["odometry"]])
        assert names[slices["gait"]] == ["gait.support", "gait.phase"]
        np.testing.assert_array_equal(observation[slices["gait"]], np.array(base.prior.gait, dtype=np.float32))
        np.testing.assert_array_equal(observation[slices["command"]], base.command.astype(np.float32))


@pytest.mark.parametrize("name", zoo_names())
def test_shipped_export_matches_what_the_command_writes(name):
    """The committed ``policies/zoo/NAME/onnx/`` is what ``upright export --zoo`` writes now: the
    same operators, weights and spec (the examples' and prior vectors' episodes are not rerun
    here), and each committed file is intact and small (the prior vectors:
    ``tests/test_export_spec.py``)."""
    directory = zoo_export_dir(name)
    export = build_export(f"zoo:{name}")
    committed = onnx.load(directory / GRAPH_FILE)
    assert [(n.op_type, list(n.input), list(n.output), list(n.attribute)) for n in committed.graph.node] == \
        [(n.op_type, list(n.input), list(n.output), list(n.attribute)) for n in export.graph.graph.node]
    weights = {t.name: numpy_helper.to_array(t) for t in committed.graph.initializer}
    fresh = {t.name: numpy_helper.to_array(t) for t in export.graph.graph.initializer}
    assert weights.keys() == fresh.keys() and all(np.array_equal(weights[k], fresh[k]) for k in weights)
    spec = yaml.safe_load((directory / SPEC_FILE).read_text())
    assert spec["model"].pop("sha256") == sha256_bytes((directory / GRAPH_FILE).read_bytes())
    assert spec == {**export.spec, "model": {k: v for k, v in export.spec["model"].items() if k != "sha256"}}
    files = {p.name: p.stat().st_size for p in directory.iterdir()}
    assert set(files) == {GRAPH_FILE, SPEC_FILE, EXAMPLES_FILE, PRIOR_VECTORS_FILE, SUMS_FILE}
    assert sum(size for file, size in files.items() if file != PRIOR_VECTORS_FILE) < MAX_EXPORT_BYTES


@pytest.mark.parametrize("name", zoo_names())
def test_shipped_spec_rebuilds_the_prior(name):
    """The prior's parameters in the spec rebuild the controller the environment of the spec runs."""
    from upright.baselines import make_controller

    spec = yaml.safe_load((zoo_export_dir(name) / SPEC_FILE).read_text())
    env_id, kwargs = export_env(f"onnx:{zoo_export_dir(name)}")
    prior = make_controller(spec["prior"]["name"], spec["robot"], spec["task"], params=spec["prior"]["params"])
    assert prior.params == gym.make(env_id, **kwargs).unwrapped.prior.params


@pytest.mark.parametrize("name", zoo_names())
def test_shipped_export_acts_as_its_sb3_policy(name):
    """On the committed examples (real episodes, held-out seeds) the committed graph gives the
    committed actions within 1e-6 and the SB3 policy's within 1e-5; so it does on every
    observation of a fresh 2 s episode on the next held-out seed, under the policy's conditions."""
    directory = zoo_export_dir(name)
    examples = _examples(directory)
    actor = ExportedActor(directory)
    np.testing.assert_allclose(actor(examples["observation"]), examples["action"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(examples["action"], _sb3_actions(f"zoo:{name}", examples["observation"]), rtol=0,
                               atol=EXAMPLE_TOLERANCE)
    env_id, kwargs = export_env(f"onnx:{directory}")
    recorded = record(load_policy(f"zoo:{name}"), env_id, {**kwargs, "max_episode_seconds": 2.0}, 1,
                      seed=HELD_OUT_SEED + 2)
    observations = np.stack(recorded.observations)
    assert len(observations) >= 100
    onnx_actions = np.stack([actor(observation) for observation in observations])
    np.testing.assert_allclose(onnx_actions, np.stack(recorded.actions), rtol=0, atol=EXAMPLE_TOLERANCE)
