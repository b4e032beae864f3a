"""How the JSON and split-run fixtures here were made: nccl-tests 2.19.6's text and ``-J`` JSON.

Each run is printed twice from the same doubles, as nccl-tests prints it: the text with
src/util.cu's C formats (writeDeviceReport, writeResultHeader, writeBenchmarkLinePreamble,
writeBenchmarkLineBody with getFloatStr, writePerIterReport, writeResultFooter), and the JSON
with its writer (keys in its order, no whitespace, ``%d``/``%zu`` integers, ``%lf`` doubles,
booleans as "true"/"false" strings, ``root`` as the ``%6i`` string, "/" escaped as "\\/",
one ``devices`` record per process).  Sizes follow src/*.cu's GetCollByteCount (AllGather
and ReduceScatter align each rank's part to 16 bytes), bandwidths their GetBw with the
communicator's rank count.  The figures are synthetic (an alpha-beta model with +-3 % noise,
seeded), not measurements.  Run ``python tests/data/nccltests/make_json_fixtures.py
tests/data/nccltests``.
"""
import random
import sys
from pathlib import Path

TYPE = ("float", 4)
H100_BUS = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)  # a DGX H100's GPUs, by CUDA device
H100 = "NVIDIA H100 80GB HBM3"
VERSION_LINE = "# nccl-tests version 2.19.6 nccl-headers=22703 nccl-library=22703"


def float_str(v, w):  # getFloatStr in src/util.cu
    for fmt in ("%*.2f", "%*.1f", "%*.0f"):
        s = fmt % (w, v)
        if len(s) <= w:
            return s
    return ("%*.1e" if w >= 7 else "%*.0e") % (w, v)


def sanitize(s):  # sanitizeJson
    return "".join("\\" + c if c in '"\\/' else "\\t" if c == "\t" else "\\n" if c == "\n" else c for c in s)


class D(float):
    """A double: written with %lf."""


def jdump(v):
    if v is None:
        return "null"
    if isinstance(v, D):
        return '"nan"' if v != v else "%f" % v
    if isinstance(v, bool):
        return '"true"' if v else '"false"'
    if isinstance(v, int):
        return "%d" % v
    if isinstance(v, str):
        return '"%s"' % sanitize(v)
    if isinstance(v, list):
        return "[" + ",".join(jdump(x) for x in v) + "]"
    return "{" + ",".join('"%s":%s' % (sanitize(k), jdump(x)) for k, x in v.items()) + "}"


