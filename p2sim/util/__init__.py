"""Small utilities every layer may use: errors, file reading and writing, parsing of command-line values, units.

:mod:`.errors` holds the one exception hierarchy (:class:`~.errors.P2SimError` and its
subclasses, each printed as one line by the CLI); :mod:`.fileio` reads inputs and checks
outputs before any work; :mod:`.parsing` turns option strings (``"4,16"``,
``"data=8,tensor=4"``, ``"2GiB"``) into values with messages naming the field; :mod:`.units`
formats seconds and bytes.  This room imports nothing else of p2sim.

Modules
-------
:mod:`.algorithms`
    NCCL's algorithms under p2sim's names: the one table every reader of an algorithm's name reads.
:mod:`.allocator`
    The C allocator's thresholds for a ``p2sim`` command's process: numpy's temporaries reused, not faulted in again.
:mod:`.arrays`
    Sorting-free set operations on small non-negative integers (link ids, class ids).
:mod:`.errors`
    The one exception hierarchy of p2sim.
:mod:`.fileio`
    Input files read as UTF-8 text, and output paths checked before any work starts.
:mod:`.inventory`
    Each room's inventory: the ``Modules`` section of its ``__init__`` docstring, generated from the modules.
:mod:`.log`
    What p2sim says while it works: job sizes, warnings and progress, through :mod:`logging`.
:mod:`.parsing`
    Parsing of command-line values: integer lists, named axes and byte sizes.
:mod:`.signals`
    Ending a run on a signal: the whole run stops, nothing is left behind, nothing is half-written.
:mod:`.table`
    A result's main table as rows of the JSON's field names: a pandas DataFrame or CSV text.
:mod:`.units`
    Times and sizes for people: adaptive units in text output.
:mod:`.version`
    This p2sim's version: one string, the package's ``__version__`` and what Dask workers are checked against.
"""
