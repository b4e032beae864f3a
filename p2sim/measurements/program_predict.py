"""Predictions of measured programs' rows: one configuration task per measured configuration."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..topology.spec import SystemSpec
from ..studies.requests import Rules, Settings
from ..studies.executor import Executor, run_all
from .program_rows import GroupKey, MeasuredRow
from ..studies.config_task import ConfigResult, ConfigTask, run_task

__all__ = ["P2", "groups_of", "group_task", "predict_groups", "RowPrediction", "row_predictions"]


P2 = Rules()  # the measured programs are P2's: its paper rules, programs of up to DEFAULT_MAX_SIZE steps


def groups_of(rows: Sequence[MeasuredRow]) -> dict[GroupKey, list[MeasuredRow]]:
    """Rows by (system, nodes, axes, reduction axes, algorithm, bytes, device order), in first-seen order."""
    out: dict[GroupKey, list[MeasuredRow]] = {}
    for r in rows:
        out.setdefault(r.group, []).append(r)
    return out


def group_task(key: GroupKey, spec: SystemSpec, engine: str, all_matrices: bool,
               rows: Sequence[MeasuredRow]) -> ConfigTask:
    system, nodes, axes, red, algo, nbytes, order = key
    mats = None if all_matrices else tuple(dict.fromkeys(r.matrix for r in rows))
    return ConfigTask(spec=spec, nodes=nodes, axes=axes, reduce_axes=red, bytes_per_gpu=nbytes,
                     settings=Settings(algo=algo, engine=engine, rules=P2, order=order), matrices=mats)


def predict_groups(groups: Mapping[GroupKey, Sequence[MeasuredRow]], specs: Mapping[str, SystemSpec], engine: str,
                   executor: Executor, all_matrices: bool = True, label: str = "") -> dict[GroupKey, ConfigResult]:
    keys = list(groups)
    tasks = [group_task(k, specs[k[0]], engine, all_matrices, groups[k]) for k in keys]
    return dict(zip(keys, run_all(executor, run_task, tasks, label)))


@dataclass(frozen=True)
class RowPrediction:
    row: MeasuredRow
    allreduce_s: float
    optimal_s: float
    best_program: str
    programs_better: int  # over all matrices of the row's configuration

    @property
    def speedup(self) -> float:
        return self.allreduce_s / self.optimal_s


def row_predictions(groups: Mapping[GroupKey, Sequence[MeasuredRow]],
                    results: Mapping[GroupKey, ConfigResult]) -> list[RowPrediction]:
    out = []
    for key, rows in groups.items():
        res = results[key]
        better = res.better_than_allreduce()
        for r in rows:
            best = res.best(r.matrix)
            ar = res.allreduce(r.matrix)
            out.append(RowPrediction(r, ar.seconds, best.seconds, best.text, better))
    return out
