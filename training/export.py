"""``upright export``: a trained policy as an ONNX graph for robot-side inference, with the spec a
robot-side implementer follows and example inputs and outputs.

What is written (``docs/export.md`` describes the files for the robot side):

- ``policy.onnx``: input ``observation`` (float32 ``[batch, n]``, the observation exactly as
  ``env.step`` returns it), output ``action`` (float32 ``[batch, size]``, the spec's action size,
  exactly what the policy's deterministic ``act`` returns). Inside: SB3's VecNormalize as it normalises
  (``clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)``, the mean held as a float32
  pair ``hi + lo`` so that centring keeps float64's accuracy where a mean is large against its
  spread), the actor (its Linear layers and activations; the Gaussian's mean is the deterministic
  action) and SB3's clip of the action to the action space.
- ``policy.yml``: the spec (:func:`build_export`): robot, task, the timing (control period, the
  actuation delay the policy was trained with, the order of calls), the joints and kinematic check
  values, the observation layout index by index with what each block is in the simulator and on
  the robot, the action (what it adds to, residual scale, clip, joint order), the prior and the
  exact parameters it ran with, its test vectors, the training and evaluation conditions and the
  held-out numbers of the manifest, the package version and the graph's SHA-256
  (:mod:`~upright.training.export_spec` writes the robot-side sections).
- ``example_io.npz``: observations of real episodes on held-out seeds with the actions the graph
  gives them (``observation``, ``action``, and the ``seed`` and ``step`` each observation came from).
- ``prior_vectors.npz`` (a policy with a prior): the same episodes whole, every cycle's inputs of
  the prior and its targets, which a port of the prior must reproduce.

The graph is built with ``onnx.helper`` from the actor's weights rather than traced with
``torch.onnx``: the installed torch's default exporter needs ``onnxscript`` and its legacy
TorchScript exporter is deprecated for removal, and building the graph ourselves writes exactly the
operators asked for (``--ops compiled-nn``: MatMul + Add instead of Gemm, no Tanh) without a rewrite
pass. Opset :data:`OPSET` and IR version :data:`IR_VERSION`: every operator written has had its
present float32 definition since opset 13 (Clip's bounds as inputs since 11), and the lowest such
opset is the one the most, and the oldest, robot-side runtimes read.

The export is assembled in a hidden temporary folder beside ``--out`` and renamed into place
(:func:`~upright.policies.folders.replace_folder`), so a failed or killed export leaves the old
folder (or none), never half of one; a kill between moving the old folder aside and renaming the
new one into place leaves the old one as ``.NAME.PID.old``, which the next export puts back
before it starts (:func:`~upright.policies.folders.recover_folder`).
"""

from __future__ import annotations

import dataclasses
import itertools
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import yaml

from upright.envs.base import UprightEnv
from upright.envs.residual import StepResidual, TempoResidual
from upright.eval.runner import overall_progress, run_episodes
from upright.eval.tables import jsonable
from upright.policies.base import Policy
from upright.policies.folders import recover_folder, replace_folder, temporary_folder
from upright.policies.onnx_policy import (EXAMPLES_FILE, GRAPH_FILE, INPUT_NAME, OUTPUT_NAME, SPEC_FILE, SUMS_FILE,
                                          sha256_bytes, sums_text)
from upright.policies.registry import policy_names
from upright.policies.run import (ZOO_PREFIX, is_run_policy, load_run_policy, run_env_kwargs, run_model, user_zoo,
                                  zoo_entry, zoo_names)
from upright.policies.run_folder import load_run_config, read_manifest
from upright.policies.sb3 import ModelPolicy
from upright.training.export_spec import (PRIOR_VECTORS_FILE, joints_spec, kinematics_check, observation_semantics,
                                          prior_cycle_inputs, prior_vectors_spec, record_prior_vectors, timing_spec,
                                          training_conditions)

if TYPE_CHECKING:
    import onnx

#: The installed package's version, recorded in every export (the graph's producer, the spec).
UPRIGHT_VERSION = version("upright")
#: The ONNX operator set version and IR version written (see the module docstring).
OPSET = 13
IR_VERSION = 7
#: The operator sets ``--ops`` chooses: ``default`` (Gemm layers, any activation ONNX has) and
#: ``compiled-nn`` (only what B-Human's CompiledNN reads: MatMul + Add layers, ReLU).
OPS = ("default", "compiled-nn")
#: The operators B-Human's CompiledNN ONNX importer supports.
COMPILED_NN_OPERATORS = frozenset({"Add", "BatchNormalization", "Cast", "Clip", "Concat", "Conv", "Gather", "MatMul",
                                   "MaxPool", "Mul", "Pad", "Relu", "Reshape", "Shape", "Slice", "Sub", "Transpose"})
