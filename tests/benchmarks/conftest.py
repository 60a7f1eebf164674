# The benchmarks are a command (run.py), not tests: keep pytest out of this directory.
collect_ignore_glob = ["*"]
