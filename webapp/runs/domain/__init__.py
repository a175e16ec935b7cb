"""The run's values and pure computations: the events a run publishes, pass@k of a problem,
the bootstrap curves, the schemas an edit or an API answer is checked against, and the
mapping between a sample record and the columns of its row (`sample_rows`).

The lowest layer of the runs app: it reads no row and imports no other part of the app, so
every other part (and `models`) may use it.
"""