def sizes(coll, n, lo, hi):
    s = lo
    while s <= hi:
        count = s // TYPE[1]
        if coll in ("all_gather", "reduce_scatter"):
            param = (count // n) & ~(16 // TYPE[1] - 1)
            size = param * n * TYPE[1]
        else:
            param, size = count, count * TYPE[1]
        yield size, param
        s *= 2


def bus_factor(coll, n):
    return {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n}[coll]


class Run:
    def __init__(self, prog, hosts, per_host, per_proc, colors, lo, hi, lat, bw, seed, env, args, iters=20,
                 check=True, per_iter=False, json_version=3):
        self.prog, self.coll = prog, prog.replace("_perf", "")
        self.hosts, self.per_host, self.per_proc, self.colors = hosts, per_host, per_proc, colors
        self.lo, self.hi, self.lat, self.bw, self.seed = lo, hi, lat, bw, seed
        self.env, self.args, self.iters, self.check, self.per_iter = env, args, iters, check, per_iter
        self.json_version = json_version
        world = len(hosts) * per_host
        procs = world // per_proc
        self.ranks = []  # (rank, color, pid, host, device)
        for p in range(procs):
            host = hosts[p * per_proc // per_host]
            local = (p * per_proc) % per_host
            for i in range(per_proc):
                self.ranks.append((p * per_proc + i, colors[p], 4100 + p, host, local + i))
        self.group = sum(1 for c in colors if c == colors[0]) * per_proc  # ranks per communicator
        self.procs = procs
        rnd = random.Random(seed)
        self.results = []
        for size, param in sizes(self.coll, self.group, lo, hi):
            places = []
            for _ in range(2):
                us = lat * (1 + rnd.uniform(-0.03, 0.03))
                if size:
                    us += size * bus_factor(self.coll, self.group) / bw / 1e3 * (1 + rnd.uniform(-0.03, 0.03))
                alg = size / 1e9 / (us * 1e-6)
                it = [us * (1 + rnd.uniform(-0.05, 0.05)) for _ in range(iters)] if per_iter else []
                places.append((us, alg, alg * bus_factor(self.coll, self.group), it))
            self.results.append((size, param, places))

    def text(self, json_path=None):
        out = []
        if json_path:
            out.append("# Writing JSON output to %s" % json_path)
        out += [VERSION_LINE, "# Collective test starting: %s" % self.prog,
                "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d agg iters: "
                "%d validation: %d graph: %d unalign: %d" % (1, self.per_proc, self.lo, self.hi, 2, "factor", 1,
                                                             self.iters, 1, int(self.check), 0, 0)]
        if self.per_iter:
            out.append("# Per-Iteration Report: CUDA event timing; i_* uses max over process rows ")
        out += ["#", "# Using devices"]
        for rank, color, pid, host, dev in self.ranks:
            out.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s"
                       % (rank, color, pid, host, dev, 0, H100_BUS[dev], 0, H100))
        out.append("#")
        e = ("", "", "", "", "")
        if self.per_iter:
            out.append("# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)                     "
                       "           in-place (+ per-iteration)" % e)
            cols = ("time", "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%")
            units = ("(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)")
            fmt = "# %10s  %12s  %8s  %6s  %6s" + "  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s" * 2 + " %*s"
            out.append(fmt % (("size", "count", "type", "redop", "root") + cols * 2 + (0, "")))
            out.append(fmt % (("(B)", "(elements)", "", "", "") + units * 2 + (0, "")))
        else:
            out.append("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          " % e)
            fmt = "# %10s  %12s  %8s  %6s  %6s" + "  %7s  %6s  %6s  %6s" * 2 + " %*s"
            out.append(fmt % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                              "algbw", "busbw", "#wrong", 0, ""))
            out.append(fmt % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                              "(GB/s)", "", 0, ""))
        redop = "none" if self.coll == "all_gather" else "sum"
        bws = []
        for size, param, places in self.results:
            line = "%12li  %12li  %8s  %6s  %6s" % (size, param, TYPE[0], redop, "%6i" % -1)
            for us, alg, bus, it in places:
                if self.check:
                    line += "  %7s  %6s  %6s  %6g" % (float_str(us, 7), float_str(alg, 6), float_str(bus, 6), 0)
                else:
                    line += "  %7s  %6s  %6s    N/A" % (float_str(us, 7), float_str(alg, 6), float_str(bus, 6))
                if it:
                    st = stats(it)
                    line += "  %7s  %7s  %7s  %7s" % tuple(float_str(v, 7) for v in (st["min_us"], st["max_us"],
                                                                                      st["p99_us"], st["cv_pct"]))
                bws.append(bus)
            out.append(line)
        out += ["# %-20s : %d %s" % ("Out of bounds values", 0, "OK"),
                "# %-20s : %g %s" % ("Avg bus bandwidth", sum(bws) / len(bws), ""), "#",
                "# Collective test concluded: %s" % self.prog, "#", ""]
        return "\n".join(out) + "\n"

    def json(self):
        doc = {"version": self.json_version, "start_time": "2026-03-02 10:11:12", "args": self.args,
               "env": self.env, "nccl_version": 22703}
        cfg = {"nthreads": 1, "ngpus": self.per_proc, "minimum_bytes": self.lo, "maximum_bytes": self.hi,
               "step_factor": 2, "warmup_iters": 1, "iterations": self.iters, "aggregated_iterations": 1,
               "validation": int(self.check), "graph": 0, "blocking_collectives": False}
        if self.json_version >= 2:
            cfg["per_iter_timing"] = self.per_iter
        if self.json_version >= 3:
            cfg["per_iter_skip"] = 0
        cfg["parallel_init"] = False
        # one record per process: the first of its rank lines, as parseRankInfo reads it
        cfg["devices"] = [{"rank": r, "group": c, "pid": pid, "hostname": h, "device": d,
                           "device_hex": "%04x:%02x:%02x" % (0, H100_BUS[d], 0), "device_info": H100}
                          for r, c, pid, h, d in self.ranks[::self.per_proc]]
        doc["config"] = cfg
        redop = "none" if self.coll == "all_gather" else "sum"
        results, bws = [], []
        for size, param, places in self.results:
            rec = {"size": size, "count": param, "type": TYPE[0], "redop": redop, "root": "%6i" % -1}
            for key, (us, alg, bus, it) in zip(("out_of_place", "in_place"), places):
                rec[key] = {"time": D(us), "alg_bw": D(alg), "bus_bw": D(bus), "nwrong": D(0) if self.check else None}
                if it:
                    st = stats(it)
                    rec[key + "_per_iter"] = dict({"skipped_iterations": 0}, **{k: D(v) for k, v in st.items()},
                                                  times_us=[D(t) for t in it])
                    if self.procs > 1:
                        rec[key + "_per_iter"]["per_process_max_times_us"] = [[D(t) for t in it]] * self.procs
                bws.append(bus)
            rec["actual_iterations"] = self.iters
            rec["experiment_name"] = ""
            results.append(rec)
        doc["results"] = results
        doc["out_of_bounds"] = {"count": 0, "okay": True}
        avg = "average_bus_bandwidth" if self.json_version >= 2 else "average_bus_bandwidith"
        doc[avg] = {("bandwidth" if self.json_version >= 2 else "bandwidith"): D(sum(bws) / len(bws)),
                    "okay": "unchecked"}
        doc["errors"] = [""]
        doc["end_time"] = "2026-03-02 10:11:19"
        return jdump(doc)


