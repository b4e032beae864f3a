"""p2sim: synthesize and simulate parallelism placements and reduction programs.

Layers, each importing only those before it: the pure formalism
(:mod:`placement`, :mod:`semantics`, :mod:`program`, :mod:`hierarchy`,
:mod:`synthesis`, :mod:`execute`), then topologies, collective expansion, the
simulator, analysis, and the CLI and reports.
"""

__version__ = "0.1.0"
