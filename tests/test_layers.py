"""The package's layers import one way only, and SimPy only in the simulator.

util -> formalism -> workload -> topology -> collectives -> sim -> studies -> measurements -> report ->
api (and options, the table of defaults; boundary, its argument checks) -> cli.  ``p2sim/util`` (errors, file reading, parsing, units) sits below everything;
the package's own ``__init__`` re-exports the API.  Read from the source with ``ast``, so a
lazy import inside a function counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "p2sim"

UTILITIES = {"util"}
LAYERS = [{"formalism"}, {"workload"}, {"topology"}, {"collectives"}, {"sim"}, {"studies"}, {"measurements"}, {"report"},
          {"api", "options", "boundary"}, {"cli", "__main__"}]


def _layer(part: str) -> int:
    if part in UTILITIES:
        return -1
    for i, names in enumerate(LAYERS):
        if part in names:
            return i
    raise AssertionError(f"p2sim.{part} belongs to no layer: add it to tests/test_layers.py")


def _imports(path: Path, root: Path = PACKAGE.parent) -> list[tuple[int, str]]:
    """(line, absolute module) of every p2sim or SimPy import in a file under ``root``."""
    rel = path.relative_to(root).with_suffix("")
    package = list(rel.parts[:-1])
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "p2sim":
                out += [(node.lineno, f"p2sim.{a.name}") for a in node.names]
            elif target.startswith("p2sim."):
                out.append((node.lineno, target))
            elif target.split(".")[0] == "simpy":
                out.append((node.lineno, "simpy"))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("p2sim") or a.name.split(".")[0] == "simpy":
                    out.append((node.lineno, a.name))
    return out


SOURCES = sorted(p for p in PACKAGE.rglob("*.py"))


def _part(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    return rel.parts[0]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down_the_layers(path):
    if path.name == "__init__.py" and path.parent == PACKAGE:
        return  # the package's front door re-exports from every layer
    own = _layer(_part(path))
    for line, target in _imports(path):
        if target == "simpy":
            assert _part(path) == "sim", f"{path.name}:{line}: SimPy is imported only by p2sim/sim"
            continue
        part = target.split(".")[1]
        assert _layer(part) <= own, f"{path.relative_to(PACKAGE)}:{line} imports {target}, a higher layer"


def test_the_check_sees_violations(tmp_path):
    """Relative, absolute and lazy imports are all read, so the check above can fail."""
    f = tmp_path / "p2sim" / "collectives" / "bad.py"
    f.parent.mkdir(parents=True)
    f.write_text("from ..sim import engine\nimport p2sim.studies.ranking\n\n\ndef f():\n    import simpy\n"
                 "    from p2sim import report\n    from . import ring\n")
    got = _imports(f, tmp_path)
    assert got == [(1, "p2sim.sim"), (2, "p2sim.studies.ranking"), (6, "simpy"), (7, "p2sim.report"),
                   (8, "p2sim.collectives")]
    assert [_layer(t.split(".")[1]) > _layer("collectives") for _, t in got if t != "simpy"] == [True, True, True, False]


def _edges(path: Path, root: Path = PACKAGE) -> list[tuple[int, Path]]:
    """(line, source file) of every p2sim module a file imports, lazy imports included, package front doors
    (``__init__.py``) too.  ``from X import a`` leads to the submodule ``X.a`` where there is one (the
    package ``X`` is then already importing: its parent, not an edge) and to ``X``'s own file otherwise."""
    rel = path.relative_to(root.parent).with_suffix("")
    package = list(rel.parts[:-1])

    def module_of(name: str) -> Path | None:
        if name != root.name and not name.startswith(root.name + "."):
            return None
        sub = Path(*name.split(".")[1:]) if "." in name else Path()
        for cand in (root / sub.with_suffix(".py") if sub.parts else None, root / sub / "__init__.py"):
            if cand is not None and cand.exists():
                return cand
        return None

    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[:len(package) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for a in node.names:
                dst = module_of(f"{base}.{a.name}") or module_of(base)
                if dst is not None:
                    out.append((node.lineno, dst))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, dst) for a in node.names if (dst := module_of(a.name)) is not None]
    return [(line, dst) for line, dst in out if dst != path]


