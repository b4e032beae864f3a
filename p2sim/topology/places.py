"""A node's own place symmetry: permutations of its GPUs' blocks that are automorphisms of the system.

Every node of a p2sim topology is one template; inside it, GPUs often come in alike blocks, each
with the components it alone reaches (a GB200 NVL72 rack's compute trays: two GPUs on one Grace
CPU, with their two NICs behind it, every GPU on the shared NVLink switch).  Permuting whole blocks
(each block's GPUs and components in order onto another's), the same way in every node, is then an
exact symmetry of the system when it maps every link of the node to a link of the same class,
capacity and latency, and every NIC's cable to an alike one (on a fabric with rails, the same rail;
ECMP fabrics hash NIC indices, and faults are place-specific: neither has a place symmetry here).

:func:`place_symmetry` finds the smallest such block size by mapping the template's link list
(never assuming a file's structure) under the transpositions of block 0 with every other block,
which generate every permutation of the blocks.  :meth:`PlaceSymmetry.canonical` names a group by
its blocks renumbered in ascending order (the group's blocks first, the others after them, each in
order): a map that keeps the relative order of every place the group has, so ties NCCL breaks by
index among its own GPUs fall alike.  :meth:`PlaceSymmetry.move_edges` moves link ids by a block
permutation (a fabric's trunks stay: with one rail every NIC of a node reaches the same leaf).

Examples
--------
>>> from p2sim.topology import load_system
>>> sym = load_system("gb200-nvl72-pod", 2).places
>>> sym.block, sym.blocks
(2, 36)
>>> canon, perm = sym.canonical((5, 9, 77))   # GPUs 5 and 9 of rack 0 (blocks 2, 4), GPU 5 of rack 1
>>> canon, perm[:4]
((1, 3, 73), (2, 4, 0, 1))
>>> load_system("superpod-h100", 4).places is None    # 8 rails: a NIC's rail is its place
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["PlaceSymmetry", "place_symmetry"]


@dataclass(frozen=True, eq=False)
class PlaceSymmetry:
    """The node's blocks of ``block`` consecutive GPUs (``blocks`` of them), any permutation of which (the
    same in every node) is an automorphism of the system.

    ``names``: per block, the local names it owns (its GPUs, then its components in file order), position
    by position alike; ``node_edges``: the node's directed links ``(a, z)`` in id order; ``inner``: the
    flat network's per-node blocks of ids ``(first, inner component, outer, class)``; ``cables``: the
    fabric's first cable id per NIC (index of the fabric's NICs).
    """

    gpus_per_node: int
    block: int
    blocks: int
    names: tuple[tuple[str, ...], ...]
    node_edges: tuple[tuple[str, str], ...]
    node_count: int
    inner: tuple[tuple[int, str, str, str], ...]
    fabric_nics: tuple[str, ...]
    cable_first: int | None
    _maps: dict = field(default_factory=dict, repr=False)

    def canonical(self, members) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
        """The group with its blocks renumbered ascending (its own blocks first, in order), and the block
        permutation ``perm`` (canonical block ``i`` is block ``perm[i]``) that maps it back; ``perm`` None
        where the group is its own canonical form."""
        gpn, b = self.gpus_per_node, self.block
        used = sorted({(m % gpn) // b for m in members})
        if used[-1] == len(used) - 1:
            return tuple(members), None
        seen = set(used)
        perm = tuple(used) + tuple(x for x in range(self.blocks) if x not in seen)
        back = {p: i for i, p in enumerate(perm)}
        canon = tuple((m // gpn) * gpn + back[(m % gpn) // b] * b + m % b for m in members)
        return canon, perm

    def canonical_rows(self, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`canonical` of many groups of one size (a row of GPUs each), in array passes: the canonical
        groups (rows), the permutations (rows) and whether each group is its own canonical form."""
        groups = np.asarray(groups, dtype=np.int64)
        gpn, b = self.gpus_per_node, self.block
        local = groups % gpn
        blk = local // b
        rows = np.arange(len(groups), dtype=np.int64)[:, None]
        mark = np.zeros((len(groups), self.blocks), dtype=bool)
        mark[rows, blk] = True
        rank = np.cumsum(mark, axis=1) - 1
        canon = (groups // gpn) * gpn + rank[rows, blk] * b + local % b
        own = blk.max(axis=1) == mark.sum(axis=1) - 1
        perms = np.argsort(~mark, axis=1, kind="stable")  # its blocks ascending, then the others ascending
        return canon, perms, own

    def gpus(self, perm: tuple[int, ...]) -> np.ndarray:
        """Per local GPU, its place under ``perm`` (block ``i`` to block ``perm[i]``, offsets kept)."""
        b = self.block
        return (np.repeat(np.asarray(perm, dtype=np.int64) * b, b) + np.tile(np.arange(b, dtype=np.int64), self.blocks))

    def move_devices(self, devices: np.ndarray, perm: tuple[int, ...]) -> np.ndarray:
        """Global GPU indices moved by ``perm`` in their nodes (negative ones, switches, kept)."""
        devices = np.asarray(devices, dtype=np.int64)
        gpn = self.gpus_per_node
        moved = (devices // gpn) * gpn + self.gpus(perm)[devices % gpn]
        return np.where(devices >= 0, moved, devices)

    def move_edges(self, edges: np.ndarray, perm: tuple[int, ...]) -> np.ndarray:
        """Link ids moved by ``perm``: a node's links onto the moved components' links in the same node, a
        NIC's links to the network onto its image's, everything else (switches, trunks) kept."""
        local, inner, nics = self._tables(perm)
        edges = np.asarray(edges, dtype=np.int64)
        out = edges.copy()
        per, n = len(self.node_edges), self.node_count
        at = edges < per * n
        x = edges[at]
        out[at] = (x // per) * per + local[x % per]
        for first, to in inner:  # a flat network's per-node blocks of a component's links, onto its image's
            at = (edges >= first) & (edges < first + 2 * n)
            out[at] = edges[at] - first + to
        if self.cable_first is not None:  # the fabric's cables: 2 per node for each NIC, NIC by NIC
            c0, w = self.cable_first, 2 * n
            at = (edges >= c0) & (edges < c0 + w * len(self.fabric_nics))
            x = edges[at] - c0
            out[at] = c0 + nics[x // w] * w + x % w
        return out

    def _tables(self, perm: tuple[int, ...]) -> tuple[np.ndarray, tuple[tuple[int, int], ...], np.ndarray]:
        """What :meth:`move_edges` reads for ``perm`` (a few hundred ids; kept per permutation)."""
        hit = self._maps.get(perm)
        if hit is None:
            if len(self._maps) > 4096:  # a few KiB each; the permutations a run meets are few
                self._maps.clear()
            name = self.name_map(perm)
            index = {e: r for r, e in enumerate(self.node_edges)}
            local = np.array([index[(name[a], name[z])] for a, z in self.node_edges], dtype=np.int64)
            blocks = {(inner, outer, cls): first for first, inner, outer, cls in self.inner}
            inner = tuple((first, blocks[(name[a], z, cls)]) for first, a, z, cls in self.inner
                          if blocks[(name[a], z, cls)] != first)
            at = {nic: i for i, nic in enumerate(self.fabric_nics)}
            nics = np.array([at[name[nic]] for nic in self.fabric_nics], dtype=np.int64)
            hit = self._maps[perm] = (local, inner, nics)
        return hit

    def name_map(self, perm: tuple[int, ...]) -> dict[str, str]:
        """Each local name's image under ``perm`` (names no block owns: themselves)."""
        out = _Kept()
        for i, p in enumerate(perm):
            for a, z in zip(self.names[i], self.names[p]):
                out[a] = z
        return out


class _Kept(dict):
    """A name map that leaves names it does not hold (shared switches) as they are."""

    def __missing__(self, key: str) -> str:
        return key


def place_symmetry(topo) -> PlaceSymmetry | None:
    """The topology's place symmetry (:class:`PlaceSymmetry`, the smallest blocks), or None without one."""
    spec = topo.spec
    f = topo.fabric
    if spec.faults or (f is not None and f.ecmp):
        return None
    gpn = topo.gpus_per_node
    for b in range(1, gpn // 2 + 1):
        if gpn % b == 0:
            sym = _blocks_of(topo, b)
            if sym is not None:
                return sym
    return None


def _blocks_of(topo, b: int) -> PlaceSymmetry | None:
    """The symmetry of blocks of ``b`` GPUs, if every transposition of block 0 with another is an automorphism."""
    spec = topo.spec
    gpn, nb = topo.gpus_per_node, topo.gpus_per_node // b
    node = topo._node_edges  # (a, z, class, bytes/s, s) per directed link of a node
    adj: dict[str, set[str]] = {}
    for a, z, *_ in node:
        adj.setdefault(a, set()).add(z)
        adj.setdefault(z, set()).add(a)
    owner = {g: i // b for i, g in enumerate(spec.gpus)}
    comps = [c for c, _ in spec.components]
    changed = True
    while changed:  # a component owned by the one block whose owned parts it touches
        changed = False
        for c in comps:
            if c in owner:
                continue
            near = {owner[x] for x in adj.get(c, ()) if x in owner}
            if len(near) == 1:
                owner[c] = near.pop()
                changed = True
    kind = dict(spec.components)
    names = tuple(tuple(spec.gpus[i * b:(i + 1) * b]) + tuple(c for c in comps if owner.get(c) == i)
                  for i in range(nb))
    sig = [tuple(kind.get(x, "gpu") for x in blk) for blk in names]
    if any(s != sig[0] for s in sig):
        return None
    links = {(a, z, c, bw, t) for a, z, c, bw, t in node}
    inner = [(first, a, z, c) for first, a, _, z, c, _, _ in topo._blocks if a is not None]
    net = {(a, z, c, float(topo.capacity[first]), float(topo.latency[first])) for first, a, z, c in inner}
    fabric_nics, cable_first = (), None
    if topo.fabric is not None:
        fabric_nics = topo.fabric.nics
        cable_first = topo.fabric.cable(0, 0, True)
    usable = set(topo.nics)
    sym = PlaceSymmetry(gpn, b, nb, names, tuple((a, z) for a, z, *_ in node), topo.node_count,
                        tuple(inner), tuple(fabric_nics), cable_first)
    for j in range(1, nb):
        perm = list(range(nb))
        perm[0], perm[j] = j, 0
        m = sym.name_map(tuple(perm))
        if {(m[a], m[z], c, bw, t) for a, z, c, bw, t in links} != links:
            return None
        if {(m[a], z, c, bw, t) for a, z, c, bw, t in net} != net:
            return None
        for nic in fabric_nics:
            if not _alike_cables(topo, nic, m[nic]):
                return None
        if any((m[x] in usable) != (x in usable) for x in kind):
            return None
        if not _nics_follow(topo, m):
            return None
    return sym


def _nics_follow(topo, m: dict) -> bool:
    """Whether the NICs each GPU is near (in the router's order, which breaks NCCL's ties) and its default NIC
    move with the GPU under the name map ``m``.  A NIC that no block owns maps to itself, yet the router deals
    shared NICs out by GPU index (``Router._nic_assignment``: with ``[nccl] hca`` keeping two of perlmutter's four
    NICs, GPUs 0 and 2 get nic0, 1 and 3 nic1), so a transposition that keeps every link can still move a GPU
    onto another GPU's NIC: no symmetry there."""
    router, gpus = topo.router, topo.spec.gpus
    index = {g: i for i, g in enumerate(gpus)}
    default = router._nic_assignment
    for a, g in enumerate(gpus):
        image = index[m[g]]
        if [m[n] for n in router.local_nics(a)] != list(router.local_nics(image)):
            return False
        if (a in default) != (image in default) or (a in default and m[default[a]] != default[image]):
            return False
    return True


def _alike_cables(topo, nic: str, image: str) -> bool:
    """Whether NIC ``image`` is a fabric NIC on the same rail as ``nic`` with cables alike (every node's)."""
    f = topo.fabric
    if image not in f.nics:
        return False
    i, j = f.nics.index(nic), f.nics.index(image)
    if f.rail[i] != f.rail[j]:
        return False
    ids = [f.cable(k, 0, True) + np.arange(2 * f.nodes) for k in (i, j)]
    return bool((topo.capacity[ids[0]] == topo.capacity[ids[1]]).all()
                and (topo.latency[ids[0]] == topo.latency[ids[1]]).all())
