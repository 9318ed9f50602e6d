"""``upright identify``: servo parameters fitted to recorded joint trajectories (real MuJoCo).

The ground truth is our own model with changed servos: a recording made on it with a known gain,
damping and delay must give them back."""

from __future__ import annotations

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
