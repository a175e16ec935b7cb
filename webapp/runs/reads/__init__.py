"""The reads of runs: what any page, API answer or worker asks of stored runs.

One rule for what goes where: `selectors` answers a question about rows (which runs a viewer
may see, a run's counts, its pass@k) and returns model rows or plain values; every other
module here builds one reader's answer out of selectors (a run's report, its export, its
verification, its profiles, the cached page fragments), and imports selectors, never the
other way round, apart from `verified` and `profile_reports`, which selectors embed in the
facts it returns. Nothing here writes a run, sends work or publishes an event.
"""
