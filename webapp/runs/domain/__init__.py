"""The run's values and pure computations: the events a run publishes, pass@k of a problem,
the bootstrap curves, and the schemas an edit or an API answer is checked against.

The lowest layer of the runs app: it reads no row and imports no other part of the app, so
every other part (and `models`) may use it.
"""
