"""Studies: the questions a user asks of the simulator, answered over many simulations.

:mod:`.sweep` (every program of a configuration as one picklable task), :mod:`.search`
(the bounded search that simulates only programs that can still win), :mod:`.rank`,
:mod:`.orders` (the two device orders compared), :mod:`.plan` (a training step's
reductions), :mod:`.whatif` (varied systems), :mod:`.size_sweep` (one collective over
sizes), :mod:`.jobsize` (counting and limiting a job before it starts) and
:mod:`.executor` (serial, process pool or Dask; results never depend on which).  Imports
the formalism, topology, collectives and the simulator, never measurements, reports or
the CLI.
"""
