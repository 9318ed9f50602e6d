"""``turf-equivalence``: is the turf with a coarser collision field the same turf? Cells in ``turf.yaml``.

The turf's bumps are drawn on a 2 cm grid; ``Conditions.turf_cell`` sets the cell of the height
field MuJoCo collides with (the drawn heights at its vertices, linear in between). This protocol
runs every baseline on the turf once per collision cell of ``turf_cells`` (default 2 cm, the draw
grid itself, as the reference, and 4 cm), on the same seeds, and compares:

* the surfaces themselves (:func:`surface_statistics`): heights, slopes, correlation length and
  the relief under a foot of the field MuJoCo gets, evaluated on the 2 cm grid, and how far the
  coarser surface lies from the reference surface of the same seed;
* get-up (``keyframe`` on NAO, ``spline`` on Wolfgang, ``start`` random): success (95 % Wilson
  interval) and time to stand (mean, 95 % t interval over the successful episodes);
* walking (``lipm`` and ``step_adjust`` on both robots at one command): linear and yaw tracking
  error, episodes with a fall, forward speed (each episode's mean heading-frame velocity).

Two verdicts per row against the reference row of its cell: ``same`` when each of its point
estimates lies within the reference row's 95 % interval (else the outcomes that moved), and
whether the 95 % interval of the difference (Welch t for means, Newcombe's score interval for
rates) excludes 0. With independent samples of one distribution the first check fails for a
single mean about one time in six (the difference of two means exceeds 1.96/√2 of its standard
error that often), so a few ``moved`` among many outcomes is expected by chance; the difference
interval fails one time in twenty. ``only`` picks cells by name, ``turf_cells`` the
collision cells (the first is the reference).

    upright experiment turf-equivalence --seed 1000 --out results/turf-equivalence --docs
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from upright.envs.conditions import get_conditions
from upright.envs.registration import env_id
from upright.envs.robots import ROBOT_NAMES
from upright.envs.simulation import Simulation
from upright.envs.terrain import TURF_CELLS, TURF_HALF_SIZE, turf_stride
from upright.eval.experiments import ExperimentContext, protocol_data, register_experiment
from upright.eval.tables import Column, Table, number, rate, wilson_interval

DATA = protocol_data(__name__)
GETUP, WALK, SURFACE = DATA["getup"], DATA["walk"], DATA["surface"]
CELLS = {**GETUP["cells"], **WALK["cells"]}


def t_interval(values: Sequence[float], confidence: float = 0.95) -> dict[str, float | int | None]:
    """Mean of ``values`` with its two-sided Student t interval (None bounds below two values)."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    if n == 0:
        return {"mean": None, "low": None, "high": None, "n": 0}
    mean = float(values.mean())
    if n < 2:
        return {"mean": mean, "low": None, "high": None, "n": 1}
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * values.std(ddof=1) / math.sqrt(n))
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": n}


def mean_interval(digits: int = 3) -> Any:
    """A format for :func:`t_interval`'s mapping: ``mean [low, high]`` (n)."""
    def cell(value: Mapping[str, Any] | None) -> str:
        if value is None or value["mean"] is None:
            return "—"
        if value["low"] is None:
            return f"{value['mean']:.{digits}f} (n 1)"
        return f"{value['mean']:.{digits}f} [{value['low']:.{digits}f}, {value['high']:.{digits}f}] (n {value['n']})"

    return cell


def _inside(value: Any, reference: Any) -> bool:
    """Whether ``value``'s point estimate lies within ``reference``'s 95 % interval: rates as
    ``(k, n)`` (Wilson), means as :func:`t_interval` mappings (a missing interval counts as the
    point itself)."""
    if isinstance(value, (tuple, list)):
        lo, hi = wilson_interval(*reference)
        return lo <= value[0] / value[1] <= hi
    if value["mean"] is None or reference["mean"] is None:
        return value["mean"] is None and reference["mean"] is None
    if reference["low"] is None:
        return value["mean"] == reference["mean"]
    return reference["low"] <= value["mean"] <= reference["high"]