def _cycles(sources: list[Path], root: Path = PACKAGE) -> list[list[str]]:
    import networkx as nx

    g = nx.DiGraph()
    for path in sources:
        g.add_node(str(path.relative_to(root)))
        for _, dst in _edges(path, root):
            g.add_edge(str(path.relative_to(root)), str(dst.relative_to(root)))
    rotated = [c[c.index(min(c)):] + c[:c.index(min(c))] for c in nx.simple_cycles(g)]
    return sorted(rotated, key=lambda c: (len(c), c))


def test_no_import_cycles_between_modules():
    """Modules import one another without a cycle, lazy imports and package front doors (``__init__.py``,
    which re-export their rooms) included: a module that reaches its package's front door from inside
    that package closes a loop Python only survives while the import order happens to suit it."""
    cycles = _cycles(SOURCES)
    assert not cycles, f"import cycles: {cycles[:3]}"


def test_the_cycle_check_sees_a_cycle_through_a_front_door(tmp_path):
    """The cycle base -> baseline -> algorithms/__init__ -> base, once missed because the check skipped
    edges into ``__init__.py``; ``from . import sub`` names the submodule, not its package."""
    root = tmp_path / "p2sim"
    algos = root / "collectives" / "algorithms"
    algos.mkdir(parents=True)
    for f, text in {root / "__init__.py": "", root / "collectives" / "__init__.py": "",
                    algos / "__init__.py": "from .base import Algorithm\n",
                    algos / "base.py": "from ..baseline import ring_baseline\n",
                    root / "collectives" / "baseline.py": "def f():\n    from .algorithms import algorithm\n",
                    root / "collectives" / "ring.py": "from . import baseline\n"}.items():
        f.write_text(text)
    sources = sorted(root.rglob("*.py"))
    assert _cycles(sources, root) == [["collectives/algorithms/__init__.py", "collectives/algorithms/base.py",
                                       "collectives/baseline.py"]]
    (root / "collectives" / "baseline.py").write_text("")
    assert _cycles(sources, root) == []


def _named(node: ast.AST, names: tuple[str, ...], suffix: str) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name in names or name.endswith(suffix)


def _topology_expr(node: ast.AST) -> bool:
    """An expression that names a topology (or its router) by p2sim's conventions: ``topo``, ``topology``,
    ``x.topo``, ``topo.router``."""
    if isinstance(node, ast.Attribute) and node.attr == "router" and _topology_expr(node.value):
        return True
    return _named(node, ("topo", "topology", "_topo", "router"), "_topo")


def _lowering_expr(node: ast.AST) -> bool:
    """An expression that names a formalism lowering by p2sim's conventions: ``lowering``, ``lw``, ``x.lowering``."""
    return _named(node, ("lowering", "lw", "_lowering"), "_lowering")


def _stores_on(tree: ast.AST, owner) -> list[int]:
    """Lines that store on an object ``owner`` recognises: ``o.x = ..``, ``o.x[k] = ..``, ``o.x.setdefault(..)``
    and the like, or that read its ``memo`` (the parking place of other layers' caches, now gone)."""
    mutators = {"setdefault", "update", "pop", "clear", "append", "add", "__setitem__", "popitem"}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and owner(node.value):
            if not isinstance(node.ctx, ast.Load) or node.attr == "memo":
                lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
            if isinstance(node.value, ast.Attribute) and owner(node.value.value):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in mutators:
            inner = node.func.value
            if isinstance(inner, ast.Attribute) and owner(inner.value):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            if node.args and owner(node.args[0]):
                lines.append(node.lineno)
    return sorted(set(lines))


def _stores_on_a_topology(tree: ast.AST) -> list[int]:
    return _stores_on(tree, _topology_expr)


