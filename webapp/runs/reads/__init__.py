"""The reads of runs: what any page, API answer or worker asks of stored runs.

One rule for what goes where: `selectors` answers a question about rows (which runs a viewer
may see, a run's counts, its pass@k) and returns model rows or plain values. A module that
builds one reader's answer (a run's report, its export, the cached page fragments) sits on
selectors and imports it; a fact that selectors embed in what they return (a run's
verification, its harness profiles) sits under selectors, which imports it. Nothing here
writes a run, sends work or publishes an event.
"""
