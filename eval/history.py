"""The record of every training run, kept after the run folders (``runs/``, not committed) are
gone: ``docs/results/training/runs.csv``, one row per run (what it trained, for how long, its
selection numbers, the prior on the same episodes, whether it was shipped, the command), and
``curves.csv``, every run's periodic evaluations (the rows of its ``learning_curve.csv`` under the
run's name). ``upright history --add RUN_DIR`` records a finished run folder; ``upright history
--docs`` writes the generated page ``docs/results/training-runs.md`` and the learning-curve
pictures that ``curves.yaml`` groups (residual against scratch, one PNG per group). The command
reads and writes the record under ``--docs-dir`` (:func:`record_paths`; default ``docs/results``
of the current directory), never inside the installed package.

    upright history --add runs/NaoGetUp-v0/ppo-keyframe-1 --verdict "not shipped: below the prior"
    upright history --docs
    upright history --docs-dir my-project/docs/results --add runs/NaoGetUp-v0/ppo-keyframe-1
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import yaml

from upright.eval.learning_curves import Curve, plot_curve_comparison
from upright.eval.results import summary_numbers
from upright.eval.tables import Column, Table, number, text
from upright.policies.run_folder import CURVE_COLUMNS, SELECTION_FILE, load_run_config, read_learning_curve

#: The source tree's root: the committed record lives in its ``docs/`` (an installed package has
#: none, and then no record to draw from). The command line reads and writes ``--docs-dir`` instead.
ROOT = Path(__file__).resolve().parents[1]
#: The committed record's folder.
HISTORY = ROOT / "docs" / "results" / "training"
#: The committed generated page of every run.
PAGE = ROOT / "docs" / "results" / "training-runs.md"
#: Where ``upright history`` keeps the record unless told otherwise: the current project's pages.
DEFAULT_DOCS_DIR = Path("docs", "results")


def record_paths(docs_dir: str | Path = DEFAULT_DOCS_DIR) -> tuple[Path, Path]:
    """The record's folder (``docs_dir/training``: ``runs.csv``, ``curves.csv``, ``curves.yaml``
    and the pictures) and its generated page (``docs_dir/training-runs.md``)."""
    docs_dir = Path(docs_dir)
    return docs_dir / "training", docs_dir / "training-runs.md"
#: The columns of ``runs.csv``. ``round``: the group of runs it was made with (runs of one round
#: answered the same question); ``changed``: what it changed against the runs before it;
#: ``selection`` and ``checkpoint_selection``: its numbers on the selection seeds as judged when it
#: ran; ``verdict``: what became of it; ``shipped``: the zoo entry and checkpoint, if any; the
#: ``prior_*`` numbers: the prior alone on the run's periodic-evaluation episodes.
RUN_FIELDS = ("name", "round", "env", "conditions", "start", "prior", "algo", "seed", "steps", "n_envs",
              "eval_episodes", "wall_clock_min", "changed", "selection", "checkpoint_selection", "verdict",
              "shipped", "prior_episodes", "prior_success_rate", "prior_stood_up_rate", "prior_fall_rate",
              "prior_linear_tracking_error", "prior_yaw_tracking_error", "imitation_teacher",
              "imitation_seconds", "code", "command")


def read_runs(directory: Path = HISTORY) -> list[dict[str, str]]:
    """The rows of ``directory/runs.csv`` as text, in the file's order ([] without the file)."""
    path = directory / "runs.csv"
    if not path.is_file():
        return []
    with path.open(newline="") as file:
        return list(csv.DictReader(file))


def read_curves(directory: Path = HISTORY) -> dict[str, list[dict[str, float | None]]]:
    """Each run's periodic evaluations from ``directory/curves.csv`` (numbers, None for empty cells)."""
    path = directory / "curves.csv"
    curves: dict[str, list[dict[str, float | None]]] = {}
    if not path.is_file():
        return curves
    with path.open(newline="") as file:
        for row in csv.DictReader(file):
            name = row.pop("run")
            curves.setdefault(name, []).append({k: float(v) if v != "" else None for k, v in row.items()})
    return curves


