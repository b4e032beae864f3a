"""aws-ofi-nccl's rails: how the NICs it joins into one NCCL network device share a connection's messages.

On p5 the AWS network plugin (aws-ofi-nccl, RDMA protocol) presents the four 100 Gb/s EFA NICs behind each
GPU's PCIe switch as one device of 400 Gb/s (``src/platform-aws.cpp``, the p5 topology file; the device's
speed is the rails' sum, ``nccl_ofi_rdma.cpp``).  A message is not spread over all four: the plugin's
threshold scheduler (``src/nccl_ofi_scheduler.cpp``, ``get_num_stripes``) cuts a message of ``size`` bytes
into ``ceil(size / OFI_NCCL_MIN_STRIPE_SIZE)`` stripes (128 KiB, ``nccl_ofi_param.h``), at least one and at
most one per rail, lowered to the largest divisor of the rail count, and sends each stripe on its own rail,
the next message starting on the next rails (round robin).  So a message of 128 KiB or less rides one
100 Gb/s rail, one of 256 KiB two, and only one above 384 KiB all four.

What that costs a connection (:func:`rail_rate`): each message moves at its stripes' rate, and a connection
with ``m`` messages in flight keeps at most ``m x stripes`` rails busy.  NCCL's steps on the network are
small at medium sizes (a tree channel's share of a 2 MiB AllReduce over 16 channels is one 128 KiB
message), so a connection then runs at one rail's rate -- a quarter of the device NCCL was told of --
however idle the other rails are.  Large steps stripe over every rail and nothing changes.

Examples
--------
>>> [stripes(s, 4, 131072) for s in (8, 131072, 131073, 262144, 393216, 393217, 2**20)]
[1, 1, 2, 2, 2, 4, 4]
>>> stripes(2**20, 1, 131072), stripes(3 * 131072, 3, 131072)
(1, 3)
>>> rail_rate(50e9, 4, 131072, 131072, 1) / 1e9   # one 128 KiB message in flight: one rail of four
12.5
>>> rail_rate(50e9, 4, 131072, 131072, 8) / 1e9   # eight in flight, round robin: every rail
50.0
>>> rail_rate(50e9, 4, 131072, 2**20, 1) / 1e9    # a 1 MiB message stripes over all four
50.0
>>> message_rate(50e9, 4, 131072, 262144) / 1e9   # one 256 KiB message: its two stripes' rails
25.0
"""

from __future__ import annotations

import math

__all__ = ["stripes", "message_rate", "rail_rate"]


def stripes(size: float, rails: int, min_stripe: int) -> int:
    """Rails a message of ``size`` bytes is striped over: ``ceil(size / min_stripe)``, between 1 and ``rails``,
    lowered to the largest divisor of ``rails`` (aws-ofi-nccl's ``get_num_stripes``)."""
    n = max(1, min(math.ceil(size / min_stripe), rails))
    while rails % n:
        n -= 1
    return n


def message_rate(device_rate: float, rails: int, min_stripe: int, message: float) -> float:
    """Bytes per second one message of ``message`` bytes moves at: its stripes' rails (``device_rate`` the rails
    together, bytes/s); ``inf`` with one rail."""
    if rails <= 1:
        return math.inf
    return device_rate * stripes(message, rails, min_stripe) / rails


def rail_rate(device_rate: float, rails: int, min_stripe: int, message: float, in_flight: float) -> float:
    """The most bytes per second one connection moves over a device of ``rails`` rails (``device_rate`` the
    rails together, bytes/s) when its messages are ``message`` bytes on the wire and ``in_flight`` of them are
    outstanding at once: each message on its stripes' rails, the messages in flight on as many rails as they
    cover, never more than the device's."""
    if rails <= 1:
        return math.inf
    busy = min(rails, stripes(message, rails, min_stripe) * max(1.0, in_flight))
    return device_rate * busy / rails
