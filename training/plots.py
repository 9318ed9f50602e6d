"""``learning_curve.png`` of a run folder: the held-out evaluations of ``learning_curve.csv``
against environment steps and against wall-clock seconds, with the prior's own number on the same
seeds (``eval/prior/results.json``) as a dashed line. Get-up: success rate with its Wilson 95 %
interval and mean time to stand (s, over successes); walk: fall rate and linear tracking error (m/s). Needs matplotlib (the ``video`` or
``optimize`` extra)."""

from __future__ import annotations

import json
from pathlib import Path

from upright.training.callbacks import read_learning_curve, summary_numbers


def plot_learning_curve(run_dir: str | Path) -> Path:
    """Draw ``run_dir/learning_curve.png`` from ``run_dir/learning_curve.csv`` and return its path
    (ValueError when the run has no evaluation yet)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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


__all__ = ["plot_learning_curve"]