#: First seed of the episodes the examples come from: held out from training (episode seeds in
#: [0, 2^31)) and model selection, the seeds of the manifests' evaluation (``trained-residuals``).
HELD_OUT_SEED = 3_000_000_000
#: Episodes recorded for ``example_io.npz`` (and whole for ``prior_vectors.npz``) and the observations
#: kept, evenly spaced over their steps.
EXAMPLE_EPISODES = 2
EXAMPLES = 256
#: Largest difference (normalised action units) a robot-side implementation of the graph may have
#: from ``example_io.npz``'s actions: float32 sums in another order differ by a few units of the
#: last place, far below this.
EXAMPLE_TOLERANCE = 1e-5
#: The torch activation classes of an SB3 actor and the ONNX operator of each.
ACTIVATIONS = {"Tanh": "Tanh", "ReLU": "Relu", "ELU": "Elu", "LeakyReLU": "LeakyRelu"}


@dataclass(frozen=True)
class Dense:
    """One Linear layer of the actor: ``activation(weight @ x + bias)``; ``weight`` is
    ``[out, in]`` as torch stores it, ``activation`` the ONNX operator (None: linear), ``alpha``
    the parameter of Elu (alpha) and LeakyRelu (negative slope)."""

    weight: np.ndarray
    bias: np.ndarray
    activation: str | None
    alpha: float | None = None


def actor_layers(model: Any) -> list[Dense]:
    """The deterministic actor of the SB3 ``model``, layer by layer: the policy network
    (``mlp_extractor.policy_net``) and the action network, whose output is the Gaussian's mean,
    the deterministic action. ValueError for a model whose deterministic action is not that
    (SAC/TD3 actors, squashed outputs, non-flat observations, other layers)."""
    import torch  # torch: only when a model is built
    from stable_baselines3.common.distributions import DiagGaussianDistribution, StateDependentNoiseDistribution
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.common.torch_layers import FlattenExtractor

    policy = model.policy
    if not isinstance(policy, ActorCriticPolicy):
        raise ValueError(f"export supports on-policy actors (PPO, A2C), not {type(model).__name__}'s "
                         f"{type(policy).__name__}")
    if not isinstance(policy.pi_features_extractor, FlattenExtractor) or policy.squash_output or not isinstance(
            policy.action_dist, (DiagGaussianDistribution, StateDependentNoiseDistribution)):
        raise ValueError("export supports actors with flat observations and an unsquashed Gaussian action "
                         f"(got {type(policy.pi_features_extractor).__name__}, squash_output {policy.squash_output}, "
                         f"{type(policy.action_dist).__name__})")
    layers: list[Dense] = []
    for module in [*policy.mlp_extractor.policy_net, policy.action_net]:
        kind = type(module).__name__
        if isinstance(module, torch.nn.Linear):
            layers.append(Dense(module.weight.detach().numpy().astype(np.float32),
                                module.bias.detach().numpy().astype(np.float32), None))
        elif kind in ACTIVATIONS and layers and layers[-1].activation is None:
            alpha = getattr(module, "alpha", getattr(module, "negative_slope", None))
            layers[-1] = Dense(layers[-1].weight, layers[-1].bias, ACTIVATIONS[kind],
                               None if alpha is None else float(alpha))
        else:
            raise ValueError(f"export cannot write the actor's {kind} layer; supported: Linear and "
                             f"{', '.join(ACTIVATIONS)} activations")
    return layers


def check_operators(layers: list[Dense], ops: str) -> None:
    """ValueError naming ``ops`` when it is unknown or cannot express an activation of ``layers``."""
    if ops not in OPS:
        raise ValueError(f"unknown --ops {ops!r}; valid: {', '.join(OPS)}")
    if ops == "compiled-nn":
        unsupported = sorted({layer.activation for layer in layers if layer.activation not in (None, "Relu")})
        if unsupported:
            raise ValueError(f"--ops compiled-nn cannot express the actor's {', '.join(unsupported)} activation "
                             "(CompiledNN reads no such operator): train the policy with "
                             "--set hp.policy_kwargs.activation_fn=relu")


