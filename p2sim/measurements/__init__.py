"""Measurements: reading every log and table of GPU runs, predicting them, scoring and calibrating.

Readers: :mod:`.programs` (P2's CSV and bench_nccl program logs), :mod:`.collective_rows`
(the single-collective row and nccl-tests' bus factors), :mod:`.collective_measurements`
(CSVs of published points), :mod:`.nccltests` (nccl-tests text logs), :mod:`.sweep_log`
(bench_nccl sweep logs), :mod:`.emulated` (CPU emulations) and :mod:`.inputs` (a file or
a directory of any of them).  Scoring: :mod:`.predict` and :mod:`.collective_predict`
(the model's predictions of measured rows), :mod:`.validate`, :mod:`.validation_run` and
:mod:`.collective_validation` (metrics beside the baseline), :mod:`.calibrate` (least
squares fits of a system).  Imports the studies below it (tasks and executors), never
reports or the CLI.

Modules
-------
:mod:`.calibrate`
    Calibration: fit effective link-class bandwidths and per-channel rates to measurements.
:mod:`.calibration`
    The calibrate study: one system fitted to measurements, as a system file.
:mod:`.check`
    ``p2sim check``: the nccl-tests runs that measure a placement's steps, and verdicts on their logs.
:mod:`.collective_measurements`
    Single-collective measurements in CSV form (the columns of the published-results dev set).
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
:mod:`.inputs`
    Every kind of measurement file, recognised by its content, in two lists.
:mod:`.nccltests`
    nccl-tests logs: the standard text output of ``all_reduce_perf`` and friends as measurements.
:mod:`.nccltests_common`
    What nccl-tests' text and JSON outputs share: its programs and types, rank lines, split colors, rows.
:mod:`.nccltests_json`
    nccl-tests' JSON output (``-J file.json``) as measurements: the rows its text log gives.
:mod:`.predict`
    Predictions for measured rows: one sweep task per measured configuration.
:mod:`.programs`
    Measurement files: P2's appendix CSV and bench_nccl's JSON-lines logs.
:mod:`.split`
    nccl-tests' ``NCCL_TESTS_SPLIT``: the expression that runs a step's groups as concurrent communicators.
:mod:`.sweep_log`
    bench_nccl sweep logs as measurements: each record is one :class:`CollectiveRow`.
:mod:`.validate`
    Validation metrics: predictions against measurements (see the README's table).
:mod:`.validation`
    The validate study: measurements in, the model's predictions and scores beside the baseline's out.
:mod:`.validation_run`
    The validation workflow: (optionally) calibrate, predict every group, score.
:mod:`.verdict`
    A measured row against its prediction: as predicted, or slower / faster by how much, and what bounds it.
"""
