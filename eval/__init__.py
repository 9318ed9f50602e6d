"""Shared metrics, the episode runner, experiment protocols, reports and the benchmark."""
