"""The obstacle-course protocol: the falls table, the paired comparison against Old, and real runs
across the course through the registry (one robot)."""

from __future__ import annotations

import json

import pytest

from conftest import last_bar
from upright.envs.terrain import OBSTACLE_COURSE
from upright.eval.experiments import run_experiment
from upright.eval.experiments.obstacle_course import BEYOND, against, falls_rows


def _run(configuration: str, seed: int, obstacles: list[str]) -> dict:
    return {"configuration": configuration, "speed": 0.25, "seed": seed, "reached_end": True,
            "falls": [{"obstacle": name, "direction": "forward"} for name in obstacles]}


RUNS = [_run("Old", 0, ["3 mm edge", "3 mm edge"]), _run("Old", 1, ["6 mm wooden blocks"]), _run("Old", 2, []),
        _run("New", 0, []), _run("New", 1, ["6 mm wooden blocks"]), _run("New", 2, [])]
COLUMNS = [("Old", 0.25), ("New", 0.25)]


def test_falls_rows_count_per_obstacle_and_column():
    rows = {row["obstacle"]: row for row in falls_rows(RUNS, COLUMNS)}
    assert (rows["3 mm edge"]["Old@0.25"], rows["3 mm edge"]["New@0.25"], rows["3 mm edge"]["sum"]) == (2, 0, 2)
    assert (rows["6 mm wooden blocks"]["Old@0.25"], rows["6 mm wooden blocks"]["sum"]) == (1, 2)
    assert (rows["sum"]["Old@0.25"], rows["sum"]["New@0.25"], rows["sum"]["sum"]) == (3, 1, 4)
    assert rows["runs reaching the end"]["Old@0.25"] == [3, 3]
    assert BEYOND not in rows  # nobody fell beyond the course


def test_comparison_pairs_the_same_robots_against_a_reference():
    (row,) = against(RUNS, COLUMNS)
    assert row["column"] == "New 250 mm/s"
    assert row["falls_per_run"] == pytest.approx([1 / 3, 1.0])
    assert row["change"] == pytest.approx(-2 / 3)
    assert 0.0 < row["p"] <= 1.0
    assert row["directions"] == [[1, 0], [3, 0]] and row["robots"] == 3
    ties = [_run("Old", 0, ["3 mm edge"]), _run("New", 0, ["first 6 mm edge"])]
    assert against(ties, COLUMNS)[0]["p"] is None  # every pair ties: no test
    residual = [*RUNS, _run("nao-walk-residual-step_adjust", 0, []), _run("nao-walk-residual-step_adjust", 1, []),
                _run("nao-walk-residual-step_adjust", 2, ["3 mm edge"])]
    (row,) = against(residual, [("New", 0.25), ("nao-walk-residual-step_adjust", 0.25)], reference="New")
    assert row["column"] == "nao-walk-residual-step_adjust 250 mm/s"
    assert row["falls_per_run"] == pytest.approx([1 / 3, 1 / 3]) and row["change"] == pytest.approx(0.0)


def test_a_real_run_crosses_the_course_and_merges(tmp_path):
    run_experiment("obstacle-course", tmp_path / "new", episodes=1, progress=False,
                   settings={"tables": 1, "only": "New@0.25"})
    saved = json.loads((tmp_path / "new" / "results.json").read_text())
    (run,) = saved["data"]["runs"]
    names = {ob.name for ob in OBSTACLE_COURSE} | {BEYOND}
    assert (run["configuration"], run["speed"], run["seed"]) == ("New", 0.25, 0)
    assert run["reached_end"] and run["seconds"] > OBSTACLE_COURSE[-1].x_end / 0.25 * 0.5
    assert all(f["obstacle"] in names and f["direction"] in ("forward", "backward", "left", "right")
               for f in run["falls"])
    page = (tmp_path / "new" / "results.md").read_text()
    assert "| obstacle | New 250 mm/s | sum |" in page and "| runs reaching the end | 1/1 |" in page
    # merge: the tables from the saved runs, nothing run again
    run_experiment("obstacle-course", tmp_path / "merged", progress=False,
                   settings={"tables": 1, "merge": str(tmp_path / "new" / "results.json")})
    merged = json.loads((tmp_path / "merged" / "results.json").read_text())
    assert merged["data"]["runs"] == saved["data"]["runs"] and merged["tables"] == saved["tables"]


def test_bad_arguments_are_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="tables"):
        run_experiment("obstacle-course", tmp_path, progress=False, settings={"tables": 3})
    with pytest.raises(ValueError, match="Fast@0.25"):
        run_experiment("obstacle-course", tmp_path, progress=False, settings={"only": "Fast@0.25"})
    with pytest.raises(ValueError, match="episodes"):
        run_experiment("obstacle-course", tmp_path, episodes=0, progress=False, settings={"only": "New@0.25"})


def test_the_shipped_residual_walks_the_course_against_new(tmp_path, capsys):
    """The shipped walk residual is a column of its own: its prior in New steered along the centre
    line by the course, the same robot as New's, compared with New in a table of its own."""
    run_experiment("obstacle-course", tmp_path, episodes=1,
                   settings={"tables": 1, "only": ("New@0.25", "nao-walk-residual-step_adjust@0.25")})
    assert last_bar(capsys.readouterr().err, "obstacle-course") == (2, 2)
    saved = json.loads((tmp_path / "results.json").read_text())
    runs = {r["configuration"]: r for r in saved["data"]["runs"]}
    assert set(runs) == {"New", "nao-walk-residual-step_adjust"} and runs["New"]["seed"] == runs[
        "nao-walk-residual-step_adjust"]["seed"] == 0
    residual = runs["nao-walk-residual-step_adjust"]
    assert residual["reached_end"] and residual["seconds"] > OBSTACLE_COURSE[-1].x_end / 0.25 * 0.5
    page = (tmp_path / "results.md").read_text()
    assert "Table 1: against New" in page and "| nao-walk-residual-step_adjust 250 mm/s |" in page
    assert "Table 1: against Old" not in page  # no Old column ran


def test_a_residual_whose_saved_prior_params_are_a_yaml_path_gets_them_read(tmp_path, monkeypatch):
    """A trained residual may save ``prior_params`` as the path of a parameter file: the course's
    overrides go over that file's values, not over the path string."""
    from types import SimpleNamespace

    from upright.eval.experiments import ExperimentContext
    from upright.eval.experiments import obstacle_course
    from upright.policies import run as run_module
    from upright.policies.run import run_env_kwargs

    saved = tmp_path / "best.yaml"
    saved.write_text("player.max_step_forward: 0.07\n")
    name = "nao-walk-residual-step_adjust"
    trained = {**run_env_kwargs(f"zoo:{name}"), "prior_params": str(saved)}
    monkeypatch.setattr(run_module, "run_env_kwargs", lambda policy: trained)
    seen = {}

    def run(env_id, policy, env_kwargs, runs, **_):
        seen.update(env_kwargs)
        return SimpleNamespace(records=[])

    ctx = ExperimentContext(out=tmp_path, progress=False)
    monkeypatch.setattr(ctx, "run", run)
    obstacle_course.run_column(ctx, name, 0.25, 1)
    assert seen["prior_params"]["player.max_step_forward"] == 0.07
    assert seen["prior_params"]["step_adjustment"] is True and seen["prior"] == trained["prior"]
