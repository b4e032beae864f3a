"""Human-readable renderings of p2sim results: text tables, HTML pages, plots, traces, ``--emit``.

One module per command's result (:mod:`.rank`, :mod:`.plan`, :mod:`.whatif`,
:mod:`.simulate`, :mod:`.validate`, ...), the table and page machinery (jinja2 templates in
``templates/``), the answer every page opens with (:mod:`.answer`), plot axes in units
(:mod:`.plot_units`) and the framework emitters (:mod:`.mesh`).  It reads results, never computes
them: it imports every room below it and is imported only by the API's callers and the CLI.

Modules
-------
:mod:`.answer`
    The answer a report page opens with: one or two sentences, then the code that applies it.
:mod:`.check`
    ``p2sim check`` as text: the nccl-tests command of each step with its prediction, then each log row's verdict.
:mod:`.collectives`
    Rendering of single-collective validation: per-row table, metrics, plots (text, Markdown, HTML).
:mod:`.config_search`
    The configuration search's answer, as ``p2sim plan --model`` (no ``--axes``) prints it.
:mod:`.emit_code`
    ``--emit jax|torch``: the chosen placement and program as code a framework runs.
:mod:`.emit_megatron`
    ``--emit megatron``: the chosen placement as Megatron-LM's arguments and launch, a shell script.
:mod:`.files`
    Rendering and writing report directories.
:mod:`.mesh`
    ``--emit torch|jax|json|megatron``: a chosen placement as code or data a framework applies.
:mod:`.mesh_choice`
    The placement and programs that ``--emit`` writes out, chosen from a rank or plan result.
:mod:`.orders`
    Rendering of the device-order comparison of ``p2sim rank --compare-orders``.
:mod:`.plan`
    Rendering of a plan: every matrix's step time beside the default placement's, and the best plan's programs.
:mod:`.plot_units`
    Plot axes whose tick labels carry their unit, as the tables show values (``10 ms``, ``64 MiB``).
:mod:`.rank`
    Rendering of rankings: table, JSON, Markdown / HTML report with plots.
:mod:`.simulate`
    Rendering of simulation results and topology summaries.
:mod:`.size_sweep`
    Rendering of size sweeps: nccl-tests' table, with what NCCL picked, and bus bandwidth against size.
:mod:`.step_plan`
    A model-driven plan's step, rendered for the user.
:mod:`.step_time`
    ``p2sim step``'s answer as text: the step's time, throughput and memory, and the step by part.
:mod:`.synth`
    Rendering of placement enumeration and synthesis results.
:mod:`.tables`
    Report tables as data: columns that carry their own definition.
:mod:`.trace`
    Chrome trace (chrome://tracing, Perfetto) of simulated programs.
:mod:`.tuner`
    ``--emit nccl-tuner``: NCCL's example tuner plugin configuration for the ranges where NCCL's choice loses.
:mod:`.validate`
    Rendering of validation and calibration results: terminal text, Markdown and HTML reports.
:mod:`.whatif`
    Rendering of a what-if study: a line per point, and the best predicted time against the first varied parameter.
"""
