"""Training (stable-baselines3: :func:`~upright.training.train.train`, ``upright train``) and its
sweeps (:mod:`~upright.training.sweep`, ``upright sweep``: studies of training runs on the
machinery of :mod:`upright.tuning`)."""
