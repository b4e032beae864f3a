"""What calibration may fit: one row per parameter -- where it lives in a system, its physical bounds, their source.

:data:`PARAMETERS` is the whole list.  Each :class:`FitParameter` names the field it sets
(``classes.{cls}.bandwidth``, ``model.<field>`` for a :class:`~p2sim.topology.settings.ModelRates`
field, ``nccl.<field>`` for an :class:`~p2sim.topology.settings.NcclSettings` one), how it is fitted
(``log``: its logarithm, for rates and factors; ``linear``: in units of ``unit_step``, for latencies
that may be 0), its lower and upper bound (a number, or a rule on the system: a channel's network
rate at most its NIC's), where those bounds come from, and which **stage** fits it:

* ``large``: what sets the rate of large messages (the link classes' bandwidths), fitted on the
  rows that measure rates (64 MiB and more, time growing with size: :func:`~p2sim.measurements.fit.rate_rows`)
  and on program rows, so that the latency terms of small sizes cannot pull the large sizes off;
* ``ramp``: the mechanisms of small and medium sizes (launch, network step, per-step cost, TCP
  streams, and the per-channel caps: a channel's rate binds where few channels or the LL protocols
  run), fitted afterwards on every other row with the rate rows' predictions held.

A parameter added to the model joins the fit by one row here (the fit reads nothing else).

Examples
--------
>>> from p2sim.topology import find_spec
>>> spec = find_spec("dgx-h100")
>>> ps = applicable(spec, algos=("tree",), crosses=True, stages=("ramp",))
>>> [p.name for p in ps]
['tree_net_rate', 'tree_channel_rate', 'launch', 'step_cost', 'step_latency']
>>> p = ps[4]; (p.lower, p.upper, p.start)
(1.0, 200.0, 14.0)
>>> apply(spec, {"model.launch": 4.0}).rates.launch
4.0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..collectives.expand import TCP_TRANSPORTS
from ..collectives.transports import SIMPLE_EXTRA_US, network_step_us
from ..topology.spec import SystemSpec

__all__ = ["FitParameter", "Param", "PARAMETERS", "STAGES", "applicable", "apply", "network_class"]

STAGES = ("large", "ramp")
_NVLS_EFF = {"hopper": 0.85, "blackwell": 0.74}  # NCCL's nvlsEfficiency (tuning.cc), where NVLS runs
Rule = Callable[[SystemSpec, str], float]  # on the system and the class or algorithm a row expands to


def network_class(spec: SystemSpec) -> str:
    """The link class of the NICs' links (where a channel's network rate would bind)."""
    nics = {c for c, k in spec.components if k == "nic"}
    for ln in spec.network_links:
        if any(a in nics or b in nics for a, b in ln.pairs):
            return ln.cls
    return min(spec.classes, key=lambda c: spec.classes[c].capacity)


def _nic(spec: SystemSpec, _: str = "") -> float:
    return spec.classes[network_class(spec)].capacity


def _fastest_in_node(spec: SystemSpec, _: str = "") -> float:
    return max(spec.classes[ln.cls].capacity for ln in spec.node_links)


def _data_sheet(spec: SystemSpec, cls: str) -> float:
    """A class's largest factor: back up to its data-sheet rate (capacity = bandwidth x NCCL's share)."""
    return spec.classes[cls].bandwidth / spec.classes[cls].capacity


def _rdma_or_tcp(spec: SystemSpec, _: str = "") -> float:
    return 0.125 if spec.nccl.transport in TCP_TRANSPORTS else 1.0


def _step_default(spec: SystemSpec, _: str = "") -> float:
    """The network step the model uses when the file states none (the transport's, :mod:`~p2sim.collectives.transports`):
    a calibrated ``step_latency`` replaces every protocol's step, so it starts at a Simple ring step's (the bulk of
    the ramp's sizes; NCCL's 14 us over IB and RoCE, whose LL and LL128 steps are NCCL's smaller figures), without
    what the transport adds to Simple (``SIMPLE_EXTRA_US``: EFA's completion), which it keeps adding."""
    if spec.nccl.step_latency is not None:
        return spec.nccl.step_latency
    t = spec.nccl.transport
    return network_step_us(t, "ring", "Simple") - SIMPLE_EXTRA_US.get(t, 0.0)


@dataclass(frozen=True)
class FitParameter:
    """One row of the table: a field calibration may set, and within what.

    ``where`` may hold ``{cls}`` (one parameter per link class: a factor on the file's bandwidth)
    or ``{algo}`` (one per measured algorithm family, ``ring`` or ``tree``).  ``needs``: when it
    applies -- ``always``, ``crosses`` (a row spans nodes), ``tcp`` (and the transport runs over
    TCP), ``nvlink_sharp`` (the system has NVLink SHARP switches).  ``unset_above``: at its upper bound it binds nothing, and is then reported unset.
    ``prior``: a weak pull towards the file's figure (a data sheet's), so a class the rows
    cannot see keeps it.  ``default``: the value the model uses when the file states none.
    """

    where: str
    unit: str
    scale: str  # "log" or "linear"
    lower: float | Rule
    upper: float | Rule
    source: str
    stage: str
    needs: str = "always"
    unset_above: bool = False
    prior: bool = False
    default: float | Rule | None = None
    unit_step: float = 1.0  # linear parameters are fitted in units of this (finite differences of 5% of it)
    links_only: bool = False  # what the baseline engine (links, no channels) can fit


# The bounds' sources.  Link factors: at most the data sheet's rate (a class's capacity is its data-sheet
# bandwidth times NCCL's share, topology/efficiency.py, so the factor reaches 1 / share), at least a tenth
# of it (NCCL reaches 70-90% of a link's rate, nccl-tests' doc/PERFORMANCE.md: below a tenth the model
# misplaces a bottleneck, issue 16).  Per-channel rates: at most what their link carries (beyond, a cap binds
# nothing), at least 1 GB/s on the GPU side and over RDMA (search.cc gives a channel inside a node at least
# speedArrayIntra's slowest, 3 GB/s) or 0.125 GB/s over TCP (one stream of a 1 Gb/s Ethernet, the slowest a
# server's NIC runs).  Latencies: a launch at most 50 us (a whole 8-byte AllReduce on 8 H100 takes about
# 12.5 us, deepseek-ai/DeepEP#303); a network step 1-200 us (NCCL's own figures 2.7-31 us, tuning.cc
# hwLat; AWS's EFA step 20 us, early EFA about 75 us, aws-ofi-nccl); a per-chunk cost at most 20 us (NCCL's
# slowest per-step figure inside a node is 5.7 us, PCIe Simple, tuning.cc).
PARAMETERS: tuple[FitParameter, ...] = (
    FitParameter("classes.{cls}.bandwidth", "x", "log", 0.1, _data_sheet,
                 "data sheet (x 1 / NCCL's share) down to a tenth: nccl-tests PERFORMANCE.md, issue 16",
                 "large", prior=True, default=1.0, links_only=True),
    FitParameter("model.{algo}_net_rate", "GB/s", "log", _rdma_or_tcp, _nic, "a channel's connection carries at most its NIC; 1 GB/s over RDMA, a 1 Gb/s "
                 "stream over TCP", "ramp", needs="crosses", unset_above=True),
    FitParameter("model.{algo}_channel_rate", "GB/s", "log", 1.0, _fastest_in_node,
                 "at most the fastest link in a node; at least 1 GB/s (search.cc speedArrayIntra: 3 GB/s)",
                 "ramp", unset_above=True),
    FitParameter("model.stream_rate", "GB/s", "log", 0.125, _nic,
                 "one TCP stream: at most its NIC, at least a 1 Gb/s Ethernet's", "ramp", needs="tcp",
                 unset_above=True),
    FitParameter("model.launch", "us", "linear", 0.0, 50.0,
                 "0-50 us: an 8-byte AllReduce on 8 H100 takes 12.5 us (deepseek-ai/DeepEP#303)", "ramp",
                 default=0.0, unit_step=10.0),
    FitParameter("model.step_cost", "us", "linear", 0.0, 20.0,
                 "0-20 us: NCCL's slowest per-step figure inside a node is 5.7 us (tuning.cc, PCIe Simple)", "ramp",
                 default=0.0, unit_step=10.0),
    # NVLS's share of NVLink (the hops' efficiency): at most the link's rate, at least 0.3, below any published
    # NVLS figure (8-GPU Hopper boards 0.85 of NCCL's NVLink count: tuning.cc nvlsEfficiency; one NVL72 rack about
    # 0.62: nccl-facts-2 1f); only on systems with NVLink SHARP switches
    FitParameter("model.nvls_efficiency", "x", "log", 0.3, 1.0,
                 "0.3-1 of NVLink: NCCL's nvlsEfficiency 0.74-0.85 (tuning.cc); one NVL72 rack measured about 0.62",
                 "large", needs="nvlink_sharp", default=lambda spec, _: _NVLS_EFF.get(spec.nccl.arch, 1.0)),
    FitParameter("model.step_latency", "us", "linear", 1.0, 200.0,
                 "1-200 us: NCCL's network steps 2.7-31 us (tuning.cc hwLat), EFA 20 us, early EFA 75 us "
                 "(aws-ofi-nccl)", "ramp", needs="crosses", default=_step_default, unit_step=10.0),
)


@dataclass(frozen=True)
class Param:
    """One parameter as fitted on one system: a row of :data:`PARAMETERS` expanded, with its bounds
    and start resolved (in the field's unit)."""

    name: str  # "nic" for a class, else the field
    path: str  # where it lives: "classes.nic.bandwidth", "model.launch"
    row: FitParameter
    lower: float
    upper: float
    start: float
    file: float | None  # the file's own value (None: not stated)

    def to_x(self, v: float) -> float:
        return math.log(v) if self.row.scale == "log" else v / self.row.unit_step

    def of_x(self, x: float) -> float:
        return math.exp(x) if self.row.scale == "log" else float(x) * self.row.unit_step

    def grid(self, steps: int = 10) -> list[float]:
        """Starting candidates from the upper bound down: a cap far above what it limits has no gradient,
        and a latency the other terms have compensated for has none either."""
        if self.row.scale == "log":
            top = min(self.upper, 1e6)
            return [max(self.lower, top * 2 ** (-0.5 * j)) for j in range(steps)]
        span = self.upper - self.lower
        return [self.lower + span * f for f in (0.0, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25)]


def _value(v: float | Rule | None, spec: SystemSpec, name: str) -> float | None:
    return v(spec, name) if callable(v) else v


def _field(spec: SystemSpec, path: str) -> float | None:
    table, name = path.split(".", 1)
    if table == "classes":
        return 1.0
    return getattr(spec.rates if table == "model" else spec.nccl, name)


def applicable(spec: SystemSpec, algos: Sequence[str], crosses: bool, stages: Sequence[str] = STAGES,
               links_only: bool = False) -> list[Param]:
    """The table's rows that apply to this system and these rows, expanded (one per class, per algorithm)."""
    tcp = crosses and spec.nccl.transport in TCP_TRANSPORTS
    out = []
    for row in PARAMETERS:
        if row.stage not in stages or (links_only and not row.links_only) or \
                (row.needs == "crosses" and not crosses) or (row.needs == "tcp" and not tcp) or \
                (row.needs == "nvlink_sharp" and not (spec.nvls_switches and spec.nccl.arch in _NVLS_EFF)):
            continue
        names = ([("{cls}", c) for c in sorted(spec.classes)] if "{cls}" in row.where
                 else [("{algo}", a) for a in algos] if "{algo}" in row.where else [("", "")])
        for key, v in names:
            path = row.where.replace(key, v) if key else row.where
            lo, hi = _value(row.lower, spec, v), _value(row.upper, spec, v)
            if not lo < hi:  # nothing to fit (a NIC slower than the slowest channel the table allows)
                continue
            file = _field(spec, path)
            start = file if file is not None else _value(row.default, spec, v)
            start = hi if start is None else start  # an unset cap: uncapped, at its bound
            out.append(Param(v if key == "{cls}" else path.split(".", 1)[1], path, row, lo, hi,
                             min(max(start, lo), hi), file))
    return out


def apply(spec: SystemSpec, values: Mapping[str, float | None]) -> SystemSpec:
    """The system with these fields set (``classes.C.bandwidth``: a factor on the file's figure; ``None``:
    the field unset)."""
    out, rates, nccl = spec, {}, {}
    for path, v in values.items():
        table, name = path.split(".", 1)
        if table == "classes":
            c = name.split(".")[0]
            out = out.with_class(c, bandwidth=spec.classes[c].bandwidth * v)
        elif table == "model":
            rates[name] = v
        else:
            nccl[name] = v
    if rates:
        out = replace(out, rates=replace(out.rates, **rates))
    if nccl:
        out = replace(out, nccl=replace(out.nccl, **nccl))
    return out
