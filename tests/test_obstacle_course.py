"""The obstacle-course experiment: the falls table, the paired comparison against Old, and one
real run across the course."""

from __future__ import annotations

import pytest
from upright.eval import obstacle_course as oc


def _run(configuration: str, seed: int, obstacles: list[str]) -> dict:
    return {"configuration": configuration, "speed": 0.25, "seed": seed, "reached_end": True,
            "falls": [{"obstacle": name, "direction": "forward"} for name in obstacles]}


RUNS = [_run("Old", 0, ["3 mm edge", "3 mm edge"]), _run("Old", 1, ["6 mm wooden blocks"]), _run("Old", 2, []),
        _run("New", 0, []), _run("New", 1, ["6 mm wooden blocks"]), _run("New", 2, [])]
COLUMNS = [("Old", 0.25), ("New", 0.25)]


def test_falls_table_counts_per_obstacle_and_column():
    rows = {row[0]: row[1:] for row in oc.falls_table(RUNS, COLUMNS)}
    assert rows["3 mm edge"] == ["2", "0", "2"]
    assert rows["6 mm wooden blocks"] == ["1", "1", "2"]
    assert rows["sum"] == ["3", "1", "4"]
    assert rows["runs reaching the end"] == ["3/3", "3/3", ""]


def test_comparison_pairs_the_same_robots_against_old():
    (row,) = oc.against_old(RUNS, COLUMNS)
    assert row[0] == "New 250 mm/s"
    assert row[1] == "0.33 (Old 1.00)"
    assert row[2] == "-67%"
    assert 0.0 < float(row[3]) <= 1.0
    assert row[4] == "1 / 0 (Old 3 / 0)"
    assert row[5] == "3"
    ties = [_run("Old", 0, ["3 mm edge"]), _run("New", 0, ["first 6 mm edge"])]
    assert oc.against_old(ties, COLUMNS)[0][3] == "–"  # every pair ties: no test


def test_a_real_run_crosses_the_course_and_records_each_fall_at_an_obstacle():
    result = oc.run_course("New", 0.25, seed=0)
    names = {ob.name for ob in oc.OBSTACLE_COURSE} | {"beyond the course"}
    assert result["seconds"] > oc.COURSE_END / 0.25 * 0.5
    assert result["reached_end"]
    assert all(f["obstacle"] in names and f["direction"] in ("forward", "backward", "left", "right")
               for f in result["falls"])


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match="runs"):
        oc.main(["--runs", "0"])
