"""Measurements: reading every log and table of GPU runs, predicting them, scoring and calibrating.

Readers: :mod:`.program_rows` (P2's CSV and bench_nccl program logs), :mod:`.collective_rows`
(the single-collective row and nccl-tests' bus factors), :mod:`.collective_csv`
(CSVs of published points), :mod:`.nccltests` (nccl-tests text logs), :mod:`.sweep_log`
(bench_nccl's size-sweep logs), :mod:`.emulated` (CPU emulations) and :mod:`.inputs` (a file or
a directory of any of them).  Scoring, each for programs and for single collectives:
predictions of measured rows (:mod:`.program_predict`, :mod:`.collective_predict`), metrics
(:mod:`.program_scores`; the collectives' in :mod:`.collective_predict`) and the workflow that
calibrates, predicts and scores beside the baseline (:mod:`.program_validation`,
:mod:`.collective_validation`); :mod:`.fit` fits a system by least squares.  The two studies:
:mod:`.validation` (``p2sim validate``) and :mod:`.calibration` (``p2sim calibrate``).
Imports the studies below it (tasks and executors), never reports or the CLI.

Modules
-------
:mod:`.calibration`
    The calibrate study: one system fitted to measurements, as a system file.
:mod:`.check`
    ``p2sim check``: the nccl-tests runs that measure a placement's steps, and verdicts on their logs.
:mod:`.check_step`
    ``check --model``: one nccl-tests command per distinct collective of a model's training step.
:mod:`.collective_csv`
    Single-collective measurements read from CSV (the columns of the published-results dev set).
:mod:`.collective_predict`
    Predicting single-collective measurements: each row simulated as one collective on its system.
:mod:`.collective_rows`
    Single-collective measurements: one collective, one size, on one system (nccl-tests' form).
:mod:`.collective_validation`
    Validating single-collective measurements: (optionally) calibrate, predict every row, score.
:mod:`.duplicates`
    Measurements that appear twice: counted once, or refused when they disagree.
:mod:`.emulated`
    Measurements of bench_nccl's CPU emulation: refused by calibration, flagged by validation.
:mod:`.fit`
    Calibration's fit: the parameters of :data:`~p2sim.measurements.fit_params.PARAMETERS`, fitted to measurements.
:mod:`.fit_params`
    What calibration may fit: one row per parameter -- where it lives in a system, its physical bounds, their source.
:mod:`.inputs`
    Every kind of measurement file, recognised by its content, in two lists.
:mod:`.nccl_commands`
    The nccl-tests command that measures one lowered step, and the step as ``check`` reports it.
:mod:`.nccltests`
    nccl-tests logs: the standard text output of ``all_reduce_perf`` and friends as measurements.
:mod:`.nccltests_common`
    What nccl-tests' text and JSON outputs share: its programs and types, rank lines, split colors, rows.
:mod:`.nccltests_json`
    nccl-tests' JSON output (``-J file.json``) as measurements: the rows its text log gives.
:mod:`.program_predict`
    Predictions of measured programs' rows: one configuration task per measured configuration.
:mod:`.program_rows`
    Measured programs' rows (:class:`MeasuredRow`): read from P2's appendix CSV and bench_nccl's JSON-lines logs.
:mod:`.program_scores`
    Programs' validation metrics: predictions against measurements (see the README's table).
:mod:`.program_validation`
    Validating programs' measurements: (optionally) calibrate, predict every group, score.
:mod:`.split`
    nccl-tests' ``NCCL_TESTS_SPLIT``: the expression that runs a step's groups as concurrent communicators.
:mod:`.sweep_log`
    bench_nccl's size-sweep logs (``bench_nccl sweep``) as measurements: one :class:`CollectiveRow` per record.
:mod:`.validation`
    The validate study: measurements in, the model's predictions and scores beside the baseline's out.
:mod:`.verdict`
    A measured row against its prediction: as predicted, or slower / faster by how much, and what bounds it.
"""
