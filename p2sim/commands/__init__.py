"""Handlers of the ``p2sim`` subcommands; :mod:`p2sim.cli` builds the parser."""