def build_graph(layers: list[Dense], normalizer: Any, action_space: gym.spaces.Box, ops: str,
                name: str) -> onnx.ModelProto:
    """The ONNX model of observation normalisation (``normalizer``, a VecNormalize that normalises
    observations, or None), ``layers`` and the clip to ``action_space``, with the operators of
    ``ops`` (:data:`OPS`), checked by ``onnx.checker``."""
    import onnx  # onnx: only when exporting
    from onnx import TensorProto, helper, numpy_helper

    check_operators(layers, ops)
    low, high = np.unique(action_space.low), np.unique(action_space.high)
    if low.size != 1 or high.size != 1:
        raise ValueError(f"export needs one bound for every action (ONNX Clip), got {action_space}")
    initializers: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def constant(tensor: str, value: Any) -> str:
        initializers.append(numpy_helper.from_array(np.asarray(value, dtype=np.float32), tensor))
        return tensor

    def node(op: str, inputs: list[str], output: str, **attributes: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attributes))
        return output

    x = INPUT_NAME
    size = int(layers[0].weight.shape[1])  # the actor's inputs: an asymmetric critic's privileged entries are not
    if normalizer is not None:
        mean = np.asarray(normalizer.obs_rms.mean, dtype=np.float64)[:size]
        mean_hi = mean.astype(np.float32)
        scale = 1.0 / np.sqrt(np.asarray(normalizer.obs_rms.var, dtype=np.float64)[:size] + normalizer.epsilon)
        x = node("Sub", [x, constant("obs_mean_hi", mean_hi)], "obs_centred_hi")
        x = node("Sub", [x, constant("obs_mean_lo", mean - mean_hi)], "obs_centred")
        x = node("Mul", [x, constant("obs_scale", scale)], "obs_scaled")
        bounds = [constant("obs_clip_low", -normalizer.clip_obs), constant("obs_clip_high", normalizer.clip_obs)]
        x = node("Clip", [x, *bounds], "obs_normalised")
    for i, layer in enumerate(layers):
        if ops == "compiled-nn":
            x = node("MatMul", [x, constant(f"layer{i}.weight_t", layer.weight.T)], f"layer{i}.matmul")
            x = node("Add", [x, constant(f"layer{i}.bias", layer.bias)], f"layer{i}.linear")
        else:
            x = node("Gemm", [x, constant(f"layer{i}.weight", layer.weight), constant(f"layer{i}.bias", layer.bias)],
                     f"layer{i}.linear", transB=1)
        if layer.activation is not None:
            attributes = {} if layer.alpha is None else {"alpha": layer.alpha}
            x = node(layer.activation, [x], f"layer{i}.{layer.activation.lower()}", **attributes)
    node("Clip", [x, constant("action_low", low[0]), constant("action_high", high[0])], OUTPUT_NAME)
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, ["batch", size])],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch", int(layers[-1].weight.shape[0])])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION,
                              producer_name="upright", producer_version=UPRIGHT_VERSION,
                              doc_string=f"{name}: observation in, deterministic action out (upright export)")
    onnx.checker.check_model(model, full_check=True)
    return model


