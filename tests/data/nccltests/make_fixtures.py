"""How the fixtures here were made: nccl-tests 2.x layouts, printed with each version's C formats.

The layouts are those of nccl-tests' src/common.cu and src/util.cu (2.10: per-test leading
columns and an "error" column; 2.13: "redop root" and "#wrong"; 2.18: getFloatStr, PCI
domain ids, "Collective test starting").  The figures are synthetic (an alpha-beta model
with +-3 % noise, seeded), not measurements: the fixtures test the reader, not p2sim's
predictions.  Run ``python tests/data/nccltests/make_fixtures.py tests/data/nccltests``.
"""
import random
import sys
from pathlib import Path

OUT = Path(sys.argv[1]) if __name__ == "__main__" else None
BF = {"all_reduce": lambda n: 2*(n-1)/n, "reduce_scatter": lambda n: (n-1)/n, "all_gather": lambda n: (n-1)/n,
      "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0}

def c_g(v, w):  # printf %wg
    s = "%g" % v
    return s.rjust(w)

def float_str_new(v, w):  # getFloatStr (nccl-tests >= 2.17)
    for fmt in ("%*.2f", "%*.1f", "%*.0f"):
        s = fmt % (w, v)
        if len(s) <= w: return s
    return ("%*.1e" if w >= 7 else "%*.0e") % (w, v)

def time_str_old(us):  # nccl-tests <= 2.16
    if us >= 10000.0: return "%7.0f" % us
    if us >= 100.0: return "%7.1f" % us
    return "%7.2f" % us

def sizes_for(coll, n, lo, hi, f):
    s = lo
    while s <= hi:
        count = s // 4
        if coll in ("reduce_scatter", "all_gather"):
            param = count // n; size = param * 4 * n
        else:
            param = count; size = count * 4
        yield size, param
        s *= f

def model(coll, n, size, lat, bw, rnd):
    bf = BF[coll](n) if n > 1 else 1.0
    t = lat + size * max(bf, 0.5) / bw / 1e3  # us (bw GB/s)
    return t * (1 + rnd.uniform(-0.03, 0.03))

def table_rows(coll, n, lo, hi, f, lat, bw, seed, style, redop, root, errcol="wrong"):
    rnd = random.Random(seed)
    rows = []
    for size, param in sizes_for(coll, n, lo, hi, f):
        parts = []
        if style == "new":
            parts.append("%12li  %12li  %8s  %6s  %6s" % (size, param, "float", redop, "%6i" % root))
        elif style == "mid":
            parts.append("%12li  %12li  %8s  %6s  %6s" % (size, param, "float", redop, "%6i" % root))
        else:  # old per-test preambles
            pre = {"all_reduce": "%12li  %12li  %8s  %6s" % (size, param, "float", redop),
                   "reduce_scatter": "%12li  %12li  %8s  %6s" % (size, param, "float", redop),
                   "all_gather": "%12li  %12li  %8s" % (size, param, "float"),
                   "broadcast": "%12li  %12li  %8s  %6i" % (size, param, "float", root),
                   "reduce": "%12li  %12li  %8s  %6s  %6i" % (size, param, "float", redop, root)}[coll]
            parts.append(pre)
        for _ in range(2):
            if size == 0:
                us = lat * (1 + rnd.uniform(-0.03, 0.03))
            else:
                us = model(coll, n, size, lat, bw, rnd)
            alg = size / (us * 1e-6) / 1e9
            bus = alg * (BF[coll](n) if n > 1 else 1.0)
            if style == "new":
                parts.append("  %7s  %6s  %6s  %6g" % (float_str_new(us, 7), float_str_new(alg, 6), float_str_new(bus, 6), 0))
            elif style == "mid":
                parts.append("  %7s  %6.2f  %6.2f  %5g" % (time_str_old(us), alg, bus, 0))
            else:
                err = 0.0 if coll in ("all_gather", "broadcast") else rnd.choice([0.0, 1e-7, 2e-7])
                parts.append("  %7s  %6.2f  %6.2f  %5.0le" % (time_str_old(us), alg, bus, err))
        rows.append("".join(parts))
    return rows

def hdr_new():
    return ["#",
            "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          " % ("", "", "", "", ""),
            "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s" % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", 0, ""),
            "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s" % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", 0, "")]

def hdr_mid():
    return ["#",
            "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          " % ("", "", "", "", ""),
            "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s" % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"),
            "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s" % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")]

def hdr_old(coll):
    lead = {"all_reduce": ["size", "count", "type", "redop"], "reduce_scatter": ["size", "count", "type", "redop"],
            "all_gather": ["size", "count", "type"], "broadcast": ["size", "count", "type", "root"],
            "reduce": ["size", "count", "type", "redop", "root"]}[coll]
    widths = [10, 12, 8] + [6] * (len(lead) - 3)
    first = "# " + "  ".join("%*s" % (w, "") for w in widths) + "            out-of-place                       in-place          "
    names = "# " + "  ".join("%*s" % (w, t) for w, t in zip(widths, lead)) + "  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s" % ("time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error")
    units = "# " + "  ".join("%*s" % (w, t) for w, t in zip(widths, ["(B)", "(elements)"] + [""] * (len(lead) - 2))) + "  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s" % ("(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")
    return ["#", first, names, units]

def footer(avg, style, prog=None):
    out = ["# Out of bounds values : %d %s" % (0, "OK"), "# Avg bus bandwidth    : %g %s" % (avg, ""), "#"]
    if prog: out += ["# Collective test concluded: %s" % prog, "#"]
    return out

def avg_bus(rows):
    vals = []
    for r in rows:
        t = r.split()
        # last 8 numeric fields: time alg bus wrong x2
        vals += [float(t[-6]), float(t[-2])]
    return sum(vals) / len(vals)

def write(name, lines):
    (OUT / name).write_text("\n".join(lines) + "\n")

def main():
    OUT.mkdir(parents=True, exist_ok=True)
    # (a) nccl-tests 2.18, one node of 8 H100, all_reduce_perf -b 8 -e 128M -f 4
    n = 8
    lines = ["# nccl-tests version 2.18.3 nccl-headers=22703 nccl-library=22703",
             "# Collective test starting: all_reduce_perf",
             "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0",
             "#", "# Using devices"]
    pci = [0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb]
    for r in range(n):
        lines.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s" % (r, 0, 402311 + r, "dgx-h100-07", r, 0, pci[r], 0, "NVIDIA H100 80GB HBM3"))
    lines += ["NCCL version 2.27.3+cuda12.9"]
    lines += hdr_new()
    rows = table_rows("all_reduce", n, 8, 134217728, 4, 14.0, 340.0, 1, "new", "sum", -1)
    lines += rows + footer(avg_bus(rows), "new", "all_reduce_perf")
    write("all_reduce_perf_1node_h100.txt", lines)

    # (b) nccl-tests 2.13 under mpirun --tag-output, 2 nodes x 8 H100, NCCL_ALGO=Ring, -b 1M -e 1G -f 2
    n = 16
    P = "[1,0]<stdout>:"
    lines = ["$ mpirun -np 16 -npernode 8 --tag-output -x NCCL_ALGO=Ring -x NCCL_DEBUG=INFO ./build/all_reduce_perf -b 1M -e 1G -f 2 -g 1",
             P + "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
             P + "#", P + "# Using devices"]
    for r in range(n):
        host = "gpu-node-%02d" % (r // 8 + 1)
        lines.append(P + "#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s" % (r, 0, 1187 + r % 8, host, r % 8, pci[r % 8], "NVIDIA H100 80GB HBM3"))
    lines += ["[1,0]<stdout>:gpu-node-01:1187:1187 [0] NCCL INFO Bootstrap : Using eth0:10.1.0.11<0>",
              "[1,0]<stdout>:gpu-node-01:1187:1187 [0] NCCL INFO NCCL version 2.19.3+cuda12.3",
              "[1,0]<stdout>:gpu-node-01:1187:1205 [0] NCCL INFO NCCL_ALGO set by environment to Ring",
              "[1,8]<stdout>:gpu-node-02:1187:1206 [0] NCCL INFO NCCL_ALGO set by environment to Ring"]
    lines += [P + x for x in hdr_mid()]
    rows = table_rows("all_reduce", n, 1048576, 1073741824, 2, 45.0, 185.0, 2, "mid", "sum", -1)
    lines += [P + r for r in rows]
    lines.insert(len(lines) - 3, "[1,3]<stdout>:gpu-node-01:1190:1230 [3] NCCL INFO comm 0x55d0c8e0 rank 3 nranks 16 cudaDev 3 busId 5d000 - Init COMPLETE")
    lines += [P + x for x in footer(avg_bus(rows), "mid")]
    write("all_reduce_perf_2node_h100.txt", lines)

    # (c) nccl-tests 2.10 (NCCL 2.8), one process driving 8 V100 (-g 8), all_gather_perf, no redop/root columns
    n = 8
    lines = ["# nThread 1 nGpus 8 minBytes 8 maxBytes 67108864 step: 4(factor) warmup iters: 5 iters: 20 validation: 1 ",
             "#", "# Using devices"]
    for r in range(n):
        lines.append("#   Rank %2d Pid %6d on %10s device %2d [0x%02x] %s" % (r, 23141, "v100-box", r, [0x15, 0x16, 0x1b, 0x1c, 0x3a, 0x3b, 0x3d, 0x3e][r], "Tesla V100-SXM2-16GB"))
    lines += hdr_old("all_gather")
    rows = table_rows("all_gather", n, 8, 67108864, 4, 11.0, 120.0, 3, "old", "none", -1)
    lines += rows + footer(avg_bus(rows), "old")
    write("all_gather_perf_v100_nccl28.txt", lines)

    # (d) nccl-tests 2.10, reduce_scatter_perf, one node of 8 V100 one process per GPU, "error" column
    lines = ["# nThread 1 nGpus 1 minBytes 1024 maxBytes 16777216 step: 4(factor) warmup iters: 5 iters: 20 validation: 1 ",
             "#", "# Using devices"]
    for r in range(n):
        lines.append("#   Rank %2d Pid %6d on %10s device %2d [0x%02x] %s" % (r, 5100 + r, "v100-box", r, [0x15, 0x16, 0x1b, 0x1c, 0x3a, 0x3b, 0x3d, 0x3e][r], "Tesla V100-SXM2-16GB"))
    lines += hdr_old("reduce_scatter")
    rows = table_rows("reduce_scatter", n, 1024, 16777216, 4, 12.0, 110.0, 4, "old", "sum", -1)
    lines += rows + footer(avg_bus(rows), "old")
    write("reduce_scatter_perf_v100.log", lines)

    # (e) nccl-tests 2.13, broadcast_perf, 2 nodes x 8 H100, root 0
    n = 16
    lines = ["# nThread 1 nGpus 1 minBytes 65536 maxBytes 268435456 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
             "#", "# Using devices"]
    for r in range(n):
        host = "h100-%d" % (r // 8)
        lines.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s" % (r, 0, 77001 + r % 8, host, r % 8, pci[r % 8], "NVIDIA H100 80GB HBM3"))
    lines += hdr_mid()
    rows = table_rows("broadcast", n, 65536, 268435456, 4, 30.0, 45.0, 5, "mid", "none", 0)
    lines += rows + footer(avg_bus(rows), "mid")
    write("broadcast_perf_2node.txt", lines)

    # (f) nccl-tests 2.18, reduce_perf, one node of 8 H100, root 0
    n = 8
    lines = ["# nccl-tests version 2.18.3 nccl-headers=22703 nccl-library=22703",
             "# Collective test starting: reduce_perf",
             "# nThread 1 nGpus 1 minBytes 1024 maxBytes 67108864 step: 8(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0",
             "#", "# Using devices"]
    for r in range(n):
        lines.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s" % (r, 0, 9001 + r, "dgx-h100-07", r, 0, pci[r], 0, "NVIDIA H100 80GB HBM3"))
    lines += hdr_new()
    rows = table_rows("reduce", n, 1024, 67108864, 8, 16.0, 150.0, 6, "new", "sum", 0)
    lines += rows + footer(avg_bus(rows), "new", "reduce_perf")
    write("reduce_perf_1node_h100.txt", lines)

    # (g) a full-range log, 8 B - 8 GiB, one node of 8 H100 on NVSwitch (the dev rows' Azure ND H100 v5,
    # NCCL 2.18.5): times anchored at the five published points of that machine (busbw 43.70, 234.45,
    # 423.38, 466.35, 478.87 GB/s at 1, 16, 256 MiB, 1, 8 GiB; validation/collectives rows 23-27),
    # log-log interpolated between them, linear in size below 1 MiB down to a 16 us floor (8 x H20:
    # 12.5 us for 8 bytes, deepseek-ai/DeepEP#303; NCCL's own estimate for 8 H100 is 15 us), +-2 % noise
    n = 8
    lines = ["# nccl-tests version 2.13.8 nccl-headers=21805 nccl-library=21805",
             "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
             "#", "# Using devices"]
    for r in range(n):
        lines.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s" % (r, 0, 5501 + r, "ndh100v5-3", r, pci[r], "NVIDIA H100 80GB HBM3"))
    lines += hdr_mid()
    rows = full_range_rows(n, 7)
    lines += rows + footer(avg_bus(rows), "mid")
    write("all_reduce_perf_full_range_dgx_h100.txt", lines)


def full_range_rows(n, seed):
    import math
    rnd = random.Random(seed)
    bf = BF["all_reduce"](n)
    anchors = [(2**20, 43.70), (2**24, 234.45), (2**28, 423.38), (2**30, 466.35), (2**33, 478.87)]
    pts = [(math.log(sz), math.log(sz * bf / bus / 1e3)) for sz, bus in anchors]  # (log B, log us)
    floor = 16.0
    rows = []
    size = 8
    while size <= 2**33:
        if size <= 2**20:
            t = floor + (math.exp(pts[0][1]) - floor) * size / 2**20
        else:
            x = math.log(size)
            i = max(k for k in range(len(pts) - 1) if pts[k][0] <= x)
            (x0, y0), (x1, y1) = pts[i], pts[min(i + 1, len(pts) - 1)]
            t = math.exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0)) if x1 > x0 else math.exp(y0)
        parts = ["%12li  %12li  %8s  %6s  %6s" % (size, size // 4, "float", "sum", "%6i" % -1)]
        for _ in range(2):
            us = t * (1 + rnd.uniform(-0.02, 0.02))
            alg = size / (us * 1e-6) / 1e9
            parts.append("  %7s  %6.2f  %6.2f  %5g" % (time_str_old(us), alg, alg * bf, 0))
        rows.append("".join(parts))
        size *= 2
    return rows


if __name__ == "__main__":
    main()
