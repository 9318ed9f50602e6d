"""``learning_curve.png`` of a run folder: the held-out evaluations of ``learning_curve.csv``
against environment steps and against wall-clock seconds, with the prior's own number on the same
seeds (``eval/prior/results.json``) as a dashed line. Get-up: success rate with its Wilson 95 %
interval and mean time to stand (s, over successes); walk: fall rate and linear tracking error
(m/s)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from upright.eval.results import summary_numbers
from upright.eval.tables import wilson_interval
from upright.policies.run_folder import read_learning_curve


def plot_learning_curve(run_dir: str | Path) -> Path:
    """Draw ``run_dir/learning_curve.png`` from ``run_dir/learning_curve.csv`` and return its path
    (ValueError when the run has no evaluation yet)."""
    import matplotlib  # matplotlib: only when a figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # matplotlib: only when a figure is drawn

    run_dir = Path(run_dir)
    rows = read_learning_curve(run_dir / "learning_curve.csv")
    if not rows:
        raise ValueError(f"run {str(run_dir)!r} has no evaluation in learning_curve.csv yet")
    prior_path = run_dir / "eval" / "prior" / "results.json"
    prior = summary_numbers(json.loads(prior_path.read_text())) if prior_path.is_file() else None
    getup = rows[0]["success_rate"] is not None
    panels = [("success_rate", "success rate"), ("time_to_stand", "time to stand (s)")] if getup else [("fall_rate", "fall rate"),
                                                             ("linear_tracking_error", "linear tracking error (m/s)")]
    fig, axes = plt.subplots(len(panels), 2, figsize=(10, 3.6 * len(panels)), squeeze=False)
    for (key, label), row_axes in zip(panels, axes):
        for ax, x_key, x_label in ((row_axes[0], "steps", "environment steps"),
                                   (row_axes[1], "wall_seconds", "wall-clock (s)")):
            x = [r[x_key] for r in rows]
            ax.plot(x, [r[key] for r in rows], "o-", label="policy")
            if key == "success_rate":
                ax.fill_between(x, [r["success_ci_low"] for r in rows], [r["success_ci_high"] for r in rows],
                                alpha=0.2, label="Wilson 95 %")
                ax.set_ylim(-0.02, 1.02)
            if prior is not None and prior[key] is not None:
                ax.axhline(prior[key], color="k", linestyle="--", label="prior alone")
            ax.set_xlabel(x_label)
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
        row_axes[0].legend(loc="best")
    fig.suptitle(f"{run_dir.parent.name}/{run_dir.name}: held-out evaluations ({len(rows)})")
    fig.tight_layout()
    path = run_dir / "learning_curve.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


@dataclass(frozen=True)
class Curve:
    """One run's periodic evaluations for :func:`plot_curve_comparison`: its ``name``, the
    ``rows`` of its learning curve, the ``eval_episodes`` of each evaluation (for the Wilson bands
    of the stood-up and fall rates; the rows hold only success's interval), the prior alone on the
    same episodes as ``(rate, episodes)`` on the plotted metric, and, for a run that continued
    another (fine-tuned from its model), the environment steps and wall-clock seconds that run had
    trained, by which the curve is shifted."""

    name: str
    rows: list[dict[str, float | None]]
    eval_episodes: int
    prior: tuple[float, int] | None = None
    offset_steps: float = 0.0
    offset_seconds: float = 0.0


def plot_curve_comparison(title: str, groups: dict[str, list[Curve]], path: str | Path,
                          metric: str = "success_rate") -> Path:
    """Draw the periodic evaluation's rate (``metric``: ``success_rate`` or ``stood_up_rate`` of a
    get-up, ``fall_rate`` of a walk: the share of episodes with a fall) of several runs
    (``groups``: a label, e.g. ``residual`` or ``scratch``, to the curves of its seeds) against
    environment steps and against wall-clock minutes into ``path``: one line per run with its
    Wilson 95 % band, one colour per group (after ten groups the colours repeat with another line
    style), and each distinct prior as a dashed line with its interval."""
    import matplotlib  # matplotlib: only when a figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # matplotlib: only when a figure is drawn

    if metric not in ("success_rate", "stood_up_rate", "fall_rate"):
        raise ValueError(f"metric must be success_rate, stood_up_rate or fall_rate, got {metric!r}")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), squeeze=False)
    priors_drawn = set()
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, (label, curves) in enumerate(groups.items()):
        # past the colour cycle the colours repeat with another line style (the priors are dashed)
        colour, style = colours[index % len(colours)], ("-", "-.", ":")[index // len(colours) % 3]
        for marker, curve in zip("osD^v<>", curves):  # one marker per seed of a group
            rows = curve.rows
            if not rows or rows[0][metric] is None:
                raise ValueError(f"{curve.name}: no {metric} in this learning curve")
            new_prior = curve.prior is not None and curve.prior not in priors_drawn
            y = [r[metric] for r in rows]
            if metric == "success_rate":
                bands = [(r["success_ci_low"], r["success_ci_high"]) for r in rows]
            else:
                bands = [wilson_interval(round(v * curve.eval_episodes), curve.eval_episodes) for v in y]
            offset = {"steps": curve.offset_steps, "wall_seconds": curve.offset_seconds}
            for ax, x_key in zip(axes[0], ("steps", "wall_seconds")):
                x = [(r[x_key] + offset[x_key]) / (60.0 if x_key == "wall_seconds" else 1.0) for r in rows]
                ax.plot(x, y, marker=marker, ms=4, color=colour, ls=style, label=f"{label} ({curve.name})")
                ax.fill_between(x, [b[0] for b in bands], [b[1] for b in bands], color=colour, alpha=0.12)
                if new_prior:
                    value, episodes = curve.prior
                    low, high = wilson_interval(round(value * episodes), episodes)
                    ax.axhline(value, color="black", ls="--", lw=1,
                               label=f"prior alone on {curve.name}'s seeds ({episodes} episodes)")
                    ax.axhspan(low, high, color="black", alpha=0.06)
            if new_prior:
                priors_drawn.add(curve.prior)
    for ax, x_label in zip(axes[0], ("environment steps", "wall-clock (min, evaluations included)")):
        ax.set_xlabel(x_label)
        ax.set_ylabel("evaluation " + metric.replace("_rate", "").replace("_", " ") + " rate")
        if metric == "fall_rate":
            ax.set_ylim(bottom=0.0)
        else:
            ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    # The legend below both panels: two columns while the labels fit half the width (about 85
    # characters at this font size), else one.
    columns = 2 if max((len(label) for label in labels), default=0) <= 85 else 1
    legend_rows = -(-len(labels) // columns)
    fig.set_size_inches(11, 4 + 0.18 * legend_rows)
    fig.legend(handles, labels, loc="lower center", ncol=columns, fontsize=8, frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.18 * legend_rows / (4 + 0.18 * legend_rows) + 0.01, 1, 1))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


__all__ = ["Curve", "plot_curve_comparison", "plot_learning_curve"]
