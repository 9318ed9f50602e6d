"""The walks. ``lipm`` (Graf & Röfer 2011): :mod:`~upright.baselines.walk.lipm` with its pendulum
player (:mod:`~upright.baselines.walk.lipm_player`, :mod:`~upright.baselines.walk.pendulum`) and
CoM observer (:mod:`~upright.baselines.walk.com_observer`). ``step_adjust`` (Reichenberg & Röfer
2021 on the rUNSWift walk): :mod:`~upright.baselines.walk.step_adjust` with the step adjustment
(:mod:`~upright.baselines.walk.foot_placement`) and swing-foot leveling
(:mod:`~upright.baselines.walk.swing_leveling`). Both complete their joint requests with the
joint-error compensation (:mod:`~upright.baselines.walk.base`) and measure their speed with the
odometry of :mod:`~upright.baselines.walk.odometry`."""
