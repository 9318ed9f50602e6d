"""Evaluation: the one episode runner (workers, observers, progress, Ctrl-C safe), results and the one
table writer, the report, videos and pictures, the papers' protocols by name (``experiments/``) and
the benchmarks (``bench/``)."""
