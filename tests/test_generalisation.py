"""Conditions never trained on: a fixed extra actuation delay, wear scaled by a factor, the
perturbations of ``generalisation.yaml``, and the ``generalisation`` protocol through
``upright experiment`` (one short episode per cell of one shipped policy)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import yaml

from upright import Conditions, Simulation
from conftest import last_bar
from upright.cli import main
from upright.eval.comparison import prior_label
from upright.envs.conditions import PRESETS, RandomWear
from upright.eval.experiments.generalisation import DATA, _notes, perturbed, worse_than_prior
from upright.eval.tables import interval, mean_interval
from upright.policies.run import zoo_entry

WOLFGANG = "wolfgang-getup-residual-spline"


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1"])
def test_extra_delay_cycles_must_be_a_whole_number_of_cycles(bad):
    with pytest.raises(ValueError, match=f"extra_delay_cycles.*{bad!r}"):
        Conditions(extra_delay_cycles=bad)


def test_extra_delay_and_scaled_wear_survive_the_dict_round_trip():
    conditions = PRESETS["competition"].with_(extra_delay_cycles=2, random_wear=RandomWear().scaled(1.5))
    data = json.loads(json.dumps(conditions.to_dict()))
    assert data["extra_delay_cycles"] == 2 and Conditions.from_dict(data) == conditions


def test_extra_delay_is_added_to_the_jitter_with_the_same_draws():
    """The fixed extra comes on top of the jitter; every random draw of the episode stays the same."""
    base = PRESETS["competition"]
    for seed in range(6):
        plain = base.sample(("a", "b"), np.random.default_rng(seed))
        later = base.with_(extra_delay_cycles=1).sample(("a", "b"), np.random.default_rng(seed))
        assert later.extra_delay_cycles == plain.extra_delay_cycles + 1 and plain.extra_delay_cycles in (0, 1)
        assert (later.wear, later.mass_scale, later.friction_scale) == (plain.wear, plain.mass_scale, plain.friction_scale)


def _cycles_until_the_servos_follow(sim: Simulation) -> int:
    """Control cycles from commanding new targets until the servos' set-point is them."""
    targets = sim.data.ctrl + 0.1
    for cycle in range(1, 10):
        sim.step(targets)
        if np.allclose(sim.setpoint, targets):
            return cycle
    raise AssertionError("the command never reached the servos")


def test_one_more_delay_cycle_delays_a_target_by_one_control_period(robot):
    cycles = {}
    for extra in (0, 1):
        sim = Simulation(robot, conditions=Conditions(extra_delay_cycles=extra))
        sim.reset(seed=0)
        cycles[extra] = _cycles_until_the_servos_follow(sim)
    # a command sent in cycle t is followed in cycle t + delay (the step that sends it is cycle 1)
    assert cycles == {0: sim.robot.delay_cycles + 1, 1: sim.robot.delay_cycles + 2}


def test_scaled_wear_multiplies_probabilities_play_lag_and_strength_loss():
    wear = RandomWear(p_worn=0.3, strength=(0.7, 0.9), play=(0.01, 0.02), lag=(0.0, 0.03), p_stuck=0.8)
    scaled = wear.scaled(1.5)
    assert scaled.p_worn == pytest.approx(0.45) and scaled.p_stuck == 1.0  # clipped at 1
    assert scaled.strength == pytest.approx((0.55, 0.85))
    assert scaled.play == pytest.approx((0.015, 0.03)) and scaled.lag == pytest.approx((0.0, 0.045))
    assert (scaled.stuck_start, scaled.stuck_duration) == (wear.stuck_start, wear.stuck_duration)
    assert wear.scaled(1) == wear and RandomWear().scaled(0).p_worn == 0.0


@pytest.mark.parametrize("factor, named", [(-0.5, "-0.5"), (math.nan, "nan"), (4.0, "4.0")])
def test_a_bad_wear_factor_is_named(factor, named):
    with pytest.raises(ValueError, match=named):
        RandomWear(strength=(0.7, 1.0)).scaled(factor)  # 4 × a loss of 0.3 leaves no strength


def test_scaled_wear_draws_the_same_joints_worse_by_the_factor():
    """With the same random numbers every joint worn under the wear is worn under the scaled wear,
    with 1.5 × its play, lag and strength loss, and more joints are worn."""
    wear = RandomWear(p_worn=0.4, p_stuck=0.0)
    scaled = wear.scaled(1.5)
    draws = [(wear.sample(np.random.default_rng(seed)), scaled.sample(np.random.default_rng(seed)))
             for seed in range(200)]
    worn = [(a, b) for a, b in draws if a.strength < 1.0]
    assert len(worn) > 50 and sum(b.strength < 1.0 for _, b in draws) > len(worn) + 20
    for a, b in worn:
        assert b.play == pytest.approx(1.5 * a.play) and b.lag == pytest.approx(1.5 * a.lag)
        assert 1.0 - b.strength == pytest.approx(1.5 * (1.0 - a.strength))


