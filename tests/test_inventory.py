"""Every room's ``__init__`` lists every one of its modules with that module's own summary line."""

from __future__ import annotations

from pathlib import Path

import pytest

from p2sim.util import inventory


def test_every_room_lists_every_module_in_its_own_words():
    """The inventories are generated: a module added, renamed or re-described without
    ``python -m p2sim.util.inventory --write`` fails here."""
    stale = [str(r.relative_to(inventory.PACKAGE.parent)) for r in inventory.stale()]
    assert not stale, f"rooms whose Modules section differs: {stale} (python -m p2sim.util.inventory --write)"


def test_every_room_and_module_is_covered():
    """Sub-rooms are rooms too, and every module of p2sim is some room's member."""
    rooms = inventory.rooms()
    assert inventory.PACKAGE / "collectives" / "algorithms" in rooms
    listed = {p for r in rooms for p in inventory.members(r)}
    modules = {p for p in inventory.PACKAGE.rglob("*.py") if p.name != "__init__.py"}
    assert modules <= listed


def _room(tmp_path: Path, init: str) -> Path:
    room = tmp_path / "room"
    room.mkdir()
    (room / "__init__.py").write_text(init)
    (room / "alpha.py").write_text('"""Alpha: the first."""\n')
    (room / "beta.py").write_text('"""Beta: the second.\n\nMore about beta.\n"""\n')
    return room


def test_a_missing_module_and_a_changed_summary_are_seen(tmp_path):
    room = _room(tmp_path, '"""A room.\n\nWhat it holds.\n"""\n\nX = 1\n')
    assert inventory.current(room) is None and inventory.stale(room) == [room]
    assert inventory.write(room)
    assert inventory.stale(room) == []
    assert (room / "__init__.py").read_text() == ('"""A room.\n\nWhat it holds.\n\nModules\n-------\n'
                                                  ':mod:`.alpha`\n    Alpha: the first.\n'
                                                  ':mod:`.beta`\n    Beta: the second.\n"""\n\nX = 1\n')
    assert not inventory.write(room), "a second write changes nothing"
    (room / "gamma.py").write_text('"""Gamma."""\n')
    assert inventory.stale(room) == [room]
    inventory.write(room)
    (room / "alpha.py").write_text('"""Alpha: now said otherwise."""\n')
    assert inventory.stale(room) == [room]


def test_the_section_goes_before_a_closing_examples_section(tmp_path):
    room = _room(tmp_path, '"""A room.\n\nExamples\n--------\n>>> 1\n1\n"""\n')
    inventory.write(room)
    inventory.write(room)
    text = (room / "__init__.py").read_text()
    assert text.index("Modules\n-------\n") < text.index("Examples\n--------\n")
    assert text.count("Modules\n") == 1 and inventory.stale(room) == []


def test_a_summary_line_stands_alone(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('"""A summary that runs on\ninto the next line."""\n')
    with pytest.raises(ValueError, match="runs on into the second"):
        inventory.summary(f)
    f.write_text("X = 1\n")
    with pytest.raises(ValueError, match="no docstring"):
        inventory.summary(f)


def test_main_says_which_rooms_differ(tmp_path, monkeypatch, capsys):
    room = _room(tmp_path, '"""A room."""\n')
    monkeypatch.setattr(inventory, "PACKAGE", room)
    assert inventory.main([]) == 1
    assert "room/__init__.py: Modules section differs" in capsys.readouterr().out
    assert inventory.main(["--write"]) == 0
    assert inventory.main([]) == 0
