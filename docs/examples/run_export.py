"""A shipped get-up policy run from its export alone, on another MJCF of the robot.

What a team does to put an exported policy on its robot, with plain MuJoCo in the robot's place:
it reads nothing but the export folder (``policy.yml``, ``policy.onnx`` through onnxruntime,
``example_io.npz``, ``prior_vectors.npz``) and the model file. Of upright it imports only the
prior (``make_controller``) and its input record (``Sensors``), as a team would link its port of
them; everything else (the observation, the fused angles, the action's targets, the joint
conventions, the servo delay of the simulated robot) is written here from the spec.

    python -m upright.eval.model_variants variants                    # variants/wolfgang/knee_ref.xml, ...
    python docs/examples/run_export.py policies/zoo/wolfgang-getup-residual-spline/onnx variants/wolfgang/knee_ref.xml

Steps: (1) the graph against ``example_io.npz``; (2) the prior against its test vectors; (3)
episodes on the model from its lying keyframes, flat floor, no pushes, reporting when the robot
stood (torso within 0.35 rad of upright in fused pitch and roll, head top at 85 % of its standing
height, IMU still below 0.15 rad/s, held 1 s: ``docs/environments.md``'s get-up success).

The model's joints are ours by name; each joint's zero is the model's ``ref`` (an encoder angle is
``qpos - ref``; the spec's ``zero_rad`` is the angle of our zero pose), so a model whose knees carry
a ``ref`` (``knee_ref.xml``) runs unchanged.
"""

from __future__ import annotations

import argparse
import hashlib
import math
from collections import deque
from pathlib import Path

import mujoco
import numpy as np
import onnxruntime
import yaml

from upright.baselines import make_controller  # the prior (a team's port of it)
from upright.envs.sensors import Sensors  # the prior's input record

#: Get-up success as docs/environments.md defines it.
UPRIGHT_ANGLE, HEAD_FRACTION, STILL_GYRO, HOLD_SECONDS = 0.35, 0.85, 0.15, 1.0


def fused_angles(quat: np.ndarray) -> np.ndarray:
    """Fused pitch, roll, yaw and hemisphere (Allgeuer & Behnke 2015) of a quaternion (w, x, y, z)
    from the IMU frame to the world: pitch asin(-R20), roll asin(R21), yaw 2 atan2(z, w) wrapped to
    (-pi, pi], hemisphere sign(R22) (+1 at 0)."""
    w, x, y, z = quat
    r20, r21, r22 = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
    yaw = math.remainder(2 * math.atan2(z, w), 2 * math.pi)
    return np.array([math.asin(max(-1.0, min(1.0, -r20))), math.asin(max(-1.0, min(1.0, r21))),
                     math.pi if yaw == -math.pi else yaw, 1.0 if r22 >= 0 else -1.0])


class Runtime:
    """The robot side of the export: the prior, the graph and the action's targets (policy.yml)."""

    def __init__(self, folder: Path) -> None:
        self.spec = yaml.safe_load((folder / "policy.yml").read_text())
        graph = (folder / self.spec["model"]["file"]).read_bytes()
        if hashlib.sha256(graph).hexdigest() != self.spec["model"]["sha256"]:
            raise SystemExit("policy.onnx does not match policy.yml's model.sha256")
        self.session = onnxruntime.InferenceSession(graph, providers=["CPUExecutionProvider"])
        action = self.spec["action"]
        self.joints = [j["actuator"] for j in action["joints"]]
        self.lower = np.array([j["lower_rad"] for j in action["joints"]])
        self.upper = np.array([j["upper_rad"] for j in action["joints"]])
        self.half = np.array([j["half_range_rad"] for j in action["joints"]])
        self.scale = float(action["residual_scale"])
        self.blocks = list(dict.fromkeys(e["name"].split(".")[0] for e in self.spec["observation"]["layout"]))
        self.prior = None
        self.prior_targets = np.zeros(len(self.joints))

    def new_prior(self):
        prior = self.spec["prior"]
        return make_controller(prior["name"], self.spec["robot"], self.spec["task"], params=prior["params"])

    def act(self, graph_input: np.ndarray) -> np.ndarray:
        return self.session.run(None, {self.session.get_inputs()[0].name: graph_input.astype(np.float32)})[0]

    def observation(self, s: Sensors) -> np.ndarray:
        """The observation in the layout's block order (the layout names each entry's source)."""
        w, x, y, z = s.quat
        gravity = -np.array([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)])
        parts = {"joint_pos": s.joint_pos, "joint_vel": s.joint_vel, "joint_target": s.joint_target, "gyro": s.gyro,
                 "accel": s.accel, "gravity": gravity, "fused": s.fused[[0, 1, 3]],
                 "foot_pressure": s.foot_pressure, "prior_target": self.prior_targets}
        return np.concatenate([parts[b] for b in self.blocks]).astype(np.float32)

    def start(self, sensors: Sensors, seed: int) -> np.ndarray:
        self.prior = self.new_prior()
        self.prior.reset(sensors, np.random.default_rng(seed))
        return self.step(sensors)

    def step(self, sensors: Sensors) -> np.ndarray:
        """This cycle's targets (rad, actuator order), clipped to the joint limits as sent."""
        self.prior_targets = np.asarray(self.prior.step(sensors), dtype=float)
        action = self.act(self.observation(sensors)[None])[0]
        return np.clip(self.prior_targets + self.scale * action * self.half, self.lower, self.upper)


