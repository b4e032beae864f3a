"""The rates a run gives the collective model: a system file's ``[model]`` table, or calibration's fit."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from ..topology.settings import ModelRates
from ..topology.spec import SystemSpec

__all__ = ["ModelConfig"]


@dataclass(frozen=True)
class ModelConfig:
    """What a run may change of the collective model: the per-channel throughput caps.

    ``rates`` replaces the system file's ``[model]`` table (calibration's fit); ``None``
    keeps the file's.  Unset rates fall back to NCCL's tables and the transport's
    default (see :mod:`p2sim.collectives.expand`).
    """

    rates: ModelRates | None = None

    @classmethod
    def of(cls, spec: SystemSpec) -> ModelConfig:
        """The configuration a system file asks for (its ``[model]`` table)."""
        return cls(spec.rates)

    def resolve(self, spec: SystemSpec) -> ModelRates:
        return spec.rates if self.rates is None else self.rates

    def to_json(self, spec: SystemSpec | None = None) -> dict[str, Any]:
        """The caps in force, and with ``spec`` the system's NCCL settings beside them."""
        rates = self.rates.to_dict() if self.rates is not None else {}
        # JSON has no infinity: an explicitly uncapped rate is null
        out: dict[str, Any] = {"rates_GBps": {k: (None if math.isinf(v) else v) for k, v in rates.items()}}
        if spec is not None:
            out["nccl"] = {f.name: (list(v) if isinstance(v := getattr(spec.nccl, f.name), tuple) else v)
                           for f in fields(spec.nccl)}
        return out
