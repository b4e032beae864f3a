"""A measured row against its prediction: as predicted, or slower / faster by how much, and what bounds it.

Examples
--------
>>> from types import SimpleNamespace as NS
>>> pred = NS(ratio=0.5, bound=NS(text="nic links"))
>>> verdicts([pred])[0].text
'slower than predicted by 2.00x; bound by nic links'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the prediction's module imports the simulator: not needed to judge
    from .collective_predict import CollectivePrediction

__all__ = ["Verdict", "verdicts", "TOLERANCE"]

# a verdict's band: p2sim's geometric spread against published nccl-tests runs it was not tuned on
# (large messages, up to 540 nodes: about 1.27; docs/validation.md)
TOLERANCE = 1.25


@dataclass(frozen=True)
class Verdict:
    """One measured row against its prediction."""

    prediction: CollectivePrediction
    verdict: str  # as predicted, slower, faster
    factor: float  # how many times slower or faster (1 when as predicted)

    @property
    def text(self) -> str:
        p = self.prediction
        bound = "" if p.bound is None else f"; bound by {p.bound.text}"
        if self.verdict == "as predicted":
            return f"as predicted ({p.ratio:.2f}x the predicted bus bandwidth{bound})"
        return f"{self.verdict} than predicted by {self.factor:.2f}x{bound}"

    def to_json(self) -> dict[str, Any]:
        # nccl-tests measures every size out of place and in place: two rows, told apart here
        return dict(self.prediction.to_json(), in_place=self.prediction.row.in_place, verdict=self.verdict,
                    factor=self.factor, verdict_text=self.text)


def verdicts(predictions: Sequence[CollectivePrediction], tolerance: float = TOLERANCE) -> list[Verdict]:
    """Each row judged: within ``tolerance`` (a factor) of the predicted bus bandwidth, or slower / faster."""
    out = []
    for p in predictions:
        r = p.ratio  # measured over predicted bus bandwidth
        if r < 1 / tolerance:
            out.append(Verdict(p, "slower", 1 / r))
        elif r > tolerance:
            out.append(Verdict(p, "faster", r))
        else:
            out.append(Verdict(p, "as predicted", 1.0))
    return out