def run_record(run_dir: str | Path, *, verdict: str = "", shipped: str = "", changed: str = "",
               round_: int | None = None) -> tuple[dict[str, Any], list[dict[str, float | None]]]:
    """A run folder's row of ``runs.csv`` and its evaluations for ``curves.csv``: from its
    ``config.yml``, ``command.txt``, ``learning_curve.csv`` (steps and wall-clock of its last
    evaluation), the prior's evaluation ``eval/prior/results.json``, ``selection.json`` and
    ``imitation.json`` where they exist. ValueError for a folder that is no run or has no evaluation."""
    run_dir = Path(run_dir)
    config = load_run_config(run_dir)
    curve = read_learning_curve(run_dir / "learning_curve.csv")
    if not curve:
        raise ValueError(f"run {str(run_dir)!r} has no evaluation in learning_curve.csv to record")
    start = config.env_kwargs.get("start", "")
    row: dict[str, Any] = {
        "name": run_dir.name, "round": round_ if round_ is not None else "", "env": config.env_id.split("/")[-1],
        "conditions": config.env_kwargs.get("conditions", ""),
        "start": ",".join(start) if isinstance(start, (list, tuple)) else start,
        "prior": config.prior or "", "algo": config.algo, "seed": config.seed, "steps": int(curve[-1]["steps"]),
        "n_envs": config.n_envs, "eval_episodes": config.eval_episodes,
        "wall_clock_min": round(float(curve[-1]["wall_seconds"]) / 60.0, 1), "changed": changed,
        "selection": "", "checkpoint_selection": "", "verdict": verdict, "shipped": shipped,
        "code": config.code,
        "command": " ; ".join(line.strip() for line in (run_dir / "command.txt").read_text().splitlines()
                              if line.strip() and not line.startswith("#")),
    }
    prior_file = run_dir / "eval" / "prior" / "results.json"
    if prior_file.is_file():
        prior = json.loads(prior_file.read_text())
        numbers = summary_numbers(prior)
        row["prior_episodes"] = prior["episodes"]
        for key in ("success_rate", "stood_up_rate", "fall_rate", "linear_tracking_error", "yaw_tracking_error"):
            row[f"prior_{key}"] = numbers[key]
    selection_file = run_dir / SELECTION_FILE
    if selection_file.is_file():
        selection = json.loads(selection_file.read_text())
        row["checkpoint_selection"] = (f"checkpoint-selection: {selection['steps'] // 1000} k chosen, "
                                       f"{_selection_numbers(selection)} on {selection['episodes']} episodes "
                                       f"from seed {selection['seed']}")
    imitation_file = run_dir / "imitation.json"
    if imitation_file.is_file():
        imitation = json.loads(imitation_file.read_text())
        row["imitation_teacher"], row["imitation_seconds"] = imitation["teacher"], imitation["seconds"]
    return {field: "" if row.get(field) is None else row.get(field, "") for field in RUN_FIELDS}, curve


def _selection_numbers(selection: dict[str, Any]) -> str:
    """The rates of a ``selection.json`` as text (``success 0.93, stood_up 0.94``)."""
    return ", ".join(f"{key.removesuffix('_rate')} {selection[key]:.3g}" for key in
                     ("success_rate", "stood_up_rate", "fall_rate", "linear_tracking_error", "yaw_tracking_error")
                     if selection.get(key) is not None)


