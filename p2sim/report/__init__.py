"""Human-readable renderings of p2sim results: text tables, HTML pages, plots, traces, ``--emit``.

One module per command's result (:mod:`.rank`, :mod:`.plan`, :mod:`.whatif`,
:mod:`.simulate`, :mod:`.validate`, ...), the table and page machinery (jinja2 templates in
``templates/``), the answer every page opens with (:mod:`.answer`), plot axes in units
(:mod:`.plot_units`) and the framework emitters (:mod:`.mesh`).  It reads results, never computes
them: it imports every room below it and is imported only by the API's callers and the CLI.
"""