def observation_layout(env: UprightEnv) -> list[dict[str, Any]]:
    """The observation of ``env`` index by index: ``name``, ``quantity``, ``unit``, ``frame``,
    ``source`` (the :class:`~upright.envs.sensors.Sensors` field and index it is, or what it is
    computed from) and ``prior_target`` (whether it is one of the prior's targets), in the order of
    :func:`~upright.envs.sensors.observation_from_sensors`; ValueError when the rows leave the
    blocks of :meth:`~upright.envs.base.UprightEnv.observation_slices`."""
    robot = env.robot
    slices = env.observation_slices()
    imu = "IMU frame (fixed to the torso: x forward, y left, z up)"
    rows: list[dict[str, Any]] = []

    def add(name: str, quantity: str, unit: str, frame: str, source: str, prior_target: bool = False) -> None:
        rows.append({"index": len(rows), "name": name, "quantity": quantity, "unit": unit, "frame": frame,
                     "source": source, "prior_target": prior_target})

    for k, joint in enumerate(robot.joint_names):
        add(f"joint_pos.{joint}", "measured joint angle", "rad", f"joint {joint}", f"Sensors.joint_pos[{k}]")
    for k, joint in enumerate(robot.joint_names):
        add(f"joint_vel.{joint}", "joint angular velocity", "rad/s", f"joint {joint}", f"Sensors.joint_vel[{k}]")
    for k, actuator in enumerate(robot.actuator_names):
        add(f"joint_target.{actuator}", "joint target commanded last cycle", "rad", f"joint {actuator}",
            f"Sensors.joint_target[{k}]")
    for k, axis in enumerate("xyz"):
        add(f"gyro.{axis}", "angular velocity", "rad/s", imu, f"Sensors.gyro[{k}]")
    for k, axis in enumerate("xyz"):
        add(f"accel.{axis}", "specific force (+9.81 on z standing still upright)", "m/s^2", imu, f"Sensors.accel[{k}]")
    gravity = ("-2(x z - w y)", "-2(y z + w x)", "-(1 - 2(x^2 + y^2))")
    for axis, formula in zip("xyz", gravity):
        add(f"gravity.{axis}", "unit gravity direction", "1", imu, f"Sensors.quat (w, x, y, z): {formula}")
    for k, angle in ((0, "pitch"), (1, "roll")):
        add(f"fused.{angle}", f"fused {angle} of the IMU orientation (Allgeuer & Behnke 2015)", "rad",
            "torso against gravity", f"Sensors.fused[{k}]")
    add("fused.hemisphere", "hemisphere: +1 torso z axis up, -1 upside down", "1", "torso against gravity",
        "Sensors.fused[3]")
    for k, sensor in enumerate(robot.pressure_sensors):
        add(f"foot_pressure.{sensor}", "normal force of a foot pressure sensor", "N", "sole",
            f"Sensors.foot_pressure[{k}]")
    if "command" in slices:
        heading = "heading frame (x forward along the torso's yaw, z up)"
        velocity = (("vx", "m/s"), ("vy", "m/s"), ("yaw_rate", "rad/s"))
        for k, (component, unit) in enumerate(velocity):
            add(f"command.{component}", "commanded velocity", unit, heading, f"walk command[{k}] (not a sensor)")
        if "odometry" in slices:
            for block, quantity in (("measured", "velocity the prior measured over its last step cycle"),
                                    ("correction", "speed correction the prior adds to the command")):
                for k, (component, unit) in enumerate(velocity):
                    add(f"odometry.{block}.{component}", quantity, unit, heading, f"prior.feedback.{block}[{k}]")
        if "gait" in slices:
            add("gait.support", "the prior's support foot: +1 left, -1 right, 0 on both feet", "1", "robot",
                "prior.gait[0]")
            add("gait.phase", "fraction of the prior's current step that has passed", "1", "step", "prior.gait[1]")
    if "prior_target" in slices:
        for k, actuator in enumerate(robot.actuator_names):
            add(f"prior_target.{actuator}", "the prior's joint target this cycle", "rad", f"joint {actuator}",
                f"prior.step(sensors)[{k}]", prior_target=True)
    blocks = [(name, len(list(group))) for name, group in itertools.groupby(row["name"].split(".")[0] for row in rows)]
    expected = [(name, part.stop - part.start) for name, part in slices.items()]
    if blocks != expected:
        raise ValueError(f"the observation layout's blocks (name, size) {blocks} are not the environment's {expected}")
    return rows


