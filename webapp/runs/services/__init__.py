"""The user-side writes of runs: a file taken in and staged, started or held (`intake`), a
run created, copied, cancelled (`writes`), edited, deleted or restored (`lifecycle`),
reproduced (`reproduce`) or scored on a plus test set (`plus`). They send work by task name
and never import the worker side.
"""