class Robot:
    """Plain MuJoCo in the robot's place: the model on a floor, its encoders, IMU and cleats read
    into Sensors in the spec's conventions, and its servo bus delaying commands by the spec's
    ``actuation_delay_cycles`` (the robot's physics, which the runtime does not emulate)."""

    def __init__(self, model_file: Path, spec: dict) -> None:
        scene = mujoco.MjSpec.from_file(str(model_file))
        scene.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[10, 10, 0.1], friction=[1.0, 0.005, 0.0001])
        self.model = scene.compile()
        self.data = mujoco.MjData(self.model)
        m = self.model
        entries = spec["joints"]["entries"]
        self.qadr = np.array([m.jnt_qposadr[m.joint(e["name"]).id] for e in entries])
        self.dadr = np.array([m.jnt_dofadr[m.joint(e["name"]).id] for e in entries])
        # Encoder angle = qpos - the model's zero (its ref) + the spec's zero (our zero pose's angle).
        self.zero = np.array([m.qpos0[a] for a in self.qadr]) - np.array([e["zero_rad"] for e in entries])
        actuators = [j["actuator"] for j in spec["action"]["joints"]]
        self.act = np.array([m.actuator(a).id for a in actuators])
        self.act_zero = self.zero[[next(k for k, e in enumerate(entries) if e["name"] == a) for a in actuators]]
        pressure = spec["observation"]["semantics"]["pressure_sensors"]
        self.pressure = [m.sensor(p["name"]).adr[0] for p in pressure]
        # The IMU: the gyro, accelerometer and orientation sensors on the spec's IMU site.
        imu = m.site(spec["observation"]["semantics"]["imu"]["site"]).id
        on_imu = {int(m.sensor_type[i]): int(m.sensor_adr[i]) for i in range(m.nsensor) if m.sensor_objid[i] == imu
                  and m.sensor_objtype[i] == mujoco.mjtObj.mjOBJ_SITE}
        self.gyro, self.accel, self.quat = (on_imu[int(kind)] for kind in (
            mujoco.mjtSensor.mjSENS_GYRO, mujoco.mjtSensor.mjSENS_ACCELEROMETER, mujoco.mjtSensor.mjSENS_FRAMEQUAT))
        self.head = m.site("head_top").id
        self.period = float(spec["timing"]["control_period_s"])
        self.substeps = int(round(self.period / m.opt.timestep))
        self.delay = int(spec["timing"]["actuation_delay_cycles"])
        self.queue: deque[np.ndarray] = deque()
        self.sent = np.zeros(len(actuators))

    def reset(self, pose: str) -> Sensors:
        mujoco.mj_resetDataKeyframe(self.model, self.data, self.model.key(pose).id)
        mujoco.mj_forward(self.model, self.data)
        self.sent = self.data.ctrl[self.act] - self.act_zero
        self.queue = deque(self.data.ctrl.copy() for _ in range(self.delay))
        self.data.time = 0.0
        return self.sensors()

    def command(self, targets: np.ndarray) -> Sensors:
        """Send ``targets`` (rad, our convention) and run one control period."""
        self.sent = targets.copy()
        ctrl = self.data.ctrl.copy()
        ctrl[self.act] = targets + self.act_zero
        self.queue.append(ctrl)
        self.data.ctrl[:] = self.queue.popleft()
        mujoco.mj_step(self.model, self.data, nstep=self.substeps)
        return self.sensors()

    def sensors(self) -> Sensors:
        d = self.data
        quat = d.sensordata[self.quat:self.quat + 4].copy()
        return Sensors(time=float(d.time), joint_pos=d.qpos[self.qadr] - self.zero, joint_vel=d.qvel[self.dadr].copy(),
                       joint_target=self.sent.copy(), gyro=d.sensordata[self.gyro:self.gyro + 3].copy(),
                       accel=d.sensordata[self.accel:self.accel + 3].copy(), quat=quat, fused=fused_angles(quat),
                       foot_pressure=d.sensordata[self.pressure].copy())

    def head_height(self) -> float:
        return float(self.data.site_xpos[self.head][2])


