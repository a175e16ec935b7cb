"""Translation fidelity of a suite: the pure analysis (`analysis`), the reads and writes
around it, and the pages. Its model (`DefectProposal`) stays in `suites.fidelity_models`,
at the app root, as the app's `models` imports it for Django and this package reads
`suites.models`: inside the package, the two would import each other.
"""
