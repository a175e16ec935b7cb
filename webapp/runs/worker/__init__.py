"""The worker side of runs: the Celery tasks (`tasks`, imported only by the app config), the
evaluation of chunks (`execution`, with `engines`, `leases`, `jobs`, `transient`), the
manifest of what evaluated a run, the scores stored when a run finishes (`aggregation`),
the sweeper and its recovery (`beat`, `recovery`), and the profile comparisons
(`profile_comparison`: a run's samples scored again under another harness profile).
"""
