from __future__ import annotations

import pytest

from p2sim.formalism import reference_semantics as ref
from p2sim.util.errors import InputError, PlacementError, ProgramError
from p2sim.formalism.hierarchy import SynthesisHierarchy
from p2sim.formalism.program import Program, parse_program
from p2sim.formalism.synthesis import (
    Profile,
    _distinct_instructions,
    placement_lowerings,
    synthesize,
    synthesize_placements,
    validate_program,
)

from .conftest import config_of


def test_paper_profile_reproduces_every_appendix_row(count_row):
    h, axes, red = config_of(count_row)
    s = synthesize_placements(h, axes, red, Profile.PAPER)
    assert len(s.matrices) == int(count_row["matrices"])
    assert s.total_programs == int(count_row["programs_total"])
    # the device order changes the lowering, never the synthesis hierarchy or the programs
    p2 = synthesize_placements(h, axes, red, Profile.PAPER, order="p2")
    assert p2.order.value == "p2" and all(m.lowering.order.value == "p2" for m in p2.matrices)
    assert [(m.synthesis, m.programs) for m in p2.matrices] == [(m.synthesis, m.programs) for m in s.matrices]


@pytest.mark.parametrize("levels", [[2], [16], [2, 2], [2, 8], [4, 16], [3, 5]])
def test_full_profile_counts_for_one_and_two_levels(levels):
    expected = 3 if len(levels) == 1 else 93
    assert len(synthesize(SynthesisHierarchy.of(levels), Profile.FULL)) == expected
    assert len(synthesize(SynthesisHierarchy.of(levels), Profile.PAPER)) == (3 if len(levels) == 1 else 47)


@pytest.mark.parametrize("levels", [[2, 2, 2], [2, 4, 8], [1, 2, 2, 4]])
def test_three_level_counts(levels):
    # measured with this implementation (max size 5), see README
    assert len(synthesize(SynthesisHierarchy.of(levels), Profile.PAPER)) == 825
    assert len(synthesize(SynthesisHierarchy.of(levels), Profile.FULL)) == 1635


def test_shortest_first_and_distinct():
    progs = synthesize(SynthesisHierarchy.of([2, 8]), Profile.FULL)
    lengths = [len(p) for p in progs]
    assert lengths == sorted(lengths)
    assert len({p.text for p in progs}) == len(progs)
    assert progs[0].text == "AllReduce(slice=0, Inside)"


def test_p2s_two_favourite_programs_are_found():
    texts = {p.text for p in synthesize(SynthesisHierarchy.of([2, 8]))}
    assert "Reduce(slice=1, Inside) ; AllReduce(slice=1, Master(0)) ; Broadcast(slice=1, Inside)" in texts
    assert "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)" in texts


def test_paper_profile_uses_master_only_with_allreduce():
    paper = synthesize(SynthesisHierarchy.of([2, 4, 2]), Profile.PAPER)
    full = synthesize(SynthesisHierarchy.of([2, 4, 2]), Profile.FULL)
    masters = {i.op.value for p in paper for i in p if i.form.value == "Master"}
    assert masters == {"AllReduce"}
    assert {i.op.value for p in full for i in p if i.form.value == "Master"} > {"AllReduce"}
    assert {p.text for p in paper} < {p.text for p in full}


def test_max_size_limits_program_length():
    progs = synthesize(SynthesisHierarchy.of([2, 8]), Profile.FULL, 3)
    assert max(len(p) for p in progs) == 3
    assert len(progs) == 1 + 4 + 24


def test_deduplication_by_groups():
    # on [1,2,2,4] no two distinct instructions of the table share op and groups
    sh = SynthesisHierarchy.of([2, 2, 4])
    seen = {}
    for p in synthesize(sh, Profile.FULL):
        for ins in p:
            key = (ins.op, sh.groups(ins))
            assert seen.setdefault(key, ins) == ins


