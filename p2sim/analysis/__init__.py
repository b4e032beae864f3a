"""Analysis: ranking, plans, what-if studies, validation and calibration.

Everything here fans independent simulations out through a pluggable executor
(:mod:`p2sim.analysis.executor`); results never depend on the executor.
"""