def difference_interval(value: Any, reference: Any, samples: tuple[Sequence[float], Sequence[float]] | None = None
                        ) -> tuple[float, float] | None:
    """95 % interval of ``value`` − ``reference``: for rates ``(k, n)`` Newcombe's hybrid score
    interval (from the two Wilson intervals), for means Welch's t interval from the two
    ``samples``; None where a side has fewer than two values."""
    if isinstance(value, (tuple, list)):
        (k1, n1), (k2, n2) = value, reference
        p1, p2 = k1 / n1, k2 / n2
        (l1, u1), (l2, u2) = wilson_interval(k1, n1), wilson_interval(k2, n2)
        d = p1 - p2
        return d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    a, b = (np.asarray(x, dtype=float) for x in samples)
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    if se == 0.0:
        return (float(a.mean() - b.mean()),) * 2
    dof = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    half = float(stats.t.ppf(0.975, dof)) * se
    d = float(a.mean() - b.mean())
    return d - half, d + half


def _verdicts(rows: list[dict[str, Any]], keys: Sequence[str]) -> None:
    """Add ``verdict`` and ``difference`` to every row: ``reference`` for each cell's first row;
    else ``same`` when every outcome's point estimate lies within the reference row's 95 %
    interval, or the outcomes that left it; ``difference`` says which outcomes' 95 % interval of
    the difference from the reference excludes 0 (``none`` when all include it). Rows keep their
    per-episode values under ``samples``."""
    reference: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["cell"] not in reference:
            reference[row["cell"]] = row
            row["verdict"] = row["difference"] = "reference"
            continue
        ref = reference[row["cell"]]
        moved = [key for key in keys if not _inside(row[key], ref[key])]
        row["verdict"] = "same" if not moved else "moved: " + ", ".join(moved)
        differs = []
        for key in keys:
            interval = difference_interval(row[key], ref[key], (row["samples"].get(key, ()), ref["samples"].get(key, ())))
            row[f"{key}_difference"] = interval
            if interval is not None and not interval[0] <= 0.0 <= interval[1]:
                differs.append(key)
        row["difference"] = "none" if not differs else ", ".join(differs)


def surface_on_draw_grid(heights: np.ndarray, stride: int) -> np.ndarray:
    """A collision field's surface at the vertices of the draw grid: ``heights`` (rows along y,
    columns along x) at every ``stride``-th draw vertex, interpolated as MuJoCo's height field is,
    linearly over the two triangles of each cell split along the diagonal from (row, col) to
    (row + 1, col + 1)."""
    if stride == 1:
        return heights.copy()
    rows, cols = heights.shape
    out = np.empty(((rows - 1) * stride + 1, (cols - 1) * stride + 1))
    g00, g10, g01, g11 = heights[:-1, :-1], heights[1:, :-1], heights[:-1, 1:], heights[1:, 1:]
    for a in range(stride):  # along y (rows)
        for b in range(stride):  # along x (columns)
            u, v = b / stride, a / stride
            if v >= u:
                value = g00 + u * (g11 - g10) + v * (g10 - g00)
            else:
                value = g00 + u * (g01 - g00) + v * (g11 - g01)
            out[a:-1:stride, b:-1:stride] = value
    out[-1, ::stride] = heights[-1]
    out[::stride, -1] = heights[:, -1]
    # the last row and column between vertices: linear along the edge
    for k in range(1, stride):
        out[-1, k::stride][: cols - 1] = heights[-1, :-1] + k / stride * (heights[-1, 1:] - heights[-1, :-1])
        out[k::stride, -1][: rows - 1] = heights[:-1, -1] + k / stride * (heights[1:, -1] - heights[:-1, -1])
    return out


def _turf_surface(conditions: Any, seed: int) -> np.ndarray:
    """The turf surface (m above its valleys) of ``conditions`` drawn from ``seed`` as MuJoCo gets
    it, on the 2 cm draw grid (the same for every robot: the field is the floor's)."""
    sim = Simulation(ROBOT_NAMES[0], conditions)
    sim.reset(seed=seed)
    model = sim.model
    hfield = model.hfield("turf")
    nrow, ncol = int(hfield.nrow[0]), int(hfield.ncol[0])
    start = int(model.hfield_adr[hfield.id])
    heights = model.hfield_data[start:start + nrow * ncol].reshape(nrow, ncol) * float(model.hfield_size[hfield.id][2])
    return surface_on_draw_grid(heights, turf_stride(conditions.turf_cell))