def test_bad_arguments():
    with pytest.raises(InputError, match="profile"):
        Profile.parse("fastest")
    with pytest.raises(InputError, match="max-size"):
        synthesize(SynthesisHierarchy.of([2, 8]), Profile.PAPER, 0)
    with pytest.raises(PlacementError, match="nothing to reduce"):
        synthesize_placements([2, 8], [16, 1], [1])
    with pytest.raises(PlacementError, match="out of range"):
        synthesize_placements([2, 8], [2, 8], [2])


def test_given_matrix_only():
    s = synthesize_placements([4, 16], [4, 16], [0], matrices=[((2, 2), (2, 8))])
    assert [m.matrix for m in s.matrices] == [((2, 2), (2, 8))]
    assert s.total_programs == 47
    assert parse_program(s.matrices[0].programs[-1].text) == s.matrices[0].programs[-1]


def reference_synthesis(sh: SynthesisHierarchy, profile: Profile, max_size: int = 5) -> list[str]:
    """The synthesizer as it was on k x k states: a memoised depth-first enumeration."""
    table = [(ins, sh.groups(ins)) for ins, _ in _distinct_instructions(sh, profile)]
    memo: dict = {}

    def complete(state, left):
        key = (state, left)
        if key not in memo:
            found = []
            for idx, (ins, groups) in enumerate(table):
                nxt = ref.try_apply(state, ins.op, groups)
                if nxt is None:
                    continue
                if nxt.is_goal:
                    found.append((idx,))
                elif left > 1:
                    found.extend((idx,) + rest for rest in complete(nxt, left - 1))
            memo[key] = found
        return memo[key]

    paths = sorted(complete(ref.State.initial(sh.size), max_size), key=lambda p: (len(p), p))
    return [Program(tuple(table[i][0] for i in p)).text for p in paths]


@pytest.mark.parametrize("profile", list(Profile))
# four levels: the reference's states are the most there (8 s on 2 cores, both profiles)
@pytest.mark.parametrize("levels", [[6], [2, 3], [3, 4], [2, 2, 3], [3, 2, 2], [2, 3, 2],
                                    pytest.param([2, 2, 2, 2], marks=pytest.mark.slow)])
def test_compact_synthesis_is_the_reference_synthesis(levels, profile):
    """Same programs in the same order, including hierarchies whose ReduceScatter
    blocks cut across level digits."""
    sh = SynthesisHierarchy.of(levels)
    assert [p.text for p in synthesize(sh, profile)] == reference_synthesis(sh, profile)


def test_synthesis_is_shared_by_hierarchies_with_the_same_cardinalities():
    a = SynthesisHierarchy((1, 2, 8), (None, 0, 1))
    b = SynthesisHierarchy((1, 2, 8), (None, 1, 2))
    assert synthesize(a) is synthesize(b)
    s = synthesize_placements([2, 2, 8], [4, 8], [1])
    by_cards = {}
    for mp in s.matrices:
        assert by_cards.setdefault(mp.synthesis.cardinalities, mp.programs) is mp.programs


RS_AR_AG = "ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)"


def test_validate_program_on_a_group_of_16384_devices():
    sh = SynthesisHierarchy.of([1024, 16])
    validate_program(sh, parse_program(RS_AR_AG))
    validate_program(sh, parse_program("Reduce(slice=1, Inside) ; AllReduce(slice=1, Master(0)) ; Broadcast(slice=1, Inside)"))
    with pytest.raises(ProgramError, match="step 2 AllReduce.slice=1, Inside. is invalid here: AllReduce: members hold different"):
        validate_program(sh, parse_program("ReduceScatter(slice=0, Inside) ; AllReduce(slice=1, Inside)"))
    with pytest.raises(ProgramError, match="does not complete the reduction"):
        validate_program(sh, parse_program("ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0))"))
    with pytest.raises(ProgramError, match="slice 2"):
        validate_program(sh, parse_program("AllReduce(slice=2, Inside)"))


