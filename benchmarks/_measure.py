"""What every benchmark prints last: CPU seconds and peak memory of its process, and the machine's load.

Wall seconds alone do not reproduce on a shared machine; CPU seconds (user + system, this process
and the children it waited for) and the peak resident set do much better, and the load average
says how busy the machine was.
"""

from __future__ import annotations

import os
import resource


def usage_line() -> str:
    """``cpu_seconds=.. peak_mib=.. load_average=..`` for this process and its waited-for children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    peak = max(me.ru_maxrss, kids.ru_maxrss) / 1024
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"cpu_seconds={cpu:.2f} peak_mib={peak:.0f} load_average={load} cores={os.cpu_count()}"


def print_usage() -> None:
    print(usage_line(), flush=True)
