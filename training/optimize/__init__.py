"""``upright optimize``: the controllers' parameters optimised with Optuna, after Stelter et al.,
"Fast and Reliable Stand-Up Motions for Humanoid Robots Using Spline Interpolation and Parameter
Optimization" (ICAR 2021), section IV.

* :mod:`.space`: search spaces as YAML per controller and robot (``spaces/``);
* :mod:`.objectives`: the paper's components (success, time, head, pitch; walks: falls, tracking),
  each in [0, 100], and the get-up trial's success and early-stop rules;
* :mod:`.storage`: SQLite by default, a journal file for local workers, any RDB URL; heartbeat and retry;
* :mod:`.study`: :func:`optimize` and the trial loop;
* :mod:`.summary`: best trial, Pareto front, Figure 4's measures, ``best_params.yaml``, plots.

``docs/optimize.md`` is the user guide.
"""

from upright.envs.base import load_params_file
from upright.training.optimize.space import SearchSpace, load_space
from upright.training.optimize.study import OptimizeConfig, optimize

__all__ = ["OptimizeConfig", "SearchSpace", "load_params_file", "load_space", "optimize"]
