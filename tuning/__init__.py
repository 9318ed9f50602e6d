"""Controller parameters tuned with Optuna (``upright optimize``), after Stelter et al., "Fast and
Reliable Stand-Up Motions for Humanoid Robots Using Spline Interpolation and Parameter
Optimization" (ICAR 2021), section IV. It trains no policy: every trial runs a controller's
episodes through the shared runner.

* :mod:`.space`: search spaces as YAML per controller and robot (``spaces/``);
* :mod:`.objectives`: the paper's components (success, time, head, pitch; walks: falls, tracking),
  each in [0, 100], and the get-up trial's success and early-stop rules;
* :mod:`.storage`: SQLite by default, a journal file for local workers, any RDB URL; heartbeat and retry;
* :mod:`.plan`: what a run is asked for and what it resolves to against its space;
* :mod:`.study`: :func:`optimize` and the trial loop;
* :mod:`.summary`: best trial, Pareto front, Figure 4's measures, ``best_params.yaml``, plots;
* :mod:`.protocols`: the papers' measurements as ``upright experiment optimize-*`` protocols;
* :mod:`.identify`: ``upright identify``, servo parameters fitted to a robot's recorded joint
  trajectories with CMA-ES (``docs/identify.md``).

The training sweeps (:mod:`upright.training.sweep`) reuse the space format, storages and trial
loop. ``docs/optimize.md`` is the user guide.
"""

from upright.envs.residual import load_params_file
from upright.tuning.plan import OptimizeConfig
from upright.tuning.space import SearchSpace, load_space
from upright.tuning.study import optimize

__all__ = ["OptimizeConfig", "SearchSpace", "load_params_file", "load_space", "optimize"]
