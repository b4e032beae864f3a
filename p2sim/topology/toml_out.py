"""Writing a :class:`~p2sim.topology.spec.SystemSpec` back as a system file (calibration's output).

:func:`spec_to_toml` writes every table a file may hold, ranges expanded;
:func:`~p2sim.topology.spec.parse_spec` reads the text back to an equal spec.

Examples
--------
>>> import tomllib
>>> from p2sim.topology import find_spec
>>> from p2sim.topology.spec import parse_spec
>>> for name in ("a100", "superpod-h100", "perlmutter"):
...     spec = find_spec(name)
...     assert parse_spec(tomllib.loads(spec_to_toml(spec)), spec.source) == spec, name
"""

from __future__ import annotations

import json
import math
from typing import Any

from .settings import UNPACK_TRANSPORTS, NcclSettings
from .spec import LinkSpec, SystemSpec

__all__ = ["spec_to_toml"]


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid TOML basic string
    if isinstance(v, float):
        return "inf" if math.isinf(v) else repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)


def _links(links: tuple[LinkSpec, ...]) -> list[str]:
    out = []
    for ln in links:
        extra = "".join(f", {k} = {_value(getattr(ln, k))}" for k in ("bandwidth", "latency")
                        if getattr(ln, k) is not None)
        out.append(f"  {{ class = {_value(ln.cls)}, pairs = {_value([list(p) for p in ln.pairs])}{extra} }},")
    return out


def _components(spec: SystemSpec, comps: tuple[tuple[str, str], ...]) -> list[str]:
    def nvls(n: str, k: str) -> str:  # explicit either way: the default depends on the GPU generation
        return "" if k != "nvswitch" else f", nvls = {_value(n in spec.nvls_switches)}"

    return [f"  {{ name = {_value(n)}, kind = {_value(k)}{nvls(n, k)} }}," for n, k in comps]


def _fabric(spec: SystemSpec) -> list[str]:
    f = spec.fabric
    if f is None:
        return []
    lines = ["[fabric]", f"rails = {f.rails}", f"routing = {_value(f.routing)}", f"seed = {f.seed}",
             f"link = {_value(f.link)}", "tiers = ["]
    for tier in f.tiers:
        parts = [f"name = {_value(tier.name)}"]
        if tier.nodes is not None:
            parts.append(f"nodes = {tier.nodes}")
            parts.append(f"uplinks = {_value(tier.uplinks)}" if tier.uplinks is not None
                         else f"oversubscription = {_value(tier.oversubscription)}")
        parts += [f"connect = {_value(tier.connect)}", f"sharp = {_value(tier.sharp)}"]
        lines.append(f"  {{ {', '.join(parts)} }},")
    return lines + ["]", ""]


def _gpu_pattern(gpus: tuple[str, ...]) -> str:
    """The GPU list as one name pattern, in its exact order (a file's ``gpus`` is one pattern)."""
    if len(gpus) == 1:
        return json.dumps(gpus[0])
    prefix = gpus[0].rstrip("0123456789")
    return json.dumps(f"{prefix}[{','.join(g[len(prefix):] for g in gpus)}]")


def spec_to_toml(spec: SystemSpec, comment: str = "") -> str:
    """The system file of ``spec``, with ``comment`` as leading ``#`` lines."""
    nc, d = spec.nccl, NcclSettings()
    lines = [f"# {c}" for c in comment.splitlines()] + [
        f"name = {_value(spec.name)}",
        f"description = {_value(spec.description)}",
        f"default_nodes = {spec.default_nodes}",
    ]
    if spec.notes:
        lines.append(f"notes = {_value(spec.notes)}")
    lines += ["", "levels = ["]
    for lv in spec.levels:
        if lv.tier is not None:
            lines.append(f"  {{ name = {_value(lv.name)}, fabric = {_value(lv.tier)} }},")
            continue
        card = '"nodes"' if lv.cardinality is None else str(lv.cardinality)
        lines.append(f"  {{ name = {_value(lv.name)}, cardinality = {card} }},")
    lines += ["]", "", "[classes]"]
    for c in spec.classes.values():
        lines.append(f"{c.name} = {{ bandwidth = {_value(c.bandwidth)}, latency = {_value(c.latency)}, "
                     f"efficiency = {_value(c.efficiency)}, kind = {_value(c.kind)} }}")
    lines += ["", "[gpu]", f"arch = {_value(nc.arch)}"] + ([f"model = {_value(nc.gpu_model)}"] if nc.gpu_model else [])
    lines += [f"memory_gib = {_value(nc.memory_gib)}"] if nc.memory_gib is not None else []
    lines += [f"{k} = {_value(getattr(nc, k))}" for k in ("bf16_tflops", "fp8_tflops", "hbm_tb_per_s")
              if getattr(nc, k) is not None]
    lines += ["", "[nccl]"]
    for key in ("channels_per_nic", "min_channels", "max_channels", "hca", "p2p_level", "gdr_level", "nvls",
                "collnet", "protocols", "buffsize", "algorithms", "nvls_chunksize", "nvlstree_max_chunksize", "socket_streams",
                "ib_qps_per_connection", "ib_split_data_on_qps", "ofi_protocol", "ofi_rails", "ofi_min_stripe_size", "ofi_tuner",
                "dynamic_chunksize", "version"):
        if getattr(nc, key) != getattr(d, key):
            lines.append(f"{key} = {_value(getattr(nc, key))}")
    lines += ["", "[model]"] + [f"{k} = {_value(v)}" for k, v in spec.rates.to_dict().items()]
    lines += ["", "[node]", f"gpus = {_gpu_pattern(spec.gpus)}", "components = ["]
    lines += _components(spec, spec.components)
    lines += ["]", "links = ["] + _links(spec.node_links) + ["]", "", "[network]"]
    lines += [f"transport = {_value(nc.transport)}"]
    lines += [f"step_latency = {_value(nc.step_latency)}"] if nc.step_latency is not None else []
    lines += [f"net_latency = {_value(nc.net_latency)}"] if nc.net_latency is not None else []
    lines += [f"unpack = {_value(nc.net_unpack)}"] if nc.net_unpack != (nc.transport in UNPACK_TRANSPORTS) else []
    if spec.fabric is None:
        lines += ["components = ["] + _components(spec, spec.network_components)
        lines += ["]", "links = ["] + _links(spec.network_links) + ["]"]
    return "\n".join(lines + [""] + _fabric(spec))
