from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p2sim.formalism import reference_semantics as ref
from p2sim.collectives.volumes import step_fractions, step_volumes
from p2sim.util.errors import SemanticsError
from p2sim.formalism.hierarchy import Lowering
from p2sim.formalism.placement import Placement
from p2sim.formalism.program import Program, parse_program
from p2sim.formalism.semantics import Op

RS_AR_AG = "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)"
R_AR_B = "Reduce(slice=1, Inside) ; AllReduce(slice=1, Master(0)) ; Broadcast(slice=1, Inside)"


def one_group(levels) -> Lowering:
    """The whole system as one reduction group whose synthesis hierarchy is ``levels``."""
    k = math.prod(levels)
    return Lowering.of(Placement.of(list(levels), [k], [list(levels)]), [0])


def test_blueconnect_moves_one_nth_across_nodes():
    lw = Lowering.of(Placement.of((2, 16), (2, 16), ((1, 2), (2, 8))), [1])  # groups of 16 = 2 nodes x 8
    vols = step_volumes(lw, parse_program(RS_AR_AG), 1024.0)
    assert [set(v) for v in vols] == [{1024.0}, {128.0}, {1024.0}]
    assert [len(v) for v in vols] == [4, 16, 4]  # 2 reduction groups x (2, 8, 2) groups
    assert [set(v) for v in step_volumes(lw, parse_program(R_AR_B), 1024.0)] == [{1024.0}] * 3


@pytest.mark.parametrize("nodes", [256, 1024])
def test_sizes_at_thousands_of_gpus(nodes):
    lw = one_group([nodes, 16])
    fr = step_fractions(lw, parse_program(RS_AR_AG))
    assert [len(f) for f in fr] == [nodes, 16, nodes]
    assert [set(f) for f in fr] == [{1.0}, {1 / 16}, {1.0}]
    fr = step_fractions(lw, parse_program("ReduceScatter(slice=0, Inside) ; AllGather(slice=0, Inside)"))
    assert fr == [(1.0,), (1.0,)]


def test_count_visible_violations_raise():
    lw = one_group([2, 3])
    with pytest.raises(SemanticsError, match="AllGather"):
        step_fractions(lw, parse_program("AllGather(slice=0, Inside)"))
    with pytest.raises(SemanticsError, match="evenly"):
        step_fractions(lw, parse_program("ReduceScatter(slice=0, Inside) ; ReduceScatter(slice=1, Inside)"))
    with pytest.raises(SemanticsError, match="no data"):
        step_fractions(lw, parse_program("Reduce(slice=1, Inside) ; AllReduce(slice=0, Inside)"))
    with pytest.raises(SemanticsError, match="cover"):  # the masters hold 2 rows, the others 4
        step_fractions(one_group([2, 2]), parse_program("ReduceScatter(slice=1, Master(0)) ; Broadcast(slice=1, Inside)"))


def test_prefixes_are_kept_in_the_callers_memo_not_on_the_lowering():
    """The collectives' buffer fractions live in the memo their caller owns (a context's row_counts), shared
    by every lowering with the same hierarchy (d); the formalism's Lowering carries no cache of theirs."""
    lw = one_group([4, 4])
    memo: dict = {}
    a = step_fractions(lw, parse_program(RS_AR_AG), memo)
    assert list(memo) == [(lw.synthesis, 1)]
    assert any(key[0] == "row counts" for key in memo[(lw.synthesis, 1)])
    assert not hasattr(lw, "memo") and "memo" not in vars(lw)
    other = one_group([4, 4])  # another lowering, same (d): the same objects, not computed again
    b = step_fractions(other, parse_program(RS_AR_AG), memo)
    assert b == a and all(x is y for x, y in zip(a, b))
    assert step_fractions(lw, parse_program(RS_AR_AG)) == a  # without a memo: the same numbers, nothing kept


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(2, 5), min_size=1, max_size=4), st.data())
def test_sizes_equal_the_reference_states_rows(levels, data):
    """On random valid programs, the row counts give exactly the sizes the k x k states give."""
    while math.prod(levels) > 64:
        levels.pop()
    lw = one_group(levels)
    sh = lw.synthesis
    k = sh.size
    table = [(ins, sh.groups(ins)) for ins in sh.instructions()]
    state = ref.State.initial(k)
    chosen, expected = [], []
    for _ in range(data.draw(st.integers(1, 6))):
        moves = [(ins, g, nxt) for ins, g in table if (nxt := ref.try_apply(state, ins.op, g)) is not None]
        if not moves or state.is_goal:
            break
        ins, groups, nxt = data.draw(st.sampled_from(moves))
        source = nxt if ins.op is Op.ALL_GATHER else state
        expected.append(tuple(source.held_rows(g[0]) / k for g in groups))
        chosen.append(ins)
        state = nxt
    if chosen:
        assert step_fractions(lw, Program(tuple(chosen))) == expected


def test_prefixes_reaching_the_same_rows_keep_one_array():
    """The memo keeps row counts per program prefix; prefixes that end in the same rows share one read-only
    array (a 224-rack gb200-nvl72-pod rank kept 88,498 arrays of a few dozen states: 174 MiB)."""
    lw = one_group([4, 8])
    memo: dict = {}
    for text in ("AllReduce(slice=1, Inside)", "ReduceScatter(slice=1, Inside) ; AllGather(slice=1, Inside)",
                 RS_AR_AG, R_AR_B):
        step_fractions(lw, parse_program(text), memo)
    (kept,) = memo.values()
    helds = [v[0] for k, v in kept.items() if k[0] == "row counts"]
    assert len(helds) == 8  # AR; RS, RS;AG; RS;AR, RS;AR;AG; R, R;AR, R;AR;B
    distinct = {h.tobytes() for h in helds}
    assert len({id(h) for h in helds}) == len(distinct) < len(helds)  # one array per state
    assert not any(h.flags.writeable for h in helds)
    # and the fractions are those computed without a memo
    assert step_fractions(lw, parse_program(RS_AR_AG), memo) == step_fractions(lw, parse_program(RS_AR_AG))
