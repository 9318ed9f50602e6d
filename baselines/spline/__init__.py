"""The ``spline`` stand-up (Bit-Bots dynup; Stelter 2020, Stelter et al. 2021) and its ablation
``spline_nostab``: the controller (:mod:`~upright.baselines.spline.controller`), its parameters
(:mod:`~upright.baselines.spline.params`), the Cartesian splines
(:mod:`~upright.baselines.spline.motion`) and the trunk stabiliser
(:mod:`~upright.baselines.spline.stabilizer`)."""