def check_examples(folder: Path, runtime: Runtime) -> float:
    """The largest difference between the graph's actions and example_io.npz's."""
    examples = np.load(folder / runtime.spec["examples"]["file"])
    return float(np.abs(runtime.act(examples["observation"]) - examples["action"]).max())


def check_prior_vectors(folder: Path, runtime: Runtime) -> float:
    """The largest difference (rad) between a fresh prior's targets and the recorded ones, fed as
    prior_vectors.feed says."""
    vectors = np.load(folder / runtime.spec["prior_vectors"]["file"])
    fields = ("time", "joint_pos", "joint_vel", "joint_target", "gyro", "accel", "quat", "fused", "foot_pressure")
    worst = 0.0
    for k in range(int(runtime.spec["prior_vectors"]["episodes"])):
        cycles = len(vectors[f"episode{k}.time"])
        prior = runtime.new_prior()
        for t in range(cycles):
            sensors = Sensors(**{f: (float(vectors[f"episode{k}.{f}"][t]) if f == "time" else
                                     vectors[f"episode{k}.{f}"][t].copy()) for f in fields})
            if t == 0:
                prior.reset(sensors, np.random.default_rng(int(vectors[f"episode{k}.seed"])))
            worst = max(worst, float(np.abs(prior.step(sensors) - vectors[f"episode{k}.targets"][t]).max()))
    return worst


def episode(robot: Robot, runtime: Runtime, pose: str, seed: int, seconds: float) -> dict[str, float | None]:
    """One get-up from ``pose``: when the robot stood (s, None: never) and the final posture."""
    standing = robot.reset(robot.model.key(0).name)  # the model's standing keyframe: the reference posture
    standing_fused, standing_head = standing.fused, robot.head_height()
    sensors = robot.reset(pose)
    targets = runtime.start(sensors, seed)
    held_since, stood_at = None, None
    for _ in range(int(round(seconds / robot.period))):
        sensors = robot.command(targets)
        targets = runtime.step(sensors)
        tilt = np.abs(sensors.fused[:2] - standing_fused[:2])
        up = (tilt.max() < UPRIGHT_ANGLE and sensors.fused[3] > 0 and robot.head_height() > HEAD_FRACTION * standing_head
              and np.linalg.norm(sensors.gyro) < STILL_GYRO)
        held_since = (held_since if held_since is not None else sensors.time) if up else None
        if held_since is not None and sensors.time - held_since >= HOLD_SECONDS and stood_at is None:
            stood_at = held_since
    return {"stood_at_s": stood_at, "head_m": robot.head_height(), "pitch_rad": float(sensors.fused[0]),
            "roll_rad": float(sensors.fused[1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", type=Path, help="an export folder (policy.yml, policy.onnx, ...)")
    parser.add_argument("model", type=Path, help="an MJCF of the robot with our joint, actuator and sensor names")
    parser.add_argument("--episodes", type=int, default=2, help="episodes per lying pose (default: 2)")
    parser.add_argument("--seconds", type=float, default=10.0, help="episode length (s, default: 10)")
    args = parser.parse_args()
    runtime = Runtime(args.export)
    print(f"{runtime.spec['policy']['name']}: graph vs example_io.npz: max |action diff| "
          f"{check_examples(args.export, runtime):.2e} (tolerance {runtime.spec['examples']['tolerance']:g})")
    print(f"prior {runtime.spec['prior']['name']} vs prior_vectors.npz: max |target diff| "
          f"{check_prior_vectors(args.export, runtime):.2e} rad "
          f"(tolerance {runtime.spec['prior_vectors']['tolerance_rad']:g})")
    robot = Robot(args.model, runtime.spec)
    for pose in ("prone", "supine"):
        for seed in range(args.episodes):
            result = episode(robot, runtime, pose, seed, args.seconds)
            stood = "never stood" if result["stood_at_s"] is None else f"stood at {result['stood_at_s']:.2f} s"
            print(f"{args.model.name} {pose} seed {seed}: {stood}; at the end head {result['head_m']:.3f} m, "
                  f"fused pitch {result['pitch_rad']:+.2f} rad, roll {result['roll_rad']:+.2f} rad")


if __name__ == "__main__":
    main()
