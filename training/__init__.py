"""Training (stable-baselines3) and parameter optimisation (Optuna)."""