def _correlation_length(surface: np.ndarray, cell: float) -> float:
    """Lag (m) along x at which the surface's autocorrelation falls to 1/e (linear between lags)."""
    z = surface - surface.mean()
    variance = float(np.mean(z * z))
    previous = 1.0
    for lag in range(1, surface.shape[1] // 2):
        r = float(np.mean(z[:, :-lag] * z[:, lag:])) / variance
        if r < 1 / math.e:
            return (lag - 1 + (previous - 1 / math.e) / (previous - r)) * cell
        previous = r
    return float("nan")


def surface_statistics(turf_cells: Sequence[float], seeds: Sequence[int], half_size: float,
                       foot: Sequence[float]) -> list[dict[str, Any]]:
    """Per collision cell, means over ``seeds`` of the surface's statistics over the central
    ``half_size`` square (mm, degrees, cm): height std and percentiles above the valleys, RMS
    slope, correlation length, foot relief (highest point in a ``foot``-sized window above the
    window's mean, mean over the windows tiling the square) and the deviation from the first
    cell's surface of the same seed (RMS and largest)."""
    cell = 2 * TURF_HALF_SIZE / TURF_CELLS
    centre = slice(int(round((TURF_HALF_SIZE - half_size) / cell)), int(round((TURF_HALF_SIZE + half_size) / cell)) + 1)
    wy, wx = (int(round(f / cell)) + 1 for f in (foot[1], foot[0]))
    rows = []
    references = {}
    for turf_cell in turf_cells:
        conditions = get_conditions("turf").with_(turf_cell=turf_cell)
        values: dict[str, list[float]] = {}
        for seed in seeds:
            surface = _turf_surface(conditions, seed)
            references.setdefault(seed, surface)
            s = surface[centre, centre] * 1000.0  # mm
            gy, gx = np.gradient(s, cell * 1000.0)
            n0, n1 = (s.shape[0] // wy) * wy, (s.shape[1] // wx) * wx
            windows = s[:n0, :n1].reshape(n0 // wy, wy, n1 // wx, wx)
            relief = windows.max(axis=(1, 3)) - windows.mean(axis=(1, 3))
            deviation = (surface - references[seed])[centre, centre] * 1000.0
            for key, value in (
                ("std", s.std()), ("p1", np.percentile(s, 1)), ("p50", np.percentile(s, 50)),
                ("p99", np.percentile(s, 99)), ("max", s.max()),
                ("slope", np.degrees(np.arctan(np.sqrt(np.mean(gx * gx + gy * gy))))),
                ("correlation", 100.0 * _correlation_length(surface[centre, centre], cell)),
                ("relief", relief.mean()), ("deviation_rms", np.sqrt(np.mean(deviation ** 2))),
                ("deviation_max", np.abs(deviation).max()),
            ):
                values.setdefault(key, []).append(float(value))
        rows.append({"turf_cell": 100.0 * turf_cell, **{k: float(np.mean(v)) for k, v in values.items()}})
    return rows


@register_experiment("turf-equivalence",
                     "baselines and surface statistics on the turf with each collision cell, same seeds",
                     options={"only": tuple(CELLS), "turf_cells": tuple(DATA["turf_cells"])})
def turf_equivalence(ctx: ExperimentContext) -> list[Table]:
    """The surface table, then every get-up and walk cell of ``only`` once per collision cell of
    ``turf_cells`` (one results folder each, ``CELL-TURFCELLcm``)."""
    cells = ctx.options["turf_cells"]  # --set turf_cells=0.02 gives one number, 0.02,0.04 several
    turf_cells = (float(cells),) if isinstance(cells, (int, float)) else tuple(float(c) for c in cells)
    only = ctx.option_names("only", CELLS)
    tables = []
    seeds = range(ctx.seed, ctx.seed + int(SURFACE["seeds"]))
    surface = surface_statistics(turf_cells, seeds, float(SURFACE["half_size"]), SURFACE["foot"])
    mm = number(2)
    tables.append(Table("Turf surface per collision cell", [
        Column("cell (cm)", "turf_cell", number(0)), Column("height std (mm)", "std", mm),
        Column("1 % (mm)", "p1", mm), Column("median (mm)", "p50", mm), Column("99 % (mm)", "p99", mm),
        Column("max (mm)", "max", mm), Column("RMS slope (deg)", "slope", mm),
        Column("correlation length (cm)", "correlation", mm), Column("foot relief (mm)", "relief", mm),
        Column("from reference, RMS (mm)", "deviation_rms", number(3)),
        Column("from reference, max (mm)", "deviation_max", mm)], surface,
        notes=f"Means over seeds {seeds.start}..{seeds.stop - 1} of the surface MuJoCo collides with, evaluated "
              f"on the 2 cm draw grid over the central {2 * SURFACE['half_size']:g} m square: heights above the "
              "field's valleys; correlation length = lag where the autocorrelation along x falls to 1/e; foot "
              f"relief = highest point within a {SURFACE['foot'][0] * 100:g} × {SURFACE['foot'][1] * 100:g} cm "
              "window above the window's mean, mean over the windows; from reference = this surface minus the "
              "first cell's surface of the same seed."))

    getup_rows, walk_rows = [], []
    getup_episodes, walk_episodes = ctx.episodes_or(GETUP["episodes"]), ctx.episodes_or(WALK["episodes"])
    ctx.plan(len(turf_cells) * sum(walk_episodes if name in WALK["cells"] else getup_episodes for name in only))
    for name in only:
        spec = CELLS[name]
        walk = name in WALK["cells"]
        for turf_cell in turf_cells:
            conditions = get_conditions(spec["conditions"]).with_(turf_cell=turf_cell)
            label = f"{name}-{100 * turf_cell:g}cm"
            if walk:
                kwargs = {"conditions": conditions, "command": tuple(WALK["command"]),
                          "max_episode_seconds": float(WALK["seconds"])}
                result = ctx.run_cell(label, env_id(spec["robot"], "walk"), ctx.policy(spec["policy"]), kwargs,
                                      walk_episodes)
                records = result["episodes_data"]
                samples = {"linear": [r["linear_tracking_error"] for r in records],
                           "yaw": [r["yaw_tracking_error"] for r in records],
                           "speed": [r["mean_velocity"][0] for r in records]}
                walk_rows.append({
                    "cell": name, "turf_cell": 100 * turf_cell, "samples": samples,
                    **{key: t_interval(values) for key, values in samples.items()},
                    "fell": (sum(bool(r["falls"]) for r in records), len(records))})
            else:
                kwargs = {"conditions": conditions, "start": GETUP["start"]}
                result = ctx.run_cell(label, env_id(spec["robot"], "getup"), ctx.policy(spec["policy"]), kwargs,
                                      getup_episodes)
                records = result["episodes_data"]
                samples = {"time": [r["time_to_stand"] for r in records if r["success"]]}
                getup_rows.append({
                    "cell": name, "turf_cell": 100 * turf_cell, "samples": samples,
                    "success": (sum(bool(r["success"]) for r in records), len(records)),
                    "time": t_interval(samples["time"]),
                    "fell": (sum(int(r["falls"]) > 0 for r in records), len(records))})
    _verdicts(getup_rows, ("success", "time", "fell"))
    _verdicts(walk_rows, ("linear", "yaw", "fell", "speed"))
    if getup_rows:
        tables.append(Table("Get-up on the turf per collision cell", [
            Column("cell", "cell"), Column("collision cell (cm)", "turf_cell", number(0)),
            Column("success", "success", rate), Column("time to stand (s), mean [95 % t]", "time", mean_interval(2)),
            Column("episodes with a fall", "fell", rate), Column("point within reference interval", "verdict"),
            Column("difference excludes 0", "difference")], getup_rows,
            notes=f"{getup_episodes} episodes per row, start {GETUP['start']}, seeds {ctx.seed}.."
                  f"{ctx.seed + getup_episodes - 1} (the same for every collision cell)."))
    if walk_rows:
        tables.append(Table("Walking on the turf per collision cell", [
            Column("cell", "cell"), Column("collision cell (cm)", "turf_cell", number(0)),
            Column("linear tracking error (m/s)", "linear", mean_interval(4)),
            Column("yaw tracking error (rad/s)", "yaw", mean_interval(4)),
            Column("episodes with a fall", "fell", rate), Column("forward speed (m/s)", "speed", mean_interval(4)),
            Column("point within reference interval", "verdict"), Column("difference excludes 0", "difference")],
            walk_rows,
            notes=f"{walk_episodes} episodes of {WALK['seconds']:g} s per row at command "
                  f"{', '.join(f'{c:g}' for c in WALK['command'])} (vx m/s, vy m/s, yaw rad/s), seeds {ctx.seed}.."
                  f"{ctx.seed + walk_episodes - 1} (the same for every collision cell); means with 95 % t "
                  "intervals, rates with 95 % Wilson intervals."))
    return tables