def test_each_perturbation_changes_the_target_as_its_name_says():
    competition = PRESETS["competition"]
    changed = {cell: perturbed(competition, change) for cell, change in DATA["perturbations"].items()}
    assert changed["friction-x0.5"].friction_scale == pytest.approx((0.35, 0.6))
    assert changed["friction-x1.5"].friction_scale == pytest.approx((1.05, 1.8))
    assert changed["mass-x0.85"].mass_scale == pytest.approx((0.8075, 0.8925))
    assert changed["mass-x1.15"].mass_scale == pytest.approx((1.0925, 1.2075))
    assert changed["delay+1"] == competition.with_(extra_delay_cycles=1)
    assert changed["wear-x1.5"] == competition.with_(random_wear=competition.random_wear.scaled(1.5))
    # only what the cell names changes
    assert changed["mass-x0.85"].with_(mass_scale=competition.mass_scale) == competition
    assert perturbed(PRESETS["thesis"], DATA["perturbations"]["wear-x1.5"]) == PRESETS["thesis"]
    assert perturbed(competition, {"preset": "lab"}) == PRESETS["lab"]


@pytest.mark.parametrize("change, named", [
    ({"scale": {"frictoin_scale": 0.5}}, "frictoin_scale"), ({"shift": {}}, "shift"),
    ({"scale": {"terrain": 2}}, "terrain"), ({"add": {"extra_delay_cycles": 0.5}}, "0.5"),
    ({"preset": "lab", "add": {"extra_delay_cycles": 1}}, "preset")])
def test_a_bad_perturbation_is_named(change, named):
    with pytest.raises(ValueError, match=named):
        perturbed(PRESETS["competition"], change)


def test_mean_interval_is_the_student_t_interval():
    found = mean_interval([1.0, 2.0, 3.0])
    assert found["mean"] == 2.0 and found["n"] == 3
    assert found["high"] - 2.0 == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6) == 2.0 - found["low"]
    assert mean_interval([2.0])["low"] is None and interval()(mean_interval([2.0])) == "2.00 (1)"
    assert interval()(mean_interval([])) == "—" and interval(1)(found) == "2.0 [-0.5, 4.5] (3)"


def test_worse_only_where_the_intervals_do_not_overlap():
    prior = {"success": (60, 100), "stood_up": (90, 100), "tries": (60, 80),
             "time_to_stand": mean_interval([8.0, 8.5, 9.0] * 3), "time_upright": mean_interval([]),
             "falls_per_episode": mean_interval([0.0, 1.0, 0.0, 1.0])}
    assert worse_than_prior(prior, prior) == []
    residual = {**prior, "success": (40, 100), "stood_up": (85, 100), "tries": None,
                "time_to_stand": mean_interval([10.0, 10.2, 10.4] * 3), "time_upright": mean_interval([3.0, 4.0]),
                "falls_per_episode": mean_interval([0.0, 0.0, 1.0, 0.0])}
    assert worse_than_prior(residual, prior) == ["success", "time to stand"]
    assert worse_than_prior(prior, residual) == []  # better is not worse


def test_the_notes_say_where_a_residual_is_worse():
    cells = list(DATA["perturbations"])
    worse = _notes(100, 0, cells, [], [], [], {WOLFGANG: {"delay+1": ["success", "falls"]}})
    assert f"**Worse than its prior**: {WOLFGANG} in delay+1 (success, falls)." in worse
    assert "in no cell is a residual worse" in _notes(100, 0, cells, [], [], [], {})


def test_generalisation_runs_every_cell_for_residual_and_prior_on_held_out_seeds(tmp_path, monkeypatch, capsys):
    """One short episode per run of the shipped Wolfgang residual: every cell but the wear (its
    ``thesis`` target has none to scale), residual and prior alone on seed 3000000000 under the
    perturbed conditions, the page written with --docs."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "generalisation"
    assert main(["experiment", "generalisation", "--episodes", "1", "--set", f"only={WOLFGANG}",
                 "max_episode_seconds=0.3", "--out", str(out), "--docs"]) == 0
    result = json.loads((out / "results.json").read_text())
    (table,) = result["tables"]
    cells = [cell for cell in DATA["perturbations"] if cell != "wear-x1.5"]
    manifest = yaml.safe_load((zoo_entry(WOLFGANG) / "manifest.yml").read_text())
    prior = prior_label(manifest["env_kwargs"])  # the shipped prior with its parameter overrides
    assert prior.startswith("prior (spline")
    assert [(r["cell"], r["runs"]) for r in table["rows"]] == [
        (cell, runs) for cell in cells for runs in ("residual", prior)]
    assert last_bar(capsys.readouterr().err, "generalisation") == (2 * len(cells), 2 * len(cells))
    assert all(r["worse"] in ("no", "") or r["runs"] == "residual" for r in table["rows"])
    assert "wear-x1.5 for wolfgang-getup-residual-spline" in table["notes"]
    delayed = json.loads((out / WOLFGANG / "delay+1-prior" / "results.json").read_text())
    assert delayed["seed"] == 3_000_000_000 and delayed["episodes"] == 1 and "prior" not in delayed["env_kwargs"]
    assert Conditions.from_dict(delayed["conditions"]) == PRESETS["thesis"].with_(extra_delay_cycles=1)
    slippery = json.loads((out / WOLFGANG / "friction-x0.5-residual" / "results.json").read_text())
    assert slippery["policy"] == f"zoo:{WOLFGANG}" and slippery["env_kwargs"]["prior"] == "spline"
    assert slippery["conditions"]["friction_scale"] == [0.5, 0.5] and slippery["env_kwargs"]["start"] == "random"
    assert (tmp_path / "docs" / "results" / "generalisation.md").read_text().startswith("# generalisation")
