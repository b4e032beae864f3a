"""Studies: the questions a user asks of the simulator, answered over many simulations.

:mod:`.sweep` (every program of a configuration as one picklable task), :mod:`.search`
(the bounded search that simulates only programs that can still win), :mod:`.rank`,
:mod:`.orders` (the two device orders compared), :mod:`.plan` (a training step's
reductions), :mod:`.whatif` (varied systems), :mod:`.size_sweep` (one collective over
sizes), :mod:`.jobsize` (counting and limiting a job before it starts) and
:mod:`.executor` (serial, process pool or Dask; results never depend on which).  Imports
the formalism, topology, collectives and the simulator, never measurements, reports or
the CLI.

Modules
-------
:mod:`.bindings`
    What bounds each step of an answer's program: for the results that are shown, not for every simulation.
:mod:`.config_search`
    The configuration search: every way to train a model on a job's GPUs, ranked by step time.
:mod:`.config_task`
    Simulating every (matrix, program) of a configuration as one picklable task.
:mod:`.contexts`
    This process's simulation contexts: one topology and one context per system and node count.
:mod:`.demand`
    What a study is asked to make fast, as one value: the :class:`Demand`, whatever the kind of question.
:mod:`.executor`
    Pluggable executors for independent simulations.
:mod:`.jobsize`
    How big a combinatorial job is, said before it starts, and the limits on it.
:mod:`.orders`
    Comparing the two device orders of a reduction group (``rank --compare-orders``).
:mod:`.plan`
    Whole-step plans: rank matrices by the total communication of a training step.
:mod:`.pool`
    Local worker processes that never outlive the run, however it ends (an error, Ctrl-C, ``SIGTERM``).
:mod:`.rank`
    The rank study: every (matrix, program, algorithm) of a job, fastest first, by the bounded search.
:mod:`.ranking`
    Ranking every (matrix, program, algorithm) of a configuration by predicted time.
:mod:`.requests`
    The inputs every study shares, checked once when a request is built.
:mod:`.search`
    Search with lower bounds: simulate only the programs that can still win, and stay exact.
:mod:`.simulate`
    Simulating programs on a system: one given in text form, or every synthesized one.
:mod:`.size_sweep`
    A collective over a range of sizes, as ``nccl-tests`` would run it: what NCCL picks and how long it takes.
:mod:`.step_comm`
    A training step's collectives on the system: each call's time alone, and their contention.
:mod:`.step_contention`
    Contention between a training step's axes: which collectives run at the same time, and how much each slows.
:mod:`.step_counts`
    What a rank, plan or what-if will bound, counted before it starts: the steps, distinct steps and collectives.
:mod:`.step_job`
    One training job's shared parts for the step: the GPUs it spans on the system, the system built, the timer.
:mod:`.step_placements`
    A model-driven plan's placements ranked by the step's time, with Megatron-LM's and Meta's orders named.
:mod:`.step_plan`
    A model-driven plan: every matrix charged with every collective of a training step (``plan --model``).
:mod:`.step_time`
    One training configuration's step: its time by part, its throughput, its memory (``p2sim step``).
:mod:`.step_workload`
    A training model's step as a plan's inputs: its AllReduces as reductions, its other collectives as parts.
:mod:`.synth`
    Placements and synthesis as requests: every matrix of axes over a hierarchy, and every program of each.
:mod:`.topology_summary`
    What ``p2sim topo`` answers of a system: :class:`TopologySummary`, computed once, worded by the report.
:mod:`.tuner`
    Where NCCL's own choice loses: size ranges and the algorithm and protocol to set instead.
:mod:`.variations`
    What-if variations: link classes or the node count varied over values, as points of a Cartesian product.
:mod:`.whatif`
    The what-if study: the best matrix and program at every point of varied systems.
:mod:`.whatif_step`
    whatif --model: a model's whole training step at every point of varied systems.
"""