@pytest.mark.parametrize("levels", [[2, 8], [2, 2, 3], [4, 4]])
def test_validate_program_accepts_exactly_the_synthesized_programs(levels):
    sh = SynthesisHierarchy.of(levels)
    full = synthesize(sh, Profile.FULL)
    for p in full:
        validate_program(sh, p)
    # every two-step sequence that is not a program is rejected
    table = [ins for ins, _ in _distinct_instructions(sh, Profile.FULL)]
    texts = {p.text for p in full}
    for a in table:
        for b in table:
            prog = Program((a, b))
            if prog.text in texts:
                continue
            with pytest.raises(ProgramError):
                validate_program(sh, prog)


def test_placement_lowerings_synthesize_nothing():
    lws = placement_lowerings([4, 16], [4, 16], [0])
    assert [lw.placement.matrix for lw in lws] == [m.matrix for m in synthesize_placements([4, 16], [4, 16], [0]).matrices]
    assert [lw.synthesis.cardinalities for lw in placement_lowerings([4, 16], [4, 16], [0], [((2, 2), (2, 8))])] == [(1, 2, 2)]
    with pytest.raises(PlacementError, match="nothing to reduce"):
        placement_lowerings([2, 8], [16, 1], [1])


def _states_within(space, table, depth):
    """Every state reached in at most ``depth`` valid steps (what synthesis expands)."""
    from p2sim.formalism.synthesis import _run

    seen = {space.initial_ids().tobytes(): space.initial_ids()}
    frontier = list(seen.values())
    for _ in range(depth):
        nxt = []
        for ids in frontier:
            for ins, groups, sig in table:
                out = _run(space, ids, ins.op, groups, sig)
                if not isinstance(out, str) and out.tobytes() not in seen:
                    seen[out.tobytes()] = out
                    nxt.append(out)
        frontier = nxt
    return list(seen.values())


@pytest.mark.parametrize("cards", [(1, 2, 8), (1, 4, 2, 2), (1, 3, 4), (1, 2, 3, 2)])
def test_implied_invalid_steps_are_invalid(cards):
    """Where the rule says an instruction is invalid (from an earlier one on the same groups), the step
    really is invalid, on every state synthesis expands; and the rule covers ReduceScatter, Reduce,
    AllGather and Broadcast."""
    from p2sim.formalism.synthesis import _implications, _run, _space

    sh = SynthesisHierarchy(cards, (None,) * len(cards))
    space = _space(sh)
    table = [(ins, g, space.signature_of(g)) for ins, g in _distinct_instructions(sh, Profile.FULL)]
    implied = _implications(table)
    assert {table[i][0].op.value for i, r in enumerate(implied) if r is not None} == {
        "ReduceScatter", "Reduce", "AllGather", "Broadcast"}
    skipped = 0
    for ids in _states_within(space, table, 3):
        valid = [not isinstance(_run(space, ids, ins.op, g, sig), str) for ins, g, sig in table]
        for i, rule in enumerate(implied):
            if rule is not None and valid[rule[0]] is rule[1]:
                assert not valid[i], (table[i][0].text, table[rule[0]][0].text)
                skipped += 1
    assert skipped > 0


def _worked_out(monkeypatch) -> tuple[list, list[tuple[bytes, str, tuple, bool]]]:
    """The programs of (2, 4, 8), and every step synthesis worked out for them: (state, op, groups, invalid)."""
    from p2sim.formalism import synthesis as syn

    runs: list[tuple[bytes, str, tuple, bool]] = []
    real = syn._run

    def counted(space, ids, op, groups, sig):
        out = real(space, ids, op, groups, sig)
        runs.append((ids.tobytes(), op.value, (groups.shape, groups.tobytes()), isinstance(out, str)))
        return out

    monkeypatch.setattr(syn, "_run", counted)
    synthesize.cache_clear()
    try:
        programs = synthesize(SynthesisHierarchy.of([2, 4, 8]))
    finally:
        synthesize.cache_clear()
        monkeypatch.undo()
    return programs, runs


def test_synthesis_skips_steps_decided_invalid(monkeypatch):
    """No ReduceScatter or Reduce is worked out on a state where the AllReduce on its groups is invalid."""
    programs, runs = _worked_out(monkeypatch)
    assert len(programs) > 0
    failed_allreduce = {(s, g) for s, op, g, bad in runs if op == "AllReduce" and bad}
    assert failed_allreduce
    assert not [r for r in runs if r[1] in ("ReduceScatter", "Reduce") and (r[0], r[2]) in failed_allreduce]


