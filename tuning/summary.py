"""A study's summary: best trial, Pareto front, the paper's Figure 4 measures, exported parameters
and Optuna's plots (matplotlib) as PNG.

Files written to the output folder:

* ``best_params.yaml``: the best trial's searched parameters as controller overrides (dotted keys,
  controller units: m, s, rad), loadable by ``upright eval --policy NAME --params FILE``,
  ``ControllerPolicy(NAME, params=upright.envs.residual.load_params_file(FILE))`` and
  ``gym.make(..., prior=NAME, prior_params=FILE)``; the header comments say where it came from.
  The parameters held fixed during the optimisation are not in it (listed in the header).
* ``summary.json`` / ``summary.md``: the tables below with raw values;
* ``trials.csv``: every trial (number, state, values, components, successes, parameters);
* ``history.png``, ``importance.png`` and, for two or three objectives, ``pareto.png``.

"Best": the single-objective study's best trial; for MOTPE the Pareto-front trial with the most
successful repetitions, then the shortest time (the paper's choice "first success rate, then speed").
"""

from __future__ import annotations

import csv
import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import yaml
from optuna.trial import FrozenTrial, TrialState

from upright.eval.tables import Column, Table, jsonable, number, text
from upright.tuning.plan import Plan
from upright.tuning.storage import retried_trial, shown_storage


def _complete(study: optuna.Study) -> list[FrozenTrial]:
    return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))


def _time(trial: FrozenTrial) -> float:
    times = trial.user_attrs.get("settle_times") or []
    return float(np.mean(times)) if times else math.inf


def _all_success(trial: FrozenTrial) -> bool:
    return trial.user_attrs.get("episodes", 0) > 0 and trial.user_attrs.get("successes") == trial.user_attrs["episodes"]


def best_trial(study: optuna.Study) -> FrozenTrial | None:
    """The study's best trial (see the module docstring), None before any complete trial."""
    complete = _complete(study)
    if not complete:
        return None
    if len(study.directions) == 1:
        return study.best_trial
    front = study.best_trials
    return min(front, key=lambda t: (-t.user_attrs.get("successes", 0), _time(t), sum(t.values)))


def paper_measures(study: optuna.Study) -> dict[str, Any]:
    """Figure 4's measures over the study's trials in order (1-based counts): trials to the first
    trial with at least one successful repetition (the paper's TTS), to the first with all
    repetitions successful, and the best mean settle time (s) among fully successful trials."""
    trials = sorted(_complete(study), key=lambda t: t.number)
    first_any = next((i + 1 for i, t in enumerate(trials) if t.user_attrs.get("successes", 0) > 0), None)
    first_all = next((i + 1 for i, t in enumerate(trials) if _all_success(t)), None)
    times = [_time(t) for t in trials if _all_success(t)]
    return {"trials": len(trials), "tts_any": first_any, "tts_all": first_all,
            "best_time_all_success": min(times) if times else None}


def export_params(trial: FrozenTrial, plan: Plan, path: Path) -> None:
    """Write ``trial``'s parameters as a loadable YAML (controller units) with a provenance header."""
    specs = {p.name: p for p in plan.space.params}
    values = {name: float(specs[name].to_controller(v)) if name in specs else v for name, v in trial.params.items()}
    env_line = ", ".join(f"{k}={v}" for k, v in plan.env_kwargs.items())
    header = [
        f"# Best parameters of study {plan.study_name!r} (upright optimize), trial {trial.number}.",
        f"# controller {plan.config.controller}, robot {plan.config.robot}, environment {plan.env_id} ({env_line});",
        f"# sampler {plan.config.sampler}, objective {plan.objective_letters} = "
        f"{', '.join(f'{k} {v:.2f}' for k, v in (trial.user_attrs.get('components') or {}).items())};",
        f"# {trial.user_attrs.get('successes', 0)}/{trial.user_attrs.get('episodes', 0)} repetitions stood up/succeeded.",
        "# Units: the controller's (m, s, rad). Use it with:",
        f"#   upright eval --env {plan.env_id} --policy {plan.config.controller} --params best_params.yaml",
        f"#   gym.make({plan.env_id!r}, prior={plan.config.controller!r}, prior_params='best_params.yaml')",
    ]
    if plan.fixed:
        header.append("# Held fixed during the optimisation, NOT included here: "
                      + ", ".join(f"{k}={v}" for k, v in plan.fixed.items()))
    path.write_text("\n".join(header) + "\n" + yaml.safe_dump(values, sort_keys=False))


def write_trials_csv(study: optuna.Study, path: Path, numbers: str = "components",
                     attrs: tuple[str, ...] = ("successes", "episodes")) -> None:
    """Every trial of ``study`` as a row of ``path``: number, state, values, the entries of its
    user attribute ``numbers`` (a dict), its user attributes ``attrs``, worker, the trial it
    retries, and its parameters."""
    trials = study.get_trials(deepcopy=False)
    params = sorted({k for t in trials for k in t.params})
    comp_names = sorted({k for t in trials for k in (t.user_attrs.get(numbers) or {})})
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["number", "state", "values", *comp_names, *attrs, "worker", "retry_of", *params])
        for t in trials:
            comps = t.user_attrs.get(numbers) or {}
            w.writerow([t.number, t.state.name, " ".join(f"{v:.4g}" for v in (t.values or [])),
                        *[comps.get(k, "") for k in comp_names], *[t.user_attrs.get(k, "") for k in attrs],
                        t.user_attrs.get("worker", ""), _retry_of(t), *[t.params.get(k, "") for k in params]])


def _retry_of(trial: FrozenTrial) -> int | str:
    """The number of the failed trial ``trial`` retries, or ""."""
    number = retried_trial(trial)
    return "" if number is None else number