def action_spec(env: UprightEnv) -> dict[str, Any]:
    """The action of ``env`` for the spec: size, clip, what a value commands, the joints in order
    with their limits and (residual) the largest residual each, and a get-up's last, tempo entry
    (``tempo_range``); for a walk's step residual (``residual_on="steps"``) the step-target offsets
    with their limits instead."""
    residual = env.residual
    if isinstance(residual, StepResidual):
        offsets = [{"index": k, "offset": name, "limit": float(limit)}
                   for k, (name, limit) in enumerate(zip(residual.names, residual.limits))]
        return {"size": len(offsets), "clip": [-1.0, 1.0], "clip_in_graph": True, "kind": "step residual",
                "adds_to": "the prior's swing-foot landing target (walk frame: x m forward, y m left, yaw rad "
                           "left), from the prior's next control cycle on; its joint targets go to the servos "
                           "unchanged (the prior's set_step_residual)",
                "offset": "action[k] * limit[k]", "offsets": offsets}
    lower, upper = env.sim.model.actuator_ctrlrange.T
    half = (upper - lower) / 2
    joints = []
    for k, actuator in enumerate(env.robot.actuator_names):
        joint = {"index": k, "actuator": actuator, "lower_rad": float(lower[k]), "upper_rad": float(upper[k]),
                 "half_range_rad": float(half[k])}
        if residual is not None:
            joint["residual_limit_rad"] = float(residual.limits[k])
        joints.append(joint)
    tempo_range = residual.tempo_range if isinstance(residual, TempoResidual) else None
    spec: dict[str, Any] = {"size": len(joints) + (tempo_range is not None), "clip": [-1.0, 1.0], "clip_in_graph": True}
    if residual is not None:
        spec.update(kind="residual",
                    adds_to="the prior's joint targets of this cycle (prior_target in the observation)",
                    residual_scale=residual.scale,
                    target_rad="prior_target[k] + residual_scale * action[k] * half_range_rad[k]")
    else:
        spec.update(kind="joint target", target_rad="(lower_rad[k] + upper_rad[k]) / 2 + action[k] * half_range_rad[k]")
    spec["joints"] = joints
    if tempo_range is not None:
        spec["tempo"] = {"index": len(joints), "range": tempo_range,
                         "factor": f"range ** action[{len(joints)}]",
                         "sets": "how fast the prior's motion plays over the next control cycle (1 = its own "
                                 "timing; the prior's set_tempo)"}
    return spec


@dataclass(frozen=True)
class Export:
    """What :func:`build_export` makes of a trained policy: the graph, the spec, and what
    records the examples and the prior vectors (the SB3 policy and its evaluation environment)."""

    graph: onnx.ModelProto
    spec: dict[str, Any]
    policy: ModelPolicy
    env_id: str
    env_kwargs: dict[str, Any]


def build_export(name: str, ops: str = "default") -> Export:
    """The export of the trained policy ``name`` (a run folder, one of its ``.zip`` files or
    ``zoo:NAME``) with the operators of ``ops``; ValueError naming what cannot be exported (a
    built-in or classical policy, a run without its normaliser, an activation ``ops`` lacks)."""
    if not is_run_policy(name):
        if name in policy_names():
            raise ValueError(f"{name!r} is a built-in, classical or hand-designed policy: there is no trained network "
                             "to export; give a run folder of upright train, one of its .zip files or zoo:NAME")
        raise ValueError(f"{name!r} is no run folder of upright train, .zip file of one or zoo:NAME: without a run's "
                         "config.yml the environment (prior, residual scale, conditions) and the normalisation of a "
                         "model are unknown, so there is no spec to write")
    run_dir, model_path = run_model(name)
    policy = load_run_policy(name)
    config = load_run_config(run_dir)
    layers = actor_layers(policy.model)
    label = name[len(ZOO_PREFIX):] if name.startswith(ZOO_PREFIX) else run_dir.name
    normalizer = policy.normalizer if policy.normalizer is not None and policy.normalizer.norm_obs else None
    graph = build_graph(layers, normalizer, policy.model.action_space, ops, label)
    env_kwargs = run_env_kwargs(name)
    env = gym.make(config.env_id, **env_kwargs)
    try:
        base: UprightEnv = env.unwrapped
        policy.reset(env, None)
        manifest_path = run_dir / "manifest.yml"
        manifest = read_manifest(run_dir) if manifest_path.is_file() else {}
        robot = base.robot
        trained = training_conditions(config.env_kwargs)
        calls = prior_cycle_inputs(base)
        spec = {
            "policy": {"name": label, "source": name, "model_file": model_path.name,
                       "model_steps": int(policy.model.num_timesteps), "algo": config.algo},
            "robot": robot.name,
            "task": base.task,
            "environment": {"id": config.env_id, "kwargs": jsonable(env_kwargs),
                            "conditions": base.sim.conditions.to_dict()},
            "timing": timing_spec(base, trained, residual=base.prior is not None, calls=calls),
            "joints": joints_spec(robot),
            "kinematics_check": kinematics_check(robot),
            "observation": {
                "size": base.observation_space.shape[0], "dtype": "float32", "input": f"{INPUT_NAME} [batch, n]",
                "built_by": "upright.envs.sensors.observation_from_sensors",
                "normalisation": ("in the graph: clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)"
                                  if normalizer is not None else "none"),
                **({"epsilon": float(normalizer.epsilon), "clip_obs": float(normalizer.clip_obs)}
                   if normalizer is not None else {}),
                "layout": observation_layout(base),
                "semantics": observation_semantics(base, trained),
            },
            "action": {"output": f"{OUTPUT_NAME} [batch, size]", "dtype": "float32", **action_spec(base)},
            "prior": None if base.prior is None else {
                "name": env_kwargs["prior"], "class": type(base.prior).__name__,
                "params": jsonable(dataclasses.asdict(base.prior.params)) if hasattr(base.prior, "params") else None,
                "code": f"upright {UPRIGHT_VERSION}" + (f", commit {config.code}" if config.code else ""),
            },
            "prior_vectors": None if base.prior is None else prior_vectors_spec(
                env_kwargs["prior"], EXAMPLE_EPISODES, HELD_OUT_SEED, calls),
            "training": {
                "env_kwargs": jsonable(config.env_kwargs_with_prior), "algo": config.algo, "seed": config.seed,
                "total_steps": manifest.get("total_steps", config.steps),
                "commands": manifest.get("training_commands", [config.command]),
            },
            "held_out": {"selection": manifest.get("selection"), "evaluation": manifest.get("evaluation")},
            "model": {"file": GRAPH_FILE, "ops": ops, "opset": OPSET, "ir_version": IR_VERSION,
                      "operators": sorted({n.op_type for n in graph.graph.node}),
                      "layers": [{"in": int(layer.weight.shape[1]), "out": int(layer.weight.shape[0]),
                                  "activation": layer.activation} for layer in layers],
                      "sha256": sha256_bytes(graph.SerializeToString())},
            "examples": {"file": EXAMPLES_FILE, "count": EXAMPLES, "episodes": EXAMPLE_EPISODES,
                         "first_seed": HELD_OUT_SEED, "tolerance": EXAMPLE_TOLERANCE},
            "upright_version": UPRIGHT_VERSION,
        }
    finally:
        env.close()
    return Export(graph, spec, policy, config.env_id, env_kwargs)


