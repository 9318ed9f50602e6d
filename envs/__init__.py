"""Robot descriptions, the simulation core (servos, sensors, terrain, conditions), the shared metric
definitions (:mod:`~upright.envs.metrics`), the reward scales (:mod:`~upright.envs.rewards`), the
Gymnasium tasks (:mod:`~upright.envs.getup`, :mod:`~upright.envs.walk`) and the residual on a prior
apart from them (:mod:`~upright.envs.residual`)."""