def stats(it):  # computeIterStats
    s = sorted(it)
    n = len(s)
    avg = sum(s) / n
    sd = (sum((x - avg) ** 2 for x in s) / n) ** 0.5
    pct = lambda p: s[min(n - 1, (n * p + 99) // 100 - 1)]  # noqa: E731
    return {"min_us": s[0], "max_us": s[-1], "avg_us": avg, "p50_us": s[n // 2], "p95_us": pct(95),
            "p99_us": pct(99), "stdev_us": sd, "cv_pct": sd / avg * 100}


ENV = ["PATH=/usr/local/cuda/bin:/usr/bin:/bin", "LD_LIBRARY_PATH=/opt/nccl/lib", "OMPI_COMM_WORLD_SIZE=16"]
TWO = ("dgx-h100-01", "dgx-h100-02")


def mpirun(run, split):
    x = " -x NCCL_ALGO=Ring" if "NCCL_ALGO=Ring" in run.env else ""
    x += ' -x NCCL_TESTS_SPLIT="%s"' % split if split else ""
    return "$ mpirun -np 16 -H dgx-h100-01:8,dgx-h100-02:8%s %s" % (x, " ".join(run.args))


def main(out: Path):
    # 1. an MPI run on 2 nodes and its JSON (version 3), NCCL_ALGO=Ring
    name = "all_reduce_perf_mpi_2x8"
    run = Run("all_reduce_perf", TWO, 8, 1, [0] * 16, 8, 128 << 20, 25.0, 45.0, 7,
              ENV + ["NCCL_ALGO=Ring", "NCCL_DEBUG=WARN"],
              ["./build/all_reduce_perf", "-b", "8", "-e", "128M", "-f", "2", "-g", "1", "-J", "/results/%s.json" % name])
    (out / (name + ".json")).write_text(run.json())
    text = run.text("/results/%s.json" % name)
    (out / (name + ".txt")).write_text(mpirun(run, "") + "\n"
                                       + "dgx-h100-01:4100:4100 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n"
                                       + text)
    # 2. one process driving 8 GPUs (-g 8), -I 1 and -c 0: one devices record; per-iteration keys, nwrong null
    name = "all_gather_perf_g8_iter"
    run = Run("all_gather_perf", ("dgx-h100-07",), 8, 8, [0], 64, 64 << 20, 12.0, 140.0, 11, ENV[:2],
              ["/opt/nccl-tests/build/all_gather_perf", "-b", "64", "-e", "64M", "-f", "2", "-g", "8", "-I", "1",
               "-c", "0", "-J", "ag.json"], check=False, per_iter=True)
    (out / (name + ".json")).write_text(run.json())
    (out / (name + ".txt")).write_text(run.text("ag.json"))
    # 3. version 1 (nccl-tests 2.17.3: "average_bus_bandwidith", no per-iteration keys)
    run = Run("reduce_scatter_perf", ("node-a",), 4, 4, [0], 1024, 16 << 20, 15.0, 90.0, 13, ENV[:1],
              ["./reduce_scatter_perf", "-b", "1K", "-e", "16M", "-g", "4", "-J", "rs.json"], json_version=1)
    (out / "reduce_scatter_perf_v1.json").write_text(run.json())
    # 4. split runs of 16 MPI processes on 2 nodes (color = proc OP value, src/common.cu run())
    for name, split, colors in (("and7", "AND 0x7", [p & 7 for p in range(16)]),
                                ("div8", "DIV 8", [p // 8 for p in range(16)]),
                                ("mod2", "MOD 2", [p % 2 for p in range(16)])):
        bw = {"and7": 40.0, "div8": 150.0, "mod2": 35.0}[name]
        run = Run("all_reduce_perf", TWO, 8, 1, colors, 1024, 256 << 20, 20.0, bw, 17,
                  ENV + ["NCCL_TESTS_SPLIT=" + split],
                  ["./build/all_reduce_perf", "-b", "1K", "-e", "256M", "-f", "2", "-g", "1", "-J", "split.json"])
        path = out / ("all_reduce_perf_split_%s_2x8.txt" % name)
        path.write_text(mpirun(run, split) + "\n" + run.text())
        if name == "and7":
            (out / ("all_reduce_perf_split_%s_2x8.json" % name)).write_text(run.json())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
