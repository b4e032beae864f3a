"""Replay fluid flows in SimGrid (plain max-min) and print its timings and finish times.

Run with a Python that has SimGrid's bindings (Debian's ``python3-simgrid`` for the system
``/usr/bin/python3``); ``flows_scaling.py`` calls it as a subprocess::

    /usr/bin/python3 benchmarks/simgrid_flows.py FLOWS.json

The input holds ``capacity`` (bytes/s per link) and ``flows``: ``edges``, integer ``coef``
(a link loaded k times per byte appears k times in the route), integer ``volume`` (bytes) and
``latency`` (s).  Each flow becomes one communication between its own two hosts whose route is
its links, started by one driver actor once the flow's latency has passed, as in p2sim's
engine.  The routes have no latency: CM02 shares bandwidth in inverse proportion to a route's
latency (its RTT-unfairness), which would not be max-min among equals.  With that, its
bandwidth and latency factors at 1 and the TCP window bound and cross-traffic off, CM02 is plain
max-min fair sharing.  (Its default ``maxmin/precision`` of 1e-5 is absolute, in bytes/s; a far
tighter one crashed SimGrid 3.32 on repeated links at rates of 1e11 bytes/s.)
Prints one JSON object: ``build_seconds`` (platform), ``run_seconds`` (``Engine.run``) and
``ends`` (each flow's finish time, seconds).
"""

from __future__ import annotations

import json
import sys
import time

import simgrid


def main(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    t0 = time.perf_counter()
    e = simgrid.Engine(["simgrid_flows", "--log=root.thres:critical",
                        "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                        "--cfg=network/TCP-gamma:0", "--cfg=network/bandwidth-factor:1",
                        "--cfg=network/latency-factor:1", "--cfg=network/weight-S:0"])
    zone = simgrid.NetZone.create_full_zone("world")
    links = [zone.create_link(f"l{i}", [float(c)]).seal() for i, c in enumerate(data["capacity"])]
    sources, sinks = [], []
    for j, fl in enumerate(data["flows"]):
        src = zone.create_host(f"s{j}", [1.0]).seal()
        dst = zone.create_host(f"d{j}", [1.0]).seal()
        route = []
        for edge, k in zip(fl["edges"], fl["coef"]):
            route += [simgrid.LinkInRoute(links[edge])] * int(k)
        zone.add_route(src.netpoint, dst.netpoint, None, None, route, False)
        sources.append(src)
        sinks.append(dst)
    zone.seal()
    ends = [0.0] * len(sources)

    def driver():
        comms = []
        for j in sorted(range(len(sources)), key=lambda j: data["flows"][j]["latency"]):
            simgrid.this_actor.sleep_until(data["flows"][j]["latency"])
            comms.append((j, simgrid.Comm.sendto_async(sources[j], sinks[j], int(data["flows"][j]["volume"]))))
        simgrid.Comm.wait_all([c for _, c in comms])
        for j, c in comms:
            ends[j] = c.finish_time

    simgrid.Actor.create("driver", sources[0], driver)
    t1 = time.perf_counter()
    e.run()
    t2 = time.perf_counter()
    print(json.dumps({"build_seconds": t1 - t0, "run_seconds": t2 - t1, "ends": ends}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
