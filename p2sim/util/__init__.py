"""Small utilities every layer may use: errors, file reading and writing, parsing of command-line values, units.

:mod:`.errors` holds the one exception hierarchy (:class:`~.errors.P2SimError` and its
subclasses, each printed as one line by the CLI); :mod:`.fileio` reads inputs and checks
outputs before any work; :mod:`.parsing` turns option strings (``"4,16"``,
``"data=8,tensor=4"``, ``"2GiB"``) into values with messages naming the field; :mod:`.units`
formats seconds and bytes.  This room imports nothing else of p2sim.
"""