def add_run(run_dir: str | Path, directory: Path = HISTORY, **record: Any) -> dict[str, Any]:
    """Append the run folder ``run_dir`` to ``directory/runs.csv`` and ``curves.csv`` (see
    :func:`run_record` for ``record``) and return its row; ValueError when a run of that name is
    recorded already."""
    row, curve = run_record(run_dir, **record)
    if any(r["name"] == row["name"] for r in read_runs(directory)):
        raise ValueError(f"a run named {row['name']!r} is recorded already in {directory / 'runs.csv'}")
    directory.mkdir(parents=True, exist_ok=True)
    for name, fields, rows in (("runs.csv", RUN_FIELDS, [row]),
                               ("curves.csv", ("run", *CURVE_COLUMNS), [{"run": row["name"], **r} for r in curve])):
        path = directory / name
        new = not path.is_file()
        with path.open("a", newline="") as file:
            writer = csv.DictWriter(file, fields, lineterminator="\n", extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerows({k: "" if v is None else v for k, v in r.items()} for r in rows)
    return row


def curve_metric(curve: list[dict[str, float | None]], run: dict[str, str]) -> str:
    """The rate a run is judged on: ``fall_rate`` for a walk, else the strict ``success_rate``, or
    ``stood_up_rate`` where neither the run nor its prior ever succeeded strictly (Wolfgang under a
    force that keeps its IMU moving)."""
    if any(r.get("fall_rate") is not None for r in curve):
        return "fall_rate"
    if any(r.get("success_rate") for r in curve) or float(run["prior_success_rate"] or 0.0) > 0.0:
        return "success_rate"
    return "stood_up_rate"


def _steps(value: float) -> str:
    """Environment steps as ``900 k`` or ``1.2 M``."""
    return f"{value / 1e6:.3g} M" if value >= 1e6 else f"{value / 1e3:.0f} k"


def periodic_summary(curve: list[dict[str, float | None]], run: dict[str, str]) -> str:
    """The best and the last periodic evaluation on the run's metric (``falls 0.05 at 300 k, last 0.10``)."""
    metric = curve_metric(curve, run)
    rows = [r for r in curve if r.get(metric) is not None]
    if not rows:
        return "no evaluation"
    best = min(rows, key=lambda r: r[metric]) if metric == "fall_rate" else max(rows, key=lambda r: r[metric])
    label = {"fall_rate": "fall rate", "success_rate": "success", "stood_up_rate": "stood up"}[metric]
    return f"{label} {best[metric]:.2f} at {_steps(best['steps'])}, last {rows[-1][metric]:.2f} at {_steps(rows[-1]['steps'])}"


def prior_summary(curve: list[dict[str, float | None]], run: dict[str, str]) -> str | None:
    """The prior alone on the same episodes, on the run's metric (None without a prior)."""
    value = run.get(f"prior_{curve_metric(curve, run)}", "")
    return None if value == "" else f"{float(value):.2f} of {run['prior_episodes']}"


def runs_tables(runs: list[dict[str, str]], curves: dict[str, list[dict[str, float | None]]],
                anchors: bool = False) -> list[Table]:
    """The table of every run and the table of their commands; with ``anchors`` (the Markdown page)
    each run's row carries an HTML anchor of its name, so other pages link to
    ``training-runs.md#NAME``."""
    rows = []
    for run in runs:
        curve = curves.get(run["name"], [])
        name = f"`{run['name']}`"
        rows.append({**run, "environment": ", ".join(v for v in (run["env"], run["conditions"], run["start"]) if v),
                     "prior": run["prior"] or "none (scratch)", "steps": int(run["steps"]),
                     "wall_clock_min": float(run["wall_clock_min"]), "periodic": periodic_summary(curve, run),
                     "prior_alone": prior_summary(curve, run),
                     "name": f'<a id="{run["name"]}"></a>{name}' if anchors else name, "run": name,
                     "command": f"`{run['command']}`"})
    notes = ("Periodic: the evaluations during training on the run's `eval_episodes` selection episodes (seeds "
             "from 1000000; get-up: success, or the stood-up rate where no policy succeeds strictly; walk: the "
             "share of walks with a fall), the best and the last. Prior alone: the prior with a zero residual on "
             "the same episodes. Selection and checkpoint selection: the numbers as judged when the run was made. "
             "Wall-clock: minutes to the last evaluation, with other work sharing the machine.")
    runs_table = Table("Every training run", [
        Column("run", "name"), Column("round", "round"), Column("environment, conditions, starts", "environment"),
        Column("prior", "prior"), Column("algo", "algo"), Column("steps", "steps", number(0)),
        Column("wall-clock (min)", "wall_clock_min", number(1)), Column("what it changed", "changed"),
        Column("periodic", "periodic"), Column("prior alone", "prior_alone"),
        Column("selection", "selection"), Column("checkpoint selection", "checkpoint_selection"),
        Column("verdict", "verdict"), Column("shipped", "shipped")], rows, notes)
    commands = Table("Commands", [Column("run", "run"), Column("command", "command", text)], rows,
                     "A resumed run's later commands follow its first, separated by ` ; `.")
    return [runs_table, commands]


def curve_groups(directory: Path = HISTORY) -> dict[str, dict[str, Any]]:
    """The picture groups of ``directory/curves.yaml`` ({} without the file: no pictures)."""
    path = directory / "curves.yaml"
    return (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}


def draw_learning_curves(out: Path, directory: Path = HISTORY) -> list[Path]:
    """Draw each group of ``curves.yaml`` into ``out/<group>.png`` from the recorded curves and
    return the paths; a group none of whose runs is recorded (an installed package without
    ``docs/``) is skipped. An entry ``{run, after, at_steps}`` is a fine-tuning run, drawn shifted
    by the steps and wall-clock that the run ``after`` had at its evaluation ``at_steps``."""
    runs = {run["name"]: run for run in read_runs(directory)}
    if not runs:
        return []
    curves = read_curves(directory)
    paths = []
    for name, group in curve_groups(directory).items():
        drawn = {label: [_curve(entry, runs, curves, group["metric"]) for entry in entries]
                 for label, entries in group["runs"].items()}
        paths.append(plot_curve_comparison(group["title"], drawn, out / f"{name}.png", metric=group["metric"]))
    return paths


def _curve(entry: str | dict[str, Any], runs: dict[str, dict[str, str]],
           curves: dict[str, list[dict[str, float | None]]], metric: str) -> Curve:
    """The :class:`Curve` of a ``curves.yaml`` entry (a run's name, or ``{run, after, at_steps}``)."""
    name = entry if isinstance(entry, str) else entry["run"]
    if name not in runs:
        raise ValueError(f"curves.yaml names the run {name!r}, which is not in runs.csv")
    run = runs[name]
    steps = seconds = 0.0
    if isinstance(entry, dict):
        rows = [r for r in curves.get(entry["after"], []) if r["steps"] == entry["at_steps"]]
        if not rows:
            raise ValueError(f"{entry['after']}: no evaluation at {entry['at_steps']} steps")
        steps, seconds = float(entry["at_steps"]), float(rows[0]["wall_seconds"])
    prior = run.get(f"prior_{metric}", "")
    return Curve(name, curves.get(name, []), int(run["eval_episodes"]),
                 None if prior == "" else (float(prior), int(run["prior_episodes"])), steps, seconds)


def write_docs(page: Path = PAGE, directory: Path = HISTORY, command: str = "upright history --docs",
               pictures: bool = True) -> list[Path]:
    """Write ``page`` (the tables of :func:`runs_tables`) and, with ``pictures``, the learning
    curves into ``directory``; return the paths."""
    tables = runs_tables(read_runs(directory), read_curves(directory), anchors=True)
    lines = ["# Training runs", "", f"Generated by `{command}` from [runs.csv](training/runs.csv) (one row per run) "
             "and [curves.csv](training/curves.csv) (every periodic evaluation); what they taught: "
             "[docs/findings.md](../findings.md).", ""]
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text("\n".join(lines + [t.markdown() for t in tables]))
    return [page, *(draw_learning_curves(directory, directory) if pictures else [])]


__all__ = ["DEFAULT_DOCS_DIR", "HISTORY", "PAGE", "RUN_FIELDS", "add_run", "curve_groups", "curve_metric",
           "draw_learning_curves", "periodic_summary", "prior_summary", "read_curves", "read_runs", "record_paths",
           "run_record", "runs_tables", "write_docs"]
