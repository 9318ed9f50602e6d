"""Robot descriptions, the simulation core (servos, sensors, terrain, conditions), the shared metric
definitions (:mod:`~upright.envs.metrics`), the reward scales (:mod:`~upright.envs.rewards`) and the
Gymnasium tasks (:mod:`~upright.envs.getup`, :mod:`~upright.envs.walk`)."""