def export_episodes(export: Export) -> int:
    """The episodes :func:`write_export` records for ``export``: :data:`EXAMPLE_EPISODES` for
    ``example_io.npz`` and, for a policy with a prior, as many again for ``prior_vectors.npz``."""
    return EXAMPLE_EPISODES * (2 if export.spec["prior_vectors"] is not None else 1)


class Recorder(Policy):
    """Acts as ``policy`` and keeps every observation it is given with the action it returned and
    the seed and step of the episode (for :func:`~upright.eval.runner.run_episodes` in this
    process)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.name = policy.name
        self.observations: list[np.ndarray] = []
        self.actions: list[np.ndarray] = []
        self.seeds: list[int] = []
        self.steps: list[int] = []
        self._seed, self._step = 0, 0

    def reset(self, env: gym.Env, seed: int | None) -> None:
        self.policy.reset(env, seed)
        self._seed, self._step = int(seed or 0), 0

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        action = self.policy.act(observation, info)
        self.observations.append(np.array(observation, dtype=np.float32))
        self.actions.append(np.array(action, dtype=np.float32))
        self.seeds.append(self._seed)
        self.steps.append(self._step)
        self._step += 1
        return action


def record(policy: Policy, env_id: str, env_kwargs: dict[str, Any], episodes: int,
           seed: int = HELD_OUT_SEED) -> Recorder:
    """``episodes`` episodes of ``policy`` from ``seed`` through the runner, recorded."""
    recorder = Recorder(policy)
    run_episodes(env_id, recorder, episodes, env_kwargs=env_kwargs, seed=seed, progress=False)
    return recorder


def run_graph(graph: bytes, observations: np.ndarray) -> np.ndarray:
    """The actions of the serialised ONNX ``graph`` for a batch of ``observations`` (onnxruntime,
    one thread)."""
    import onnxruntime  # onnxruntime (the export extra): only when an export runs

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
    return session.run([OUTPUT_NAME], {INPUT_NAME: np.asarray(observations, dtype=np.float32)})[0]


class _SpecDumper(yaml.SafeDumper):
    """YAML in block style, except one line per observation entry and per joint (the mappings
    with an ``index``) and lists of numbers."""

    def represent_dict(self, data: dict[str, Any]) -> yaml.Node:
        return self.represent_mapping("tag:yaml.org,2002:map", data, flow_style="index" in data)

    def represent_list(self, data: list[Any]) -> yaml.Node:
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in data)
        return self.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=numbers)


_SpecDumper.add_representer(dict, _SpecDumper.represent_dict)
_SpecDumper.add_representer(list, _SpecDumper.represent_list)


def _prepare_out(out: Path) -> None:
    """ValueError when ``out`` exists and is neither empty nor an export (an export is replaced)."""
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / SPEC_FILE).is_file())):
        raise ValueError(f"--out {str(out)!r} exists and is no export folder; give a new or empty folder")


def write_export(export: Export, out: str | Path, on_episode: Callable[[], object] | None = None) -> Path:
    """Write ``export`` into the folder ``out`` (replacing an earlier export there) with
    :data:`EXAMPLES` observations (or every one, when there are fewer) of :data:`EXAMPLE_EPISODES`
    episodes from :data:`HELD_OUT_SEED` and, for a policy with a prior, the prior's vectors of the
    same episodes; returns ``out``. The examples' episodes go through the runner (and so advance
    an overall progress bar, :func:`~upright.eval.runner.overall_progress`); ``on_episode`` is
    called after each of the prior vectors' episodes."""
    out = Path(out)
    _prepare_out(out)
    graph = export.graph.SerializeToString()
    recorded = record(export.policy, export.env_id, export.env_kwargs, EXAMPLE_EPISODES)
    chosen = np.unique(np.linspace(0, len(recorded.observations) - 1, EXAMPLES).round().astype(int))
    observations = np.stack(recorded.observations)[chosen]
    spec = {**export.spec, "examples": {**export.spec["examples"], "count": len(chosen)}}
    out.parent.mkdir(parents=True, exist_ok=True)
    recover_folder(out)  # what a killed export left: the old copy put back, its temporary folders removed
    temporary = temporary_folder(out)
    temporary.mkdir()
    try:
        (temporary / GRAPH_FILE).write_bytes(graph)
        (temporary / SPEC_FILE).write_text(yaml.dump(spec, Dumper=_SpecDumper, sort_keys=False, width=120,
                                                     allow_unicode=True))
        np.savez_compressed(temporary / EXAMPLES_FILE, observation=observations, action=run_graph(graph, observations),
                            seed=np.asarray(recorded.seeds, dtype=np.int64)[chosen],
                            step=np.asarray(recorded.steps, dtype=np.int64)[chosen])
        if spec["prior_vectors"] is not None:
            np.savez_compressed(temporary / PRIOR_VECTORS_FILE, **record_prior_vectors(
                export.policy, export.env_id, export.env_kwargs, EXAMPLE_EPISODES, HELD_OUT_SEED, on_episode))
        (temporary / SUMS_FILE).write_text(sums_text(temporary))
        replace_folder(temporary, out)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    return out


