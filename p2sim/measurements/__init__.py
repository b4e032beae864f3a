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
"""
