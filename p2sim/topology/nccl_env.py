"""NCCL's environment variables as p2sim's ``[nccl]`` settings: what a published job set, predicted as it ran.

A measurement is only comparable with a prediction made under the settings its job ran with: the
GB200 NVL72 rows of 20 racks were taken with ``NCCL_NVLS_ENABLE=0 NCCL_COLLNET_ENABLE=0`` (so NCCL
could run only a ring or a tree), the SHARP rows with CollNet forced on and NVLS off.  A row's
mapping file records that environment verbatim (column ``env``) and ``whatif --vary`` takes the same
variables as targets (``--vary NCCL_NVLS_ENABLE=0,1``); both go through :func:`with_env`, which
turns each variable into the ``[nccl]`` key it stands for and checks its value by that key's rule
(:func:`~p2sim.topology.settings.parse_nccl`), so a bad value is refused with the same words as in
a system file.

Variables that do not change p2sim's model (``NCCL_DEBUG``, the interface names ...) are accepted
and recorded, each with the reason in :data:`NO_EFFECT`; any other variable is refused, so that a
setting the model would silently ignore cannot pass for one it follows.

Examples
--------
>>> parse_env("NCCL_NVLS_ENABLE=0 NCCL_COLLNET_ENABLE=0", "rows.systems.csv:3: env")
(('NCCL_COLLNET_ENABLE', '0'), ('NCCL_NVLS_ENABLE', '0'))
>>> nccl_table((("NCCL_PROTO", "^LL"), ("NCCL_NVLS_ENABLE", "0")), "x")
{'protocols': ('LL128', 'Simple'), 'nvls': False}
>>> from p2sim.topology import find_spec
>>> with_env(find_spec("dgx-h100"), (("NCCL_ALGO", "Ring,Tree"),), "x").nccl.algorithms
('ring', 'tree')
>>> nccl_table((("NCCL_NVLS_ENABLE", "maybe"),), "--vary NCCL_NVLS_ENABLE")
Traceback (most recent call last):
...
p2sim.util.errors.InputError: --vary NCCL_NVLS_ENABLE: 'maybe' must be 0, 1 or 2 (NCCL reads an integer; 2, its default, enables NVLS where the GPUs support it)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..util.algorithms import TABLE as ALGO_TABLE
from ..util.errors import InputError, P2SimError
from .settings import NcclSettings, parse_nccl
from .spec import SystemSpec

__all__ = ["ENV_KEYS", "NO_EFFECT", "Env", "parse_env", "nccl_table", "with_env", "env_text"]

Env = tuple[tuple[str, str], ...]  # (variable, value) pairs, sorted by variable: a hashable record

_PROTOCOLS = NcclSettings().protocols
_ALGOS = {a.nccl.lower(): a.name for a in ALGO_TABLE}
# NCCL_ALGO=CollNet names both CollNet algorithms (src/graph/tuning.cc's parser takes "collnet" for either)
_ALGO_GROUPS = {"collnet": ("collnet_direct", "collnet_chain")}


def _flag(name: str, values: Sequence[str], what: str) -> Callable[[str, str], bool]:
    def parse(raw: str, where: str) -> bool:
        if raw.strip() not in values:
            raise InputError(f"{where}: {raw!r} must be {', '.join(values[:-1])} or {values[-1]} ({what})")
        return raw.strip() != "0"
    parse.__name__ = name
    return parse


def _int(raw: str, where: str) -> int:
    try:
        return int(raw.strip(), 0)  # NCCL reads its integer parameters with strtoll(..., 0): 0x.. works too
    except ValueError:
        raise InputError(f"{where}: {raw!r} is not a whole number") from None


def _names(raw: str, where: str, known: dict[str, tuple[str, ...]], order: Sequence[str], what: str) -> list[str]:
    """A list as NCCL's parsers read it (``src/graph/tuning.cc``): names separated by commas, case-insensitive;
    a leading ``^`` takes the complement."""
    text = raw.strip()
    exclude = text.startswith("^")
    picked: set[str] = set()
    for part in (text[1:] if exclude else text).split(","):
        name = part.strip().lower()
        if name not in known:
            raise InputError(f"{where}: {part.strip()!r} in {raw!r} is not a{'n' if what[0] in 'aeiou' else ''} {what} "
                             f"({', '.join(sorted(known))}; a leading ^ excludes)")
        picked.update(known[name])
    out = [n for n in order if (n in picked) != exclude]
    if not out:
        raise InputError(f"{where}: {raw!r} leaves NCCL no {what}")
    return out


def _protocols(raw: str, where: str) -> list[str]:
    return _names(raw, where, {p.lower(): (p,) for p in _PROTOCOLS}, _PROTOCOLS, "protocol")


def _algorithms(raw: str, where: str) -> list[str]:
    if ":" in raw:  # NCCL 2.24's per-collective form, "allreduce:ring;allgather:nvls"
        raise InputError(f"{where}: {raw!r}: NCCL_ALGO per collective (COLL:ALGOS;...) is not modelled: give one "
                         "list for every collective")
    known = {k: (v,) for k, v in _ALGOS.items()} | _ALGO_GROUPS
    return _names(raw, where, known, [a.name for a in ALGO_TABLE], "algorithm p2sim models")


def _text(raw: str, where: str) -> str:
    return raw.strip()


# NCCL's variable -> ([nccl] key, how its text becomes that key's value); each key's own range is
# checked by parse_nccl, the reader of system files.  Names and meanings: NCCL's environment
# variable documentation (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html) and, for
# OFI_NCCL_PROTOCOL, aws-ofi-nccl's nccl_ofi_param.h.
ENV_KEYS: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    # NCCL_NVLS_ENABLE: 0 off, 1 on, 2 (default) on where supported (src/transport/nvls.cc ncclNvlsInit)
    "NCCL_NVLS_ENABLE": ("nvls", _flag("nvls", ("0", "1", "2"), "NCCL reads an integer; 2, its default, enables "
                                       "NVLS where the GPUs support it")),
    "NCCL_COLLNET_ENABLE": ("collnet", _flag("collnet", ("0", "1"), "NCCL_COLLNET_ENABLE")),
    "NCCL_PROTO": ("protocols", _protocols),
    "NCCL_ALGO": ("algorithms", _algorithms),
    "NCCL_MIN_NCHANNELS": ("min_channels", _int),
    "NCCL_MAX_NCHANNELS": ("max_channels", _int),
    "NCCL_BUFFSIZE": ("buffsize", _int),
    "NCCL_NVLS_CHUNKSIZE": ("nvls_chunksize", _int),
    "NCCL_NVLSTREE_MAX_CHUNKSIZE": ("nvlstree_max_chunksize", _int),
    "NCCL_P2P_LEVEL": ("p2p_level", _text),
    "NCCL_NET_GDR_LEVEL": ("gdr_level", _text),
    "NCCL_IB_QPS_PER_CONNECTION": ("ib_qps_per_connection", _int),
    "NCCL_IB_SPLIT_DATA_ON_QPS": ("ib_split_data_on_qps", _flag("split", ("0", "1"), "NCCL_IB_SPLIT_DATA_ON_QPS")),
    "OFI_NCCL_PROTOCOL": ("ofi_protocol", _text),
    "OFI_NCCL_MIN_STRIPE_SIZE": ("ofi_min_stripe_size", _int),
    # the GPUDirect-TCPX plugin's per-socket chunk (google/nccl-plugin-gpudirecttcpx src/net_tcpx.cc, read as
    # NCCL_DYNAMIC_CHUNK_SIZE through its NCCL adapter)
    "NCCL_DYNAMIC_CHUNK_SIZE": ("dynamic_chunksize", _int),
    # not a variable NCCL reads: the release the job's image loaded ("NCCL version 2.26.2" in its log), which a
    # mapping file records here beside the variables ([nccl] version); rules that changed between releases read it
    "NCCL_VERSION": ("version", _text),
}

# Variables a published job sets that change nothing p2sim models, with the reason: recorded, not refused.
NO_EFFECT = {
    "NCCL_DEBUG": "logging only",
    "NCCL_DEBUG_SUBSYS": "logging only",
    "NCCL_SOCKET_IFNAME": "names the bootstrap interface: no data moves over it",
    "NCCL_IB_HCA": "which NICs: given in p2sim's own names in the mapping file's hca column",
    "NCCL_IB_GID_INDEX": "selects a RoCE address; the path and rate are the same",
    "NCCL_IB_TIMEOUT": "a retry timeout: no effect without faults",
    "NCCL_IB_RETRY_CNT": "a retry count: no effect without faults",
    # Grace's C2C link between CPU and GPU for GPUDirect RDMA (NCCL 2.25+); p2sim's GB200 nodes already route
    # the NIC's traffic straight to the GPU, as GPUDirect over C2C does
    "NCCL_NET_GDR_C2C": "GPUDirect RDMA over Grace's C2C: the path p2sim's GB200 nodes already model",
    "NCCL_MNNVL_ENABLE": "multi-node NVLink: a system file's NVLink domain says whether racks share one",
    "NCCL_CUMEM_ENABLE": "how buffers are allocated: no effect on a collective's time",
    "NCCL_TESTS_SPLIT": "nccl-tests' communicator split: the row's concurrent_groups",
    "NCCL_NET_PLUGIN": "which network plugin loads: the system file's [network] transport says what runs",
    # NCCL_IB_AR_THRESHOLD: from this size a message goes with adaptive routing where the fabric offers it
    "NCCL_IB_AR_THRESHOLD": "when IB adaptive routing is used: the system file's [fabric] routing says which",
    # the SHARP plugin's streaming aggregation trees (SAT) for large messages, which p2sim's CollNet assumes
    "SHARP_COLL_ENABLE_SAT": "SHARP's streaming aggregation for large messages: what p2sim's CollNet models",
}

_ENTRY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(\S*)")


def parse_env(text: str, where: str) -> Env:
    """``NAME=value`` pairs separated by blanks, every name known (:data:`ENV_KEYS`, :data:`NO_EFFECT`)
    and given once, every value valid for its ``[nccl]`` key; sorted by name."""
    pairs: dict[str, str] = {}
    for word in text.split():
        m = _ENTRY.fullmatch(word)
        if m is None:
            raise InputError(f"{where}: {word!r} is not NAME=value (an NCCL environment variable as the job set it)")
        name, value = m.groups()
        if name in pairs:
            raise InputError(f"{where}: {name} is set twice")
        if name not in ENV_KEYS and name not in NO_EFFECT:
            raise InputError(f"{where}: {name} is not a variable p2sim knows (it models "
                             f"{', '.join(ENV_KEYS)}; and takes {', '.join(NO_EFFECT)} as having no effect)")
        pairs[name] = value
    env = tuple(sorted(pairs.items()))
    nccl_table(env, where)  # every value checked now, where the file and line are known
    return env


def nccl_table(env: Env, where: str, nccl: NcclSettings | None = None) -> dict[str, Any]:
    """The ``[nccl]`` settings ``env`` makes, each value checked by the rule of the system file's key
    (:func:`~p2sim.topology.settings.parse_nccl`, on a system with ``nccl``'s GPU and transport) and
    given as :class:`~p2sim.topology.settings.NcclSettings` holds it; variables of no effect left out."""
    nc = nccl or NcclSettings()
    out: dict[str, Any] = {}
    for name, raw in env:
        if name not in ENV_KEYS:
            continue
        key, parse = ENV_KEYS[name]
        here = where if where.endswith(name) else f"{where} {name}"
        value = parse(raw, here)
        try:
            checked = parse_nccl({key: value}, {"transport": nc.transport}, {"arch": nc.arch}, here)
        except P2SimError as e:  # "HERE: nccl.KEY: why" -> "HERE: why"
            raise InputError(f"{here}: {str(e).removeprefix(f'{here}: nccl.{key}: ')}") from None
        out[key] = getattr(checked, key)
    return out


def with_env(spec: SystemSpec, env: Env, where: str) -> SystemSpec:
    """``spec`` with the settings ``env`` makes; the keys it does not name keep the system file's values."""
    table = nccl_table(env, where, spec.nccl)
    if not table:
        return spec
    out = replace(spec.nccl, **table)
    if out.min_channels > out.max_channels:
        raise InputError(f"{where}: NCCL_MIN_NCHANNELS {out.min_channels} is above NCCL_MAX_NCHANNELS "
                         f"{out.max_channels}")
    return replace(spec, nccl=out)


def env_text(env: Env) -> str:
    """The environment as a job's script sets it: ``NCCL_NVLS_ENABLE=0 NCCL_COLLNET_ENABLE=0``."""
    return " ".join(f"{k}={v}" for k, v in env)