@pytest.mark.parametrize("path", [p for p in SOURCES if _part(p) != "topology"],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_code_outside_the_topology_stores_on_a_topology(path):
    """A topology is an immutable graph: the layers above keep their caches in a context they own
    (p2sim.collectives.caches, p2sim.sim.context), not on the topology of the layer below."""
    lines = _stores_on_a_topology(ast.parse(path.read_text(encoding="utf-8")))
    assert not lines, f"{path.relative_to(PACKAGE)}:{lines}: stores on a topology (keep it in the context)"


def test_the_topology_check_sees_stores():
    src = ("def f(topo, self):\n    topo.memo[1] = 2\n    self.topo.memo.setdefault(1, {})\n    topo.x = 1\n"
           "    return topo.capacity[0], topo.memo.get(1)\n")
    assert _stores_on_a_topology(ast.parse(src)) == [2, 3, 4, 5]
    src = ("def f(topo):\n    topo.router._routes[1] = 2\n    setattr(topo, 'x', 1)\n"
           "    return topo.router.route(0, 1), topo.router.nics\n")
    assert _stores_on_a_topology(ast.parse(src)) == [2, 3]


@pytest.mark.parametrize("path", [p for p in SOURCES if _part(p) != "formalism"],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_code_outside_the_formalism_stores_on_a_lowering(path):
    """A lowering is a formalism value: the collectives keep the buffer fractions they derive from one in
    their own caches (p2sim.collectives.caches, row_counts), not on it."""
    lines = _stores_on(ast.parse(path.read_text(encoding="utf-8")), _lowering_expr)
    assert not lines, f"{path.relative_to(PACKAGE)}:{lines}: stores on a lowering (keep it in the context)"


def test_the_lowering_check_sees_stores():
    src = ("def f(lowering, lw):\n    lowering.memo[1] = 2\n    hit = lw.memo.get(1)\n"
           "    return lowering.table.shape[0], lw.lower(p)\n")
    assert _stores_on(ast.parse(src), _lowering_expr) == [2, 3]


# Module-level maps keyed by a topology that stay, each with its reason (the rest live in the context a study
# holds: p2sim.collectives.caches.CollectiveCaches, p2sim.sim.context.SimulationContext).
TOPOLOGY_MAPS_ALLOWED = {
    "studies/contexts.py:_CONTEXTS": "the process's registry of the contexts themselves (by spec and node count, "
                                     "found again by a sweep's tasks in a worker process): it cannot live inside "
                                     "one; it keeps only the last context, the others weakly",
    "studies/step_comm.py:_KEPT": "a model step's one-call and contention times for the configuration search's "
                                  "many configurations: the step is handed a topology, not a study's context; "
                                  "numbers only, by the topology object weakly (they go with it)",
    "studies/step_comm.py:_LAST": "one slot: the last topology's lowering of its last job and its contention "
                                  "simulators, dropped when another topology comes (as a context keeps its last)",
}

_MAP_MAKERS = {"dict", "defaultdict", "OrderedDict", "WeakKeyDictionary", "WeakValueDictionary", "Counter"}


def _keyed_expr(node: ast.AST) -> bool:
    """A topology (or its router), or the system spec a topology is built from."""
    return _topology_expr(node) or _named(node, ("spec",), "_spec")


def _module_maps(tree: ast.Module) -> dict[str, bool]:
    """Module-level names bound to a mapping (a dict, a weak map, an instance of a class of the module): name ->
    whether keyed by objects (a weak-key map: in p2sim, topologies)."""
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value, note = node.targets, node.value, None
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value, note = [node.target], node.value, node.annotation
        else:
            continue
        maker = ""
        if isinstance(value, ast.Call):
            f = value.func
            maker = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        is_map = (isinstance(value, (ast.Dict, ast.DictComp)) or maker in _MAP_MAKERS or maker in classes
                  or (note is not None and "dict" in ast.unparse(note).lower()))
        if is_map:
            for t in targets:
                if isinstance(t, ast.Name):
                    out[t.id] = maker == "WeakKeyDictionary"
    return out


def _topology_keyed_maps(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, name) of module-level maps keyed by a topology: weak-key maps, and maps indexed, asked (``get``,
    ``pop``, ``setdefault``, any method) or tested (``in``) with a topology, its router or its spec; and
    module-level functions cached (``lru_cache``, ``cache``) on a topology parameter."""
    maps = _module_maps(tree)
    found = {(getattr(n, "lineno", 0), name) for name, weak in maps.items() if weak
             for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
             and name in [t.id for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                          if isinstance(t, ast.Name)]}
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in maps:
            keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if any(_keyed_expr(k) for k in keys):
                found.add((node.lineno, node.value.id))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Name) and node.func.value.id in maps):
            if node.args and _keyed_expr(node.args[0]):
                found.add((node.lineno, node.func.value.id))
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            if (any(isinstance(c, ast.Name) and c.id in maps for c in node.comparators)
                    and _keyed_expr(node.left)):
                found.add((node.lineno, next(c.id for c in node.comparators if isinstance(c, ast.Name))))
    for node in ast.walk(tree):  # a topology's id() is a key a later topology may reuse: a map keyed by it hides
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "id"
                and node.args and _keyed_expr(node.args[0])):
            found.add((node.lineno, "id()"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(
                _named(d.func if isinstance(d, ast.Call) else d, ("lru_cache", "cache"), "\0")
                for d in node.decorator_list):
            if any(_keyed_expr(ast.Name(a.arg)) for a in node.args.args):
                found.add((node.lineno, node.name))
    return sorted(found)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_level_map_is_keyed_by_a_topology(path):
    """What is derived from a topology lives in the context a study holds (p2sim.collectives.caches,
    p2sim.sim.context), which ``clear()`` and the expansions' ledger see, not in a module-level map that
    outlives them (``ring._CYCLIC``, ``collnet._HEADS`` were)."""
    rel = str(path.relative_to(PACKAGE))
    found = [(line, name) for line, name in _topology_keyed_maps(ast.parse(path.read_text(encoding="utf-8")))
             if f"{rel}:{name}" not in TOPOLOGY_MAPS_ALLOWED]
    assert not found, f"{rel}: module-level maps keyed by a topology {found}: keep them in the context"


def test_the_allowed_topology_maps_exist():
    """Each exception names a map that is still there (a stale one hides nothing)."""
    for key in TOPOLOGY_MAPS_ALLOWED:
        rel, name = key.split(":")
        assert (rel_line := _topology_keyed_maps(ast.parse((PACKAGE / rel).read_text(encoding="utf-8")))), key
        assert name in [n for _, n in rel_line], key


def test_the_map_check_sees_maps_keyed_by_a_topology():
    src = ("import weakref\nfrom functools import lru_cache\n"
           "_CYCLIC: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()\n"
           "_HEADS = {}\n_DOUBLE: dict[int, tuple] = {}\n"
           "class _Reg:\n    pass\n_REG = _Reg()\n"
           "def f(topo, n, spec):\n    _HEADS.setdefault(topo, {})\n    _DOUBLE[n] = 1\n"
           "    return _REG.get(spec, n), topo.router in _HEADS\n"
           "@lru_cache(maxsize=None)\ndef g(topo):\n    return 1\n"
           "@lru_cache(maxsize=None)\ndef h(nodes):\n    return 1\n")
    assert _topology_keyed_maps(ast.parse(src)) == [(3, "_CYCLIC"), (10, "_HEADS"), (12, "_HEADS"), (12, "_REG"),
                                                   (14, "g")]


def test_the_map_check_sees_a_topologys_id_in_a_key():
    """``(id(topo), n)`` keys a map by a topology as surely as ``topo`` does, and a later topology may reuse the
    id: the check sees it wherever it is built."""
    src = "_T = {}\ndef f(topo, n):\n    key = (id(topo), n)\n    return _T.get(key), id(n)\n"
    assert _topology_keyed_maps(ast.parse(src)) == [(3, "id()")]


MAX_LINES = 500  # the DEVELOPERS guide: one concept per module, modules under 500 lines

# Modules allowed over MAX_LINES, each with its reason (a stale entry fails below).
LONG_MODULES: dict[str, str] = {}


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_are_under_500_lines(path):
    rel = str(path.relative_to(PACKAGE))
    if rel in LONG_MODULES:
        return
    assert _lines(path) <= MAX_LINES, (f"{rel} has {_lines(path)} lines, over {MAX_LINES}: split it along its "
                                       f"concepts (or name it in LONG_MODULES with the reason)")


def test_the_long_modules_named_are_long():
    """An exception outlives its reason when the module is split or shrinks: then it goes."""
    for rel in LONG_MODULES:
        assert (PACKAGE / rel).exists() and _lines(PACKAGE / rel) > MAX_LINES, rel
