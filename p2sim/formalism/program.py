"""The reduction language (formalism section 4) and its one-line text form.

A program is a sequence of instructions ``(op, slice, form)``.  Its text form is::

    ReduceScatter(slice=1, Inside) ; AllReduce(slice=1, Parallel(0)) ; AllGather(slice=1, Inside)

Levels are numbered in the synthesis hierarchy, root ``0`` outermost.  ``Inside``
(``InsideGroup`` is accepted too), ``Parallel(e)`` and ``Master(e)`` are the three
forms; ``e`` must be a strict ancestor of the slice.  :func:`format_program` and
:func:`parse_program` are exact inverses.
"""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass

from ..util.errors import ProgramError
from .semantics import Op

__all__ = ["Form", "Instruction", "Program", "format_program", "parse_program"]


class Form(str, enum.Enum):
    INSIDE = "Inside"
    PARALLEL = "Parallel"
    MASTER = "Master"


@dataclass(frozen=True, order=True)
class Instruction:
    """One reduction: collective ``op`` over the groups given by ``slice`` and ``form``.

    ``ancestor`` is the level ``e'`` of ``Parallel(e')`` / ``Master(e')``, ``None`` for
    ``Inside``.
    """

    op: Op
    slice: int
    form: Form
    ancestor: int | None = None

    def __post_init__(self) -> None:
        if self.slice < 0:
            raise ProgramError(f"slice: {self.slice} is negative")
        if self.form is Form.INSIDE:
            if self.ancestor is not None:
                raise ProgramError("form: Inside takes no ancestor level")
        elif self.ancestor is None or not 0 <= self.ancestor < self.slice:
            raise ProgramError(
                f"form: {self.form.value}({self.ancestor}) needs a strict ancestor of slice {self.slice}"
            )

    @functools.cached_property  # a search reads every program's text: worked out once per instruction
    def text(self) -> str:
        form = self.form.value if self.form is Form.INSIDE else f"{self.form.value}({self.ancestor})"
        return f"{self.op.value}(slice={self.slice}, {form})"

    def to_json(self) -> dict[str, object]:
        return {"op": self.op.value, "slice": self.slice, "form": self.form.value, "ancestor": self.ancestor}


@dataclass(frozen=True)
class Program:
    instructions: tuple[Instruction, ...]

    @functools.cached_property  # kept in the instance's __dict__ (not a field: equality and hashing ignore it)
    def text(self) -> str:
        return format_program(self)

    def __len__(self) -> int:
        return len(self.instructions)

    def __iter__(self):
        return iter(self.instructions)


SEPARATOR = " ; "

_INSTR = re.compile(
    r"^\s*(?P<op>[A-Za-z]+)\s*\(\s*(?:slice\s*=\s*)?(?P<slice>-?\d+)\s*,\s*"
    r"(?P<form>[A-Za-z]+)\s*(?:\(\s*(?P<anc>-?\d+)\s*\))?\s*\)\s*$",
    re.IGNORECASE,  # the keyword too: names are accepted in any case
)

_FORMS = {"inside": Form.INSIDE, "insidegroup": Form.INSIDE, "parallel": Form.PARALLEL, "master": Form.MASTER}


def format_program(program: Program) -> str:
    return SEPARATOR.join(i.text for i in program.instructions)


def parse_instruction(text: str) -> Instruction:
    m = _INSTR.match(text)
    if not m:
        raise ProgramError(
            f"program: {text.strip()!r} is not an instruction like 'AllReduce(slice=1, Parallel(0))'"
        )
    try:
        op = Op.parse(m["op"])
    except ValueError as e:
        raise ProgramError(f"program: {e}") from None
    if not op.is_reduction:  # AllToAll / SendRecv are simulated (sweep, a model's step), never program steps
        raise ProgramError(f"program: {op.value} in {text.strip()!r} is not a reduction; a program's steps are "
                           f"AllReduce, ReduceScatter, AllGather, Reduce or Broadcast")
    form = _FORMS.get(m["form"].lower())
    if form is None:
        raise ProgramError(f"program: unknown form {m['form']!r} (expected Inside, Parallel(e) or Master(e))")
    anc = None if m["anc"] is None else int(m["anc"])
    if form is not Form.INSIDE and anc is None:
        raise ProgramError(f"program: {form.value} needs an ancestor level, e.g. {form.value}(0)")
    return Instruction(op, int(m["slice"]), form, anc)


def parse_program(text: str) -> Program:
    """Parse the text form; raises :class:`ProgramError` naming the bad part.

    Examples
    --------
    >>> p = parse_program("Reduce(slice=1, Inside) ; AllReduce(slice=1, Master(0)) ; Broadcast(slice=1, Inside)")
    >>> len(p), p.instructions[1].form.value
    (3, 'Master')
    """
    parts = [s for s in text.split(";")]
    if not text.strip() or any(not s.strip() for s in parts):
        raise ProgramError(f"program: {text!r} has an empty instruction")
    return Program(tuple(parse_instruction(s) for s in parts))
