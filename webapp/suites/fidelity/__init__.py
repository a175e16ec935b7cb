"""Translation fidelity of a suite: the pure analysis (`analysis`), its stored reports
(`models`), the reads and writes around them, and the pages.
"""