def export(name: str, out: str | Path, ops: str = "default", *, progress: bool = True) -> Path:
    """Export the trained policy ``name`` into the folder ``out`` (:func:`build_export`,
    :func:`write_export`). With ``progress``, one bar with an ETA over the episodes it records
    (:func:`export_episodes`), most of an export's time; it opens once the policy is built, so
    what cannot be exported is refused in one line before it."""
    _prepare_out(Path(out))
    built = build_export(name, ops)
    with overall_progress(export_episodes(built), f"export {name}", enabled=progress) as bar:
        return write_export(built, out, bar.update)


def zoo_export_dir(name: str) -> Path:
    """The folder of the shipped export of zoo policy ``name``: ``onnx/`` in its entry
    (:func:`~upright.policies.run.zoo_entry`)."""
    return zoo_entry(name) / "onnx"


def export_zoo(ops: str = "default") -> list[Path]:
    """Export every policy of the user's zoo (:func:`~upright.policies.run.user_zoo`) into
    :func:`zoo_export_dir` with the operators of ``ops``, under one progress bar."""
    names = zoo_names(user_zoo())
    paths = []
    with overall_progress(len(names), "export --zoo", unit="policy") as bar:
        for name in names:
            paths.append(export(ZOO_PREFIX + name, zoo_export_dir(name), ops, progress=False))
            bar.update()
    return paths


__all__ = ["ACTIVATIONS", "COMPILED_NN_OPERATORS", "EXAMPLES", "EXAMPLE_EPISODES", "EXAMPLE_TOLERANCE", "HELD_OUT_SEED",
           "IR_VERSION", "OPS", "OPSET", "Dense", "Export", "Recorder", "action_spec", "actor_layers", "build_export",
           "build_graph", "check_operators", "export", "export_episodes", "export_zoo",
           "observation_layout", "record", "run_graph", "write_export", "zoo_export_dir"]
