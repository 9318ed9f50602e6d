"""``upright identify``: servo parameters fitted to recorded joint trajectories (real MuJoCo).

The ground truth is our own model with changed servos: a recording made on it with a known gain,
damping and delay must give them back."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import yaml

from upright import Simulation
from upright.cli import main
from upright.envs.conditions import Conditions, ServoParameters
from upright.envs.robots import get_robot
from upright.tuning.identify import (Recording, contact_free_ranges, excitation, hanging_simulation, identify,
                                     model_servo_parameters, on_control_grid, read_recording, servo_groups, simulate,
                                     write_recording)

WOLFGANG = get_robot("wolfgang")
#: Three joints of one servo class (mx106) of one leg: they share one set of parameters.
LEG = ("LHipRoll", "LHipPitch", "LAnklePitch")
#: The robot that was recorded: Wolfgang's mx106 servos at 0.4 x our gain and 2 x our damping,
#: their commands one control cycle later than our model's.
GAIN, DAMPING, DELAY = 0.4, 2.0, 1
#: Encoder noise on the recorded angles (rad, standard deviation).
NOISE = 0.002


def recorded(seconds: float, joints: tuple[str, ...] = LEG) -> Recording:
    """An excitation of ``joints`` played by the changed robot, its angles measured with noise."""
    schedule = excitation(WOLFGANG, seconds, joints=joints)
    ours = model_servo_parameters(WOLFGANG)[joints[0]]
    robot = Conditions(extra_delay_cycles=DELAY, servo_parameters={"mx106": ServoParameters(
        gain=GAIN * ours["gain"], damping=DAMPING * ours["damping"])})
    noise = np.random.default_rng(0).normal(0.0, NOISE, schedule.target.shape)
    return Recording(schedule.time, schedule.joints, schedule.target, simulate(schedule, WOLFGANG, robot) + noise)


def test_identify_recovers_gain_damping_and_delay():
    recording = recorded(2.0)
    start = time.perf_counter()
    result = identify(recording, WOLFGANG, parameters=("gain", "damping"), trials=100, max_extra_delay=2, seed=0)
    seconds = time.perf_counter() - start
    factors = result.factors["mx106"]
    print(f"true gain x{GAIN}, damping x{DAMPING}, extra delay {DELAY}; fitted gain x{factors['gain']:.4f}, "
          f"damping x{factors['damping']:.4f}, extra delay {result.extra_delay_cycles}; mean squared error "
          f"{result.model_error:.3g} (our model) {result.error:.3g} (fit), per delay {result.error_by_delay}; "
          f"{seconds:.1f} s")
    assert result.extra_delay_cycles == DELAY
    assert factors["gain"] == pytest.approx(GAIN, rel=0.1)
    assert factors["damping"] == pytest.approx(DAMPING, rel=0.1)
    assert result.error < 2.0 * NOISE**2 < result.model_error  # down to the encoder noise
    ours = model_servo_parameters(WOLFGANG)["LHipPitch"]
    assert result.parameters["mx106"]["gain"] == pytest.approx(factors["gain"] * ours["gain"], rel=1e-5)


def test_the_fit_is_seeded_and_groups_by_servo_class_or_joint():
    recording = recorded(2.0, ("LHipPitch", "LKnee"))
    fits = [identify(recording, WOLFGANG, parameters=("gain",), trials=5, max_extra_delay=0, seed=3) for _ in range(2)]
    assert fits[0] == fits[1]
    assert fits[0].groups == {"mx106": ("LHipPitch",), "xh540": ("LKnee",)}
    assert servo_groups(WOLFGANG, ("LHipPitch", "RHipPitch"), "joint") == {"LHipPitch": ("LHipPitch",),
                                                                          "RHipPitch": ("RHipPitch",)}


def test_identified_yaml_loads_as_conditions_that_set_the_servos(tmp_path, capsys):
    log = write_recording(recorded(2.0, ("LHipPitch",)), tmp_path / "log.csv")
    out = tmp_path / "fit"
    assert main(["identify", str(log), "--robot", "wolfgang", "--parameters", "gain", "--trials", "4",
                 "--max-delay", "0", "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out and (out / "tracking.png").stat().st_size > 0
    text = (out / "conditions.yaml").read_text()
    assert text.startswith("# Servo parameters of wolfgang")
    conditions = Conditions.from_dict(yaml.safe_load(text))
    assert conditions.extra_delay_cycles == 0
    gain = conditions.servo_parameters["wolfgang/mx106"].gain
    sim = Simulation("wolfgang", conditions)
    assert sim.model.actuator("LHipPitch").gainprm[0] == pytest.approx(gain)
    assert sim.model.actuator("LKnee").gainprm[0] == pytest.approx(60.0)  # another class keeps ours


@pytest.mark.parametrize("suffix", [".npz", ".csv"])
@pytest.mark.parametrize("measured", [True, False])
def test_recordings_read_back_exactly(tmp_path, suffix, measured):
    rng = np.random.default_rng(1)
    recording = Recording(time=0.01 * np.arange(5) + 1.234, joints=("LKnee", "HeadPan"), target=rng.normal(size=(5, 2)),
                          measured=rng.normal(size=(5, 2)) if measured else None)
    back = read_recording(write_recording(recording, tmp_path / f"log{suffix}"))
    assert back.joints == recording.joints
    np.testing.assert_array_equal(back.time, recording.time)
    np.testing.assert_array_equal(back.target, recording.target)
    if measured:
        np.testing.assert_array_equal(back.measured, recording.measured)
    else:
        assert back.measured is None


def test_jitter_and_dropped_samples_are_resampled_onto_the_control_period():
    stamps = np.delete(0.01 * np.arange(21) + 0.0005 * np.sin(np.arange(21)), 7)  # up to 0.5 ms off; sample 7 lost
    jittery = Recording(time=stamps, joints=("LKnee",), target=np.arange(20.0)[:, None], measured=stamps[:, None])
    grid = on_control_grid(jittery, WOLFGANG)
    np.testing.assert_allclose(grid.time, stamps[0] + 0.01 * np.arange(21))
    np.testing.assert_allclose(grid.measured[:, 0], grid.time)  # interpolated (here: the time itself)
    last_sent = np.searchsorted(stamps, grid.time, side="right") - 1  # a servo holds its last command
    np.testing.assert_array_equal(grid.target[:, 0], np.arange(20.0)[last_sent])
    on_grid = Recording(time=0.01 * np.arange(3), joints=("LKnee",), target=np.zeros((3, 1)))
    assert on_control_grid(on_grid, WOLFGANG) is on_grid


@pytest.mark.parametrize(("make", "named"), [
    (lambda: on_control_grid(Recording(np.arange(3) * 0.01, ("LKnees",), np.zeros((3, 1))), WOLFGANG), "LKnees"),
    (lambda: Recording(np.array([0.0, 0.01, 0.01]), ("LKnee",), np.zeros((3, 1))), "sample 2"),
    (lambda: Recording(np.arange(3) * 0.01, ("LKnee",), np.zeros((3, 1)), np.array([[0.0], [np.nan], [0.0]])),
     "measured of joint LKnee is nan at sample 1"),
    (lambda: Recording(np.arange(3) * 0.01, ("LKnee", "RKnee"), np.zeros((4, 2))), "(3, 2)"),
    (lambda: on_control_grid(Recording(np.array([0.0, 0.01, 0.02, 0.1]), ("LKnee",), np.zeros((4, 1))), WOLFGANG),
     "gap of 0.08 s"),
    (lambda: on_control_grid(Recording(np.arange(5) * 0.012, ("LKnee",), np.zeros((5, 1))), WOLFGANG),
     "every 0.012 s"),
    (lambda: excitation(WOLFGANG, 1.0), "got 1.0"),
    (lambda: identify(Recording(np.arange(3) * 0.01, ("LKnee",), np.zeros((3, 1))), WOLFGANG), "no measured"),
])
def test_bad_input_is_a_value_error_naming_it(make, named):
    with pytest.raises(ValueError) as error:
        make()
    assert named in str(error.value)


@pytest.mark.parametrize(("args", "named"), [
    (["identify", "missing.csv", "--robot", "wolfgang"], "missing.csv"),
    (["identify", "log.txt", "--robot", "wolfgang"], "'.txt'"),
    (["identify", "log.csv", "--robot", "wolfgang", "--seconds", "10"], "--seconds"),
    (["identify", "--excite", "--robot", "asimo", "--seconds", "10", "--out", "x.csv"], "asimo"),
    (["identify", "--excite", "--robot", "wolfgang", "--out", "x.csv"], "--seconds"),
    (["identify", "--excite", "--robot", "wolfgang", "--seconds", "10", "--joints", "Tail", "--out", "x.csv"], "Tail"),
    (["identify", "log.csv", "--robot", "wolfgang", "--map", "map.yml"], "model_map 'map.yml' needs model"),
    (["identify", "log.mcap", "--robot", "wolfgang", "--model", "nope.xml"], "model 'nope.xml' does not exist"),
])
def test_bad_command_line_is_one_line_and_exit_2(args, named, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and named in err, err


def test_excitation_stays_inside_the_limits_and_touches_nothing(tmp_path, capsys):
    path = tmp_path / "schedule.npz"
    assert main(["identify", "--excite", "--robot", "wolfgang", "--seconds", "8", "--out", str(path)]) == 0
    schedule = read_recording(path)
    assert schedule.measured is None and schedule.joints == WOLFGANG.actuator_names
    assert len(schedule.time) == 801 and np.allclose(np.diff(schedule.time), WOLFGANG.control_period)
    low, high = contact_free_ranges(WOLFGANG, schedule.joints)
    assert np.all(schedule.target >= low + 0.1 - 1e-9) and np.all(schedule.target <= high - 0.1 + 1e-9)
    speed = np.abs(np.diff(schedule.target, axis=0)) / WOLFGANG.control_period
    assert speed.max() <= 3.0 + 1e-9 and speed.max() > 1.0
    np.testing.assert_allclose(schedule.target[0], schedule.target[-1])  # starts and ends at rest in one pose
    sim = hanging_simulation(WOLFGANG)
    sim.reset(qpos=schedule.target[0], ctrl=schedule.target[0])
    for target in schedule.target:
        sim.step(target)
        assert sim.data.ncon == 0, "the schedule drives one limb into another"


# ---------------------------------------------------------------------- MCAP logs and a user's model
#: ``sensor_msgs/msg/JointState`` with its dependencies, as a ROS 2 bag's ``ros2msg`` schema holds it.
JOINT_STATE_MSGDEF = """std_msgs/Header header
string[] name
float64[] position
float64[] velocity
float64[] effort
================================================================================
MSG: std_msgs/Header
builtin_interfaces/Time stamp
string frame_id
================================================================================
MSG: builtin_interfaces/Time
int32 sec
uint32 nanosec
"""
#: The robot's clock at the first sample (ns): logs carry absolute times.
CLOCK = 1_700_000_000 * 10**9


def _joint_state(names: tuple[str, ...], angles: np.ndarray, ns: int) -> dict:
    return {"header": {"stamp": {"sec": ns // 10**9, "nanosec": ns % 10**9}, "frame_id": ""}, "name": list(names),
            "position": [float(a) for a in angles], "velocity": [], "effort": []}


def write_ros2_log(recording: Recording, path, topics=("/joint_commands", "/joint_states")) -> None:
    """``recording`` as a ROS 2 bag (CDR ``sensor_msgs/JointState`` on a command and a joint-state
    topic, stamped on the robot's clock), written with the mcap writer."""
    from mcap_ros2.writer import Writer

    with open(path, "wb") as file:
        writer = Writer(file)
        schema = writer.register_msgdef("sensor_msgs/msg/JointState", JOINT_STATE_MSGDEF)
        for k, time_ in enumerate(recording.time):
            ns = CLOCK + round(time_ * 1e9)
            for topic, angles in zip(topics, (recording.target[k], recording.measured[k])):
                writer.write_message(topic, schema, _joint_state(recording.joints, angles, ns), log_time=ns + 10**5,
                                     publish_time=ns)
        writer.finish()


def test_a_json_mcap_log_reads_as_the_recording(tmp_path):
    """JSON messages (Foxglove's encoding): commands without a header (their log time), joint states
    stamped 2 ms before each command and naming other joints too; the measured angles are the joint
    states interpolated at the commands' times, and commands outside the states' span are left out."""
    from mcap.writer import Writer

    rng = np.random.default_rng(2)
    recording = Recording(time=0.01 * np.arange(50), joints=("LHipPitch", "LKnee"), target=rng.normal(size=(50, 2)),
                          measured=rng.normal(size=(50, 2)))
    path = tmp_path / "log.mcap"
    with open(path, "wb") as file:
        writer = Writer(file)
        writer.start()
        schema = writer.register_schema("JointState", "jsonschema", b'{"type": "object"}')
        commands = writer.register_channel("/servo/command", "json", schema)
        states = writer.register_channel("/servo/state", "json", schema)
        other = writer.register_channel("/camera", "json", schema)
        read_time = recording.time - 0.002  # each state read 2 ms before the command
        for k, time_ in enumerate(recording.time):
            ns = CLOCK + round(read_time[k] * 1e9)
            state = _joint_state(("HeadPan", *recording.joints), np.r_[0.0, recording.measured[k]], ns)
            writer.add_message(states, log_time=ns, publish_time=ns, data=json.dumps(state).encode())
            writer.add_message(other, log_time=ns, publish_time=ns, data=b"{}")
            ns = CLOCK + round(time_ * 1e9)
            command = {"joint_names": list(recording.joints), "positions": recording.target[k].tolist()}
            writer.add_message(commands, log_time=ns, publish_time=ns, data=json.dumps(command).encode())
        writer.finish()
    back = read_recording(path, topics=("/servo/command", "/servo/state"))
    assert back.joints == recording.joints and len(back.time) == len(recording.time) - 1  # the last: after the states
    np.testing.assert_allclose(back.time, recording.time[:-1], atol=1e-9)  # counted from the first command
    np.testing.assert_array_equal(back.target, recording.target[:-1])
    expected = [np.interp(recording.time[:-1], read_time, recording.measured[:, j]) for j in range(2)]
    np.testing.assert_allclose(back.measured, np.stack(expected, axis=1), atol=1e-6)
    with pytest.raises(ValueError, match="no messages on the command topic '/joint_commands'; its topics: /camera, "
                                         "/servo/command, /servo/state"):
        read_recording(path)
    with pytest.raises(ValueError, match="cannot decode the messages of /camera \\(protobuf\\)"):
        with open(path, "wb") as file:
            writer = Writer(file)
            writer.start()
            channel = writer.register_channel("/camera", "protobuf", writer.register_schema("x", "protobuf", b""))
            writer.add_message(channel, log_time=1, publish_time=1, data=b"")
            writer.finish()
        read_recording(path, topics=("/camera", "/servo/state"))


def test_identify_fits_a_users_model_from_a_ros2_log(tmp_path, capsys):
    """The renamed Wolfgang (ROS-style names, the right hip pitch turned the other way, the left hip
    pitch from another zero) with its map: a ROS 2 bag of its servos at 0.6 x the model's gain and
    1.5 x its damping, in its names and angles, gives them back through ``upright identify
    --model --map``."""
    from upright.envs.robots import with_model
    from upright.eval.model_variants import write_variants
    from upright.tuning.identify import in_model_convention

    model, model_map = write_variants(tmp_path / "variants", ("wolfgang",))["wolfgang", "renamed"]
    robot = with_model(WOLFGANG, model, model_map)
    joints = ("LHipPitch", "RHipPitch", "LHipRoll")  # mx106 servos
    schedule = excitation(robot, 2.0, joints=joints)
    ours = model_servo_parameters(robot)["LHipPitch"]
    truth = Conditions(servo_parameters={"mx106": ServoParameters(gain=0.6 * ours["gain"], damping=1.5 * ours["damping"])})
    noise = np.random.default_rng(0).normal(0.0, NOISE, schedule.target.shape)
    played = Recording(schedule.time, joints, schedule.target, simulate(schedule, robot, truth) + noise)
    theirs = in_model_convention(played, robot)
    assert theirs.joints == ("l_hip_pitch", "r_hip_pitch", "l_hip_roll")
    np.testing.assert_allclose(theirs.target[:, 1], -played.target[:, 1])  # turns the other way
    np.testing.assert_allclose(theirs.target[:, 0], played.target[:, 0] - 0.1)  # its zero is at our -0.1 rad
    write_ros2_log(theirs, tmp_path / "log.mcap")
    out = tmp_path / "fit"
    assert main(["identify", str(tmp_path / "log.mcap"), "--robot", "wolfgang", "--model", str(model), "--map",
                 str(model_map), "--parameters", "gain,damping", "--trials", "40", "--max-delay", "0",
                 "--out", str(out)]) == 0
    assert "with the model" in capsys.readouterr().out
    text = (out / "conditions.yaml").read_text()
    assert text.startswith(f"# Servo parameters of wolfgang on the model {model} (map {model_map})")
    fitted = yaml.safe_load(text)["servo_parameters"]["wolfgang/mx106"]
    assert fitted["gain"] / ours["gain"] == pytest.approx(0.6, rel=0.1)
    assert fitted["damping"] / ours["damping"] == pytest.approx(1.5, rel=0.1)
    # A log in our names and angles is not the model's: its hip pitch is refused by name.
    write_ros2_log(played, tmp_path / "ours.mcap")
    assert main(["identify", str(tmp_path / "ours.mcap"), "--robot", "wolfgang", "--model", str(model), "--map",
                 str(model_map), "--out", str(out)]) == 2
    assert "joints ['LHipPitch', 'RHipPitch', 'LHipRoll'] of the recording are no actuated joints" in \
        capsys.readouterr().err