@pytest.mark.parametrize("cards", [(1, 2, 8), (1, 4, 2, 2), (1, 3, 4), (1, 2, 3, 2), (1, 2, 2, 3)])
def test_reduce_and_reducescatter_derived_from_the_allreduce_are_worked_out_ones(cards):
    """On every state synthesis expands, a Reduce's and a ReduceScatter's outcome derived from the valid
    AllReduce on the same groups is the one the rules work out (the same states, or both invalid)."""
    from p2sim.formalism.synthesis import _after_allreduce, _allreduce_of, _run, _space

    sh = SynthesisHierarchy(cards, (None,) * len(cards))
    space = _space(sh)
    table = [(ins, g, space.signature_of(g)) for ins, g in _distinct_instructions(sh, Profile.FULL)]
    derived = _allreduce_of(table)
    assert {table[i][0].op.value for i, j in enumerate(derived) if j is not None} == {"ReduceScatter", "Reduce"}
    outcomes = set()
    for ids in _states_within(space, table, 3):
        for i, j in enumerate(derived):
            if j is None:
                continue
            reduced = _run(space, ids, table[j][0].op, table[j][1], table[j][2])
            if isinstance(reduced, str):
                continue
            ins, g, sig = table[i]
            got, want = _after_allreduce(space, ins.op, g, reduced), _run(space, ids, ins.op, g, sig)
            assert isinstance(got, str) == isinstance(want, str), ins.text
            if not isinstance(want, str):
                assert got.tolist() == want.tolist(), ins.text
            outcomes.add((ins.op.value, isinstance(want, str)))
    assert {("ReduceScatter", False), ("Reduce", False)} <= outcomes


def test_synthesis_derives_reduce_and_reducescatter_where_the_allreduce_is_valid(monkeypatch):
    """No ReduceScatter or Reduce is worked out member by member on a state where the AllReduce on its groups
    is valid: its outcome is derived from the AllReduce's."""
    programs, runs = _worked_out(monkeypatch)
    assert [p.text for p in programs] == [p.text for p in synthesize(SynthesisHierarchy.of([2, 4, 8]))]
    good_allreduce = {(s, g) for s, op, g, bad in runs if op == "AllReduce" and not bad}
    assert good_allreduce
    assert not [r for r in runs if r[1] in ("ReduceScatter", "Reduce") and (r[0], r[2]) in good_allreduce]


@pytest.mark.parametrize("cards", [(1, 2, 8), (1, 4, 2, 2), (1, 2, 3, 2)])
def test_one_step_filter_rules_out_only_steps_that_miss_the_goal(cards):
    """Where the filter of a state met with one step left says a step cannot reach the goal, it does not
    (every profile's instructions, Master forms' devices outside the groups included); and it rules out
    Broadcasts whose roots hold every row but are not reduced (the row counts alone let those through)."""
    from p2sim.formalism.synthesis import _Finish, _run, _space
    from p2sim.formalism.semantics import Op

    sh = SynthesisHierarchy(cards, (None,) * len(cards))
    space = _space(sh)
    table = [(ins, g, space.signature_of(g)) for ins, g in _distinct_instructions(sh, Profile.FULL)]
    finish = _Finish(space, [g for _, g, _ in table])
    finishing = stronger = 0
    for ids in _states_within(space, table, 3):
        seen = finish.state(ids)
        for idx, (ins, g, sig) in enumerate(table):
            out = _run(space, ids, ins.op, g, sig)
            reaches = not isinstance(out, str) and (out == space.goal).all()
            if not finish.may(idx, ins.op, g, seen):
                assert not reaches, ins.text
                held = space.counts_of(ids)
                stronger += ins.op is Op.BROADCAST and bool((held[g[:, 0]] == space.k).all())
            finishing += bool(reaches)
    assert finishing > 0 and stronger > 0
