"""The built-in system files, installed as the package ``p2sim.systems``.

This directory stays at the top level of the source tree; pyproject.toml maps the
package ``p2sim.systems`` onto it, so wheels ship the ``*.toml`` files as package data
and :mod:`p2sim.topology` finds them through :mod:`importlib.resources`.
"""
