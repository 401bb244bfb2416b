"""rrkit's benchmarks: `python -m benchmarks` runs them all and prints one table (README: Benchmarks)."""
