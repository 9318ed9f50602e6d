"""Training (stable-baselines3: :func:`~upright.training.train.train`, ``upright train``) and
parameter optimisation (Optuna: :mod:`upright.training.optimize`)."""