def write_plots(study: optuna.Study, out: Path, names: list[str], label: str) -> dict[str, str]:
    """Optuna's matplotlib plots as PNG of a study with the objectives ``names`` (one name: a
    single-objective study) written ``label`` (several objectives are plotted as their sum);
    returns {file: "" or the reason it was skipped}."""
    import matplotlib  # matplotlib: only when a figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as ovm

    notes: dict[str, str] = {}
    multi = len(study.directions) > 1
    target = (lambda t: float(sum(t.values))) if multi else None
    target_name = f"sum of {label}" if multi else label
    jobs = {
        "history.png": lambda: ovm.plot_optimization_history(study, target=target, target_name=target_name),
        "importance.png": lambda: ovm.plot_param_importances(study, target=target, target_name=target_name),
    }
    if multi and len(names) in (2, 3):
        jobs["pareto.png"] = lambda: ovm.plot_pareto_front(study, target_names=names)
    elif multi:
        notes["pareto.png"] = f"not drawn: Optuna plots Pareto fronts of 2 or 3 objectives, this study has {len(names)}"
    for name, job in jobs.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ax = job()
            fig = ax.figure if hasattr(ax, "figure") else np.ravel(ax)[0].figure
            fig.set_size_inches(8, 5)
            fig.tight_layout()
            fig.savefig(out / name, dpi=100)
            plt.close(fig)
            notes[name] = ""
        except (ValueError, RuntimeError, ZeroDivisionError) as error:  # too few trials, constant params
            notes[name] = f"not drawn: {error}"
            plt.close("all")
    return notes


def summarize(study: optuna.Study, plan: Plan) -> dict[str, Any]:
    """The study's numbers: counts per state, the best trial, the Pareto front, Figure 4's measures."""
    trials = study.get_trials(deepcopy=False)
    states = {s.name.lower(): sum(t.state == s for t in trials) for s in TrialState}
    best = best_trial(study)
    multi = len(study.directions) > 1

    def row(t: FrozenTrial) -> dict[str, Any]:
        return {"number": t.number, "values": list(t.values or []), "components": t.user_attrs.get("components"),
                "successes": t.user_attrs.get("successes"), "episodes": t.user_attrs.get("episodes"),
                "time": None if math.isinf(_time(t)) else _time(t), "hand_tuned": bool(t.user_attrs.get("hand_tuned")),
                "params": dict(t.params)}

    hand = next((t for t in _complete(study) if t.user_attrs.get("hand_tuned")), None)
    return {"study": plan.study_name, "storage": shown_storage(plan.storage),
            "identity": study.user_attrs.get("identity"), "objective": list(plan.objective), "states": states,
            "best": row(best) if best else None, "hand_tuned": row(hand) if hand else None,
            "pareto_front": [row(t) for t in sorted(study.best_trials, key=lambda t: t.number)] if multi and best else [],
            "measures": paper_measures(study)}


def write_summary(study: optuna.Study, plan: Plan, *, interrupted: bool = False) -> dict[str, Any]:
    """Write every file of the module docstring to ``plan.config.out``; returns the summary."""
    out = plan.config.out
    summary = summarize(study, plan)
    summary["interrupted"] = interrupted
    best = best_trial(study)
    if best is not None:
        export_params(best, plan, out / "best_params.yaml")
    write_trials_csv(study, out / "trials.csv")
    summary["plots"] = (write_plots(study, out, list(plan.objective), f"{plan.objective_letters} (sum)")
                        if summary["states"]["complete"] else {})
    comps = list(plan.objective)
    columns = [Column("", "label", text), Column("trial", "number"), Column("hand-tuned", "hand_tuned", text),
               Column("successes", "rate", text), Column("settle time (s)", "time_s", number(2))]
    columns += [Column(c, c, number(1)) for c in comps]
    rows = []
    for label, entry in (("best", summary["best"]), ("hand-tuned", summary["hand_tuned"])):
        if entry:
            rows.append({"label": label, "number": entry["number"], "hand_tuned": "yes" if entry["hand_tuned"] else "no",
                         "rate": f"{entry['successes']}/{entry['episodes']}", "time_s": entry["time"],
                         **(entry["components"] or {})})
    m = summary["measures"]
    tables = [
        Table(f"Study {plan.study_name}: best and hand-tuned trial", columns, rows,
              notes=f"{summary['states']['complete']} complete, {summary['states']['pruned']} pruned, "
                    f"{summary['states']['fail']} failed trials; storage {summary['storage']}"
                    + ("; interrupted" if interrupted else "")),
        Table("Figure 4 measures", [Column("trials", "trials"), Column("TTS (>= 1 success)", "tts_any"),
                                    Column("trials to all-repetition success", "tts_all"),
                                    Column("best time, all repetitions successful (s)", "best_time_all_success",
                                           number(2))], [m]),
    ]
    if summary["pareto_front"]:
        prow = [{"label": "front", "number": e["number"], "hand_tuned": "yes" if e["hand_tuned"] else "no",
                 "rate": f"{e['successes']}/{e['episodes']}", "time_s": e["time"], **(e["components"] or {})}
                for e in summary["pareto_front"]]
        tables.append(Table("Pareto front", columns, prow))
    summary["tables"] = [t.to_json() for t in tables]
    (out / "summary.json").write_text(json.dumps(jsonable(summary), indent=2) + "\n")
    (out / "summary.md").write_text("\n".join([f"# optimize {plan.study_name}", "", *[t.markdown() for t in tables]]))
    return summary


__all__ = ["best_trial", "export_params", "paper_measures", "summarize", "write_plots", "write_summary",
           "write_trials_csv"]
