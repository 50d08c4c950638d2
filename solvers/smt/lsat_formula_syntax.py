"""Formulas of the AR-LSAT DSL (``logiclm-smt``): the typed expression IR and the reader of one formula line.

The language as a whole (sections, declarations, what each construct means, the spellings accepted
and refused) is specified in :mod:`symbolkg.solvers.smt.lsat_syntax`, whose
:func:`~symbolkg.solvers.smt.lsat_syntax.parse` reads a program; this module holds what a formula is
read against (:class:`Sort`, :class:`FunctionDecl`), the IR it becomes (:class:`Expr` and its kinds,
:class:`Check` for option lines) and :class:`Scope`, which parses one line with
``ast.parse(mode="eval")`` after the documented token rewrites and walks the tree with a whitelist
into that IR, type-checking as it goes. Nothing is executed.

One module, long because it is one grammar: the typed expression IR and the reader of a formula line
(names, sorts, the built-ins and their spellings) are read together; the sections and declarations
of a program are :mod:`symbolkg.solvers.smt.lsat_syntax`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

from symbolkg.solvers.outcomes import ErrorKind, ProgramError

#: Built-in sorts usable as function parameter / result sorts and binder sorts.
BUILTIN_SORTS = ("int", "bool")
#: The option checks of the DSL.
OPTION_FUNCTIONS = ("is_sat", "is_unsat", "is_valid", "is_accurate_list", "is_exception")
#: Option-check names other models write whose English has one reading: "required" / "must" (true in every
#: model) and "possible" / "impossible" (true in some / no model).
CHECK_ALIASES = {"is_required": "is_valid", "is_must": "is_valid", "is_possible": "is_sat", "is_impossible": "is_unsat"}

#: the built-ins of a fixed number of arguments, and that number
_FIXED_ARITY = {"Not": 1, "Implies": 2, "Xor": 2, "Iff": 2, "If": 3, "IfThenElse": 3, "Abs": 1}

# Z3-API names an LLM reaches for that this DSL does not implement; they get an
# "unsupported" error (rather than "undeclared") with a hint.
_UNSUPPORTED_CALLS = {
    "AtMost": "use Count([x:sort], cond) <= k",
    "AtLeast": "use Count([x:sort], cond) >= k",
    "PbEq": "use Count([x:sort], cond) == k",
    "Product": "multiply with *",
    "Min": "compare the values with <= instead",
    "Max": "compare the values with >= instead",
}

# Budget on the size of the ground formula (Python-side Z3 term constructions).
# Expanding quantifiers over finite sorts can blow up (nested binders multiply);


# --------------------------------------------------------------------------- IR


@dataclass(frozen=True)
class Sort:
    """A declared finite sort.

    Attributes:
        name: the declared name.
        members: member names (symbolic sort) or integers (numeric sort).
        numeric: True when the members are integers (the sort's values are Z3 Ints).
        parent: for a subset sort, the name of the symbolic sort that owns its
            members; None otherwise.
        line: 1-based line of the declaration.
    """

    name: str
    members: tuple[str | int, ...]
    numeric: bool
    parent: str | None
    line: int

    @property
    def base(self) -> str:
        """The sort whose Z3 sort carries this sort's values."""
        return self.parent or self.name

    @property
    def value_type(self) -> str:
        """The expression type of a value of this sort (see :data:`Expr.type`)."""
        return "int" if self.numeric else self.base


@dataclass(frozen=True)
class FunctionDecl:
    """``name = Function([params...] -> [result])``; sorts by name (incl. ``int``, ``bool``)."""

    name: str
    params: tuple[str, ...]
    result: str
    line: int


@dataclass(frozen=True)
class Binder:
    """One ``name:sort`` of a quantifier, ``Count`` or scoped ``Distinct``."""

    name: str
    sort: str


@dataclass(frozen=True)
class Expr:
    """A typed expression. ``type`` is ``"bool"``, ``"int"`` or a symbolic sort's base name."""

    type: str


@dataclass(frozen=True)
class Lit(Expr):
    value: bool | int


@dataclass(frozen=True)
class MemberRef(Expr):
    name: str


@dataclass(frozen=True)
class VarRef(Expr):
    name: str


@dataclass(frozen=True)
class Apply(Expr):
    func: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Op(Expr):
    """A built-in operation: and or not implies xor ite eq ne lt le gt ge add sub mul mod neg abs sum distinct."""

    op: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Scoped(Expr):
    """``forall`` / ``exists`` / ``count`` / ``distinct`` / ``sum`` over binders."""

    kind: str
    binders: tuple[Binder, ...]
    body: Expr


@dataclass(frozen=True)
class Check:
    """An option check: ``kind`` in :data:`OPTION_FUNCTIONS`.

    ``exprs`` holds the checked formula(s) (several for ``is_accurate_list``);
    ``inner`` is the negated check of ``is_exception``.
    """

    kind: str
    exprs: tuple[Expr, ...] = ()
    inner: Check | None = None

    def describe(self) -> str:
        return f"is_exception({self.inner.describe()})" if self.inner else self.kind


# ------------------------------------------------------------------- formula lines

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# A binder list `[x:sort, y:sort]`; rewritten to `{x:sort, y:sort}` (same length).
_BINDERS_RE = re.compile(rf"\[(\s*{IDENT}\s*:\s*{IDENT}\s*(?:,\s*{IDENT}\s*:\s*{IDENT}\s*)*)\]")
# Infix spellings of other languages that have one reading here (see the module docstring).
_INFIX_RE = re.compile(r"&&|\|\||<=>|<->|==>|=>|->|\bmod\b")
# Finding an arrow's operands scans the line, so a line with very many arrows is refused instead.
_MAX_ARROWS = 64
_ARROWS = {"<=>": "Iff", "<->": "Iff", "==>": "Implies", "=>": "Implies", "->": "Implies"}


@dataclass(frozen=True)
class _Rewritten:
    """An expression line after the documented token rewrites, with a map back to source columns."""

    text: str
    edits: tuple[tuple[int, int, int, int], ...]  # (new start, new end, source start, source end)
    infix_mod: bool  # a `mod` was rewritten to `%` (its operands are then checked for precedence)

    def source_column(self, col: int) -> int:
        """The 0-based source column of 0-based column ``col`` of :attr:`text`."""
        shift_new, shift_src = 0, 0
        for new_start, new_end, src_start, src_end in self.edits:
            if col < new_start:
                break
            if col < new_end:
                return src_start
            shift_new, shift_src = new_end, src_end
        return shift_src + (col - shift_new)


def _rewrite(code: str, declared: Callable[[str], bool], lineno: int) -> _Rewritten:
    """Binder lists to dict displays (same length), then ``&&`` / ``||`` / ``mod`` / infix arrows."""
    code = _BINDERS_RE.sub(lambda m: "{" + m.group(1) + "}", code)
    edits: list[tuple[int, int, str]] = []  # (source start, source end, replacement)
    arrows: dict[tuple[int, int], list[str]] = {}
    infix_mod = False
    mod_is_a_name = declared("mod") or re.search(r"\bmod\s*:", code) is not None  # declared or bound
    for m in _INFIX_RE.finditer(code):
        token = m.group(0)
        if token == "&&":
            edits.append((m.start(), m.end(), " and "))
        elif token == "||":
            edits.append((m.start(), m.end(), " or "))
        elif token == "mod":
            if mod_is_a_name:
                continue
            infix_mod = True
            edits.append((m.start(), m.end(), "%"))
        else:
            if len(arrows) >= _MAX_ARROWS:
                raise ProgramError(f"more than {_MAX_ARROWS} infix arrows on one line; write Implies(a, b)", lineno)
            start, end = _operand_span(code, m.start(), m.end())
            arrows.setdefault((start, end), []).append(token)
            edits += [(start, start, _ARROWS[token] + "("), (m.start(), m.end(), ","), (end, end, ")")]
    for tokens in arrows.values():
        if len(tokens) > 1:
            raise ProgramError(
                f"'{' ... '.join(tokens)}' chains infix implications without parentheses, which can be read two "
                "ways; write Implies(a, Implies(b, c)) or Implies(And(a, b), c)",
                lineno,
            )
    if not edits:
        return _Rewritten(code, (), False)
    # Stable sort: an insertion before a replacement at the same column keeps program order.
    edits.sort(key=lambda e: (e[0], e[1] != e[0]))
    out: list[str] = []
    mapped: list[tuple[int, int, int, int]] = []
    src = new = 0
    for start, end, replacement in edits:
        out.append(code[src:start])
        new += start - src
        out.append(replacement)
        mapped.append((new, new + len(replacement), start, end))
        new += len(replacement)
        src = end
    out.append(code[src:])
    return _Rewritten("".join(out), tuple(mapped), infix_mod)


def _operand_span(code: str, arrow_start: int, arrow_end: int) -> tuple[int, int]:
    """The source span of an infix arrow's two operands: up to the enclosing bracket or a comma at its level."""
    depth, start = 0, 0
    for j in range(arrow_start - 1, -1, -1):
        c = code[j]
        if c in ")]}":
            depth += 1
        elif c in "([{" or (c == "," and depth == 0):
            if depth == 0:
                start = j + 1
                break
            depth -= 1
    depth, end = 0, len(code)
    for j in range(arrow_end, len(code)):
        c = code[j]
        if c in "([{":
            depth += 1
        elif c in ")]}" or (c == "," and depth == 0):
            if depth == 0:
                end = j
                break
            depth -= 1
    return start, end


RESERVED = frozenset(
    {
        "And",
        "Or",
        "Not",
        "Implies",
        "Xor",
        "Iff",
        "If",
        "IfThenElse",
        "Distinct",
        "Abs",
        "Sum",
        "Count",
        "ForAll",
        "Exists",
        "True",
        "False",
        "EnumSort",
        "IntSort",
        "Function",
        *OPTION_FUNCTIONS,
        *BUILTIN_SORTS,
    }
)


def require(expr: Expr, wanted: str, lineno: int, what: str) -> None:
    if expr.type != wanted:
        raise ProgramError(
            f"{what} must be {_type_phrase(wanted)}, but this is {_type_phrase(expr.type)}", lineno, ErrorKind.TYPE
        )


def _type_phrase(t: str) -> str:
    if t == "bool":
        return "a Boolean formula"
    if t == "int":
        return "an integer"
    if t.startswith("pos:"):
        return f"a position in sort '{t[4:]}' (a member moved by a number, which the last members do not have)"
    return f"a value of sort '{t}'"


_CMP_OPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
_CMP_TEXT = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_ARITH_OPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Mod: "mod"}


class Scope:
    """Turns expression text into typed IR for one program's declarations."""

    def __init__(self, sorts: dict[str, Sort], functions: dict[str, FunctionDecl], members: dict[str, str]):
        self.sorts = sorts
        self.functions = functions
        self.members = members
        self._line = 0

    # -- entry points

    def constraint(self, code: str, lineno: int) -> tuple[Expr, str | None]:
        """A constraint line's formula, and the reading of the names it binds nowhere (None: there are none).

        A name that no declaration and no binder of the line gives a meaning, written as an argument of
        declared functions where one sort is expected, is a constant of that sort that the line does not
        name: the line reads as ``Exists([name:sort, ...], formula)``, as Z3 reads a free constant. A name
        bound nowhere whose uses do not tell one sort (none is a function argument, or arguments of two
        sorts) is refused at its line (``undeclared``).
        """
        tree = self._parse(code, lineno)
        binders = self._free_constants(tree)
        if not binders:
            formula = self._walk(tree, {})
            require(formula, "bool", lineno, "a constraint")
            return formula, None
        body = self._walk(tree, {b.name: (self._value_type(b.sort), b.sort) for b in binders})
        require(body, "bool", lineno, "a constraint")
        names = ", ".join(b.name for b in binders)
        some = "; ".join(f"some {b.name} of sort {b.sort}" for b in binders)
        reading = (
            f"line {lineno}: {names} {'is' if len(binders) == 1 else 'are'} bound nowhere in the constraint "
            f"and stand{'s' if len(binders) == 1 else ''} where one sort is expected: read as "
            f"Exists([{', '.join(f'{b.name}:{b.sort}' for b in binders)}], ...) ({some}), as Z3 reads a "
            "free constant"
        )
        return Scoped("bool", "exists", tuple(binders), body), reading

    def option(self, code: str, lineno: int) -> Check:
        return self._check(self._parse(code, lineno))

    # -- helpers

    def _err(self, message: str, kind: ErrorKind = ErrorKind.SYNTAX) -> ProgramError:
        return ProgramError(message, self._line, kind)

    def _parse(self, code: str, lineno: int) -> ast.expr:
        self._line = lineno
        if "{" in code or "}" in code:
            raise ProgramError("'{' and '}' are not part of the language; write binders as [x:sort]", lineno)
        if re.match(rf"^{IDENT}\s*=(?![=>])", code):
            raise ProgramError(
                "an assignment is not a constraint; declarations belong in '# Declarations' and constraints "
                "are formulas such as f(a) == b",
                lineno,
            )
        rewritten = _rewrite(code, self._declared, lineno)
        try:
            tree = ast.parse(rewritten.text, mode="eval")
        except SyntaxError as exc:
            if exc.offset:
                exc.offset = rewritten.source_column(exc.offset - 1) + 1
            raise ProgramError(_syntax_message(code, exc), lineno) from None
        except (ValueError, RecursionError, MemoryError):
            raise ProgramError("expression is too deeply nested or malformed to read", lineno) from None
        if rewritten.infix_mod:
            _check_infix_mod(tree, rewritten.text, lineno)
        return tree.body

    def _declared(self, name: str) -> bool:
        return name in self.sorts or name in self.functions or name in self.members

    def _free_constants(self, tree: ast.expr) -> list[Binder]:
        """The names of a constraint that nothing declares or binds, each with the one sort its uses expect.

        Only a direct argument of a declared function (of the right arity) expects a sort; the other uses
        of such a name are type-checked against that sort when the formula is walked. A name that a binder
        of the line binds somewhere is not free here (used outside that binder, it is refused as before).
        """
        bound: set[str] = set()
        not_values: set[int] = set()  # called names and binder lists: never a value
        expected: dict[int, str] = {}  # id of a Name node -> the sort its place expects
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                bound.update(k.id for k in node.keys if isinstance(k, ast.Name))
                not_values.update(id(x) for x in (*node.keys, *node.values) if x is not None)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                not_values.add(id(node.func))
                decl = self.functions.get(node.func.id)
                if decl is not None and len(node.args) == len(decl.params):
                    expected.update(
                        (id(a), sort) for a, sort in zip(node.args, decl.params, strict=True) if isinstance(a, ast.Name)
                    )
        uses: dict[str, list[ast.Name]] = {}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Name)
                and id(node) not in not_values
                and node.id not in bound
                and not self._declared(node.id)
                and node.id not in BUILTIN_SORTS
                and node.id not in RESERVED
            ):
                uses.setdefault(node.id, []).append(node)
        binders = []
        for name, nodes in sorted(uses.items(), key=lambda item: min(n.col_offset for n in item[1])):
            sorts = sorted({expected[id(n)] for n in nodes if id(n) in expected})
            if len(sorts) > 1:
                raise self._err(
                    f"'{name}' is bound nowhere in this constraint and stands where sorts {' and '.join(sorts)} are "
                    f"expected, so its sort cannot be told; bind it, e.g. Exists([{name}:{sorts[0]}], ...)",
                    ErrorKind.UNDECLARED,
                )
            if sorts:
                binders.append(self._free_constant(name, sorts[0]))
        return binders

    def _free_constant(self, name: str, sort: str) -> Binder:
        """The binder of a name bound nowhere where ``sort`` is expected, unless it has another reading."""
        if name == "_":
            raise self._err(
                "'_' is not declared and bound nowhere in this constraint: as a wildcard it means 'anyone' (under Not: "
                f"'no one'), as a constant 'someone'. Bind it: Exists([x:{sort}], ...) or ForAll([x:{sort}], ...)",
                ErrorKind.UNDECLARED,
            )
        same = [m for m in self.members if m.casefold() == name.casefold()]
        if same:  # a misspelled member, or a constant? Two readings.
            raise self._err(
                f"'{name}' is not declared; sort '{self.members[same[0]]}' has the member '{same[0]}' "
                "(names are case-sensitive)",
                ErrorKind.UNDECLARED,
            )
        return Binder(name, sort)

    def _check(self, node: ast.expr) -> Check:
        funcs = ", ".join(OPTION_FUNCTIONS)
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            raise self._err(
                f"an option line must be one check: {funcs}, e.g. 'is_sat(f(a) == b) ::: (A)'", ErrorKind.UNSUPPORTED
            )
        name = CHECK_ALIASES.get(node.func.id, node.func.id)
        if name not in OPTION_FUNCTIONS:
            raise self._err(
                f"'{name}' is not an option check; use one of {funcs} (is_valid: must be true, is_sat: could be "
                "true, is_unsat: cannot be true, is_exception(is_sat(...)) for '... EXCEPT' questions)",
                ErrorKind.UNSUPPORTED,
            )
        if node.keywords or not node.args or any(isinstance(a, ast.Starred) for a in node.args):
            raise self._err(f"{name} takes one argument: {name}(<formula>)", ErrorKind.TYPE)
        arg = node.args[0]
        if name == "is_exception":
            if len(node.args) != 1:
                raise self._err("is_exception takes exactly one check: is_exception(is_sat(<formula>))", ErrorKind.TYPE)
            return Check("is_exception", inner=self._check(arg))
        if name == "is_accurate_list":
            # is_accurate_list(f1, f2) lists the same formulas as is_accurate_list([f1, f2]).
            elts = node.args if len(node.args) > 1 else arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else []
            if not elts:
                raise self._err(
                    "is_accurate_list takes a non-empty list of formulas: is_accurate_list([f1, f2])", ErrorKind.TYPE
                )
            exprs = tuple(self._walk(e, {}) for e in elts)
        else:
            exprs = tuple(self._walk(a, {}) for a in node.args)
        for e in exprs:
            require(e, "bool", self._line, f"the argument of {name}")
        if name != "is_accurate_list" and len(exprs) > 1:
            # Several formulas are checked together, as Z3's Solver.add(a, b) asserts their conjunction.
            exprs = (Op("bool", "and", exprs),)
        return Check(name, exprs)

    def _walk(self, node: ast.expr, env: dict[str, tuple[str, str]]) -> Expr:
        """``env`` maps bound variable names to (type, sort name)."""
        try:
            return self._walk_inner(node, env)
        except RecursionError:
            raise self._err("expression is nested too deeply") from None

    def _walk_inner(self, node: ast.expr, env: dict[str, tuple[str, str]]) -> Expr:
        walk = lambda n: self._walk_inner(n, env)
        if isinstance(node, ast.Constant):
            return self._constant(node)
        if isinstance(node, ast.Name):
            return self._name(node.id, env)
        if isinstance(node, (ast.Call, ast.Compare, ast.BoolOp)):
            whole_range = self._whole_range(node, env)
            if whole_range is not None:
                return whole_range
        if isinstance(node, ast.Call):
            return self._call(node, env)
        if isinstance(node, ast.Compare):
            return self._compare(node, env)
        if isinstance(node, ast.BoolOp):
            args = tuple(walk(v) for v in node.values)
            for a in args:
                require(a, "bool", self._line, "an operand of and/or")
            return Op("bool", "and" if isinstance(node.op, ast.And) else "or", args)
        if isinstance(node, ast.UnaryOp):
            arg = walk(node.operand)
            if isinstance(node.op, ast.Not):
                require(arg, "bool", self._line, "the operand of 'not'")
                return Op("bool", "not", (arg,))
            if isinstance(node.op, (ast.USub, ast.UAdd)):
                require(arg, "int", self._line, "the operand of unary minus/plus")
                return arg if isinstance(node.op, ast.UAdd) else Op("int", "neg", (arg,))
            raise self._err("'~' is not supported; use Not(...)")
        if isinstance(node, ast.BinOp):
            return self._arith(node, env)
        if isinstance(node, ast.IfExp):
            return self._ite(walk(node.test), walk(node.body), walk(node.orelse))
        if isinstance(node, ast.Tuple):
            raise self._err(
                "tuples such as (a, b) are not values in this language; compare each part separately",
                ErrorKind.UNSUPPORTED,
            )
        if isinstance(node, ast.Subscript):
            raise self._err(
                "indexing with [...] is not supported; declare one function per component", ErrorKind.UNSUPPORTED
            )
        if isinstance(node, ast.Dict):
            raise self._err(
                "a binder list [x:sort] may only be the first argument of ForAll, Exists, Count or Distinct"
            )
        if isinstance(node, (ast.List, ast.ListComp, ast.GeneratorExp, ast.Set)):
            raise self._err(
                "a list is only allowed as the argument of And/Or/Distinct/Sum/is_accurate_list or after 'in'",
                ErrorKind.UNSUPPORTED,
            )
        raise self._err(f"'{ast.unparse(node)}' is not supported in this language", ErrorKind.UNSUPPORTED)

    def _constant(self, node: ast.Constant) -> Expr:
        if isinstance(node.value, bool):
            return Lit("bool", node.value)
        if isinstance(node.value, int):
            return Lit("int", node.value)
        if isinstance(node.value, str) and node.value in self.members:
            return MemberRef(self.members[node.value], node.value)
        if node.value is None:
            raise self._err(
                "None has no value in this language: every function has a value for every argument; "
                "only 'f(x) != None' (always true) and 'f(x) == None' (never true) are read",
                ErrorKind.TYPE,
            )
        raise self._err(
            f"the constant {node.value!r} is not supported; only integers, True and False are", ErrorKind.TYPE
        )

    def _arith(self, node: ast.BinOp, env: dict[str, tuple[str, str]]) -> Expr:
        op = _ARITH_OPS.get(type(node.op))
        if op is None:
            raise self._err("only +, -, * and % are supported on integers (no division)", ErrorKind.UNSUPPORTED)
        left, right = self._walk_inner(node.left, env), self._walk_inner(node.right, env)
        if left.type == right.type == "int":
            return Op("int", op, (left, right))
        moved = self._position_arith(op, left, right)
        if moved is not None:
            return moved
        for a in (left, right):
            if a.type != "int":
                raise self._err(
                    f"arithmetic needs integers, but an operand is {_type_phrase(a.type)}"
                    + (
                        f"; sort '{a.type}' has names, not numbers: only 'member + k', 'member - k' (a position "
                        f"k places later / earlier in its declaration) and 'member - member' are read"
                        if a.type in self.sorts
                        else ""
                    ),
                    ErrorKind.TYPE,
                )
        return Op("int", op, (left, right))

    def _name(self, name: str, env: dict[str, tuple[str, str]]) -> Expr:
        if name in env:
            return VarRef(env[name][0], name)
        if name in self.members:
            return MemberRef(self.members[name], name)
        if name in self.functions:
            decl = self.functions[name]
            if not decl.params:
                return Apply(self._value_type(decl.result), name, ())
            raise self._err(
                f"function '{name}' needs {len(decl.params)} argument(s): {name}({', '.join(decl.params)})",
                ErrorKind.TYPE,
            )
        if name in self.sorts or name in BUILTIN_SORTS:
            raise self._err(
                f"'{name}' is a sort, not a value; quantify over it, e.g. ForAll([x:{name}], ...)", ErrorKind.TYPE
            )
        raise self._err(
            f"'{name}' is not declared; declare it as a member of an EnumSort (or a Function), or bind "
            f"it with ForAll/Exists/Count([{name}:sort], ...)",
            ErrorKind.UNDECLARED,
        )

    def _value_type(self, sort: str) -> str:
        return sort if sort in BUILTIN_SORTS else self.sorts[sort].value_type

    def _binders(
        self, node: ast.expr, what: str, env: dict[str, tuple[str, str]], finite: bool
    ) -> tuple[tuple[Binder, ...], dict[str, tuple[str, str]]]:
        if not isinstance(node, ast.Dict):
            raise self._err(
                f"{what} takes its variables as a list [x:sort, y:sort] first, e.g. {what}([x:sort], formula)"
            )
        binders = []
        inner = dict(env)
        for key, value in zip(node.keys, node.values, strict=True):
            assert isinstance(key, ast.Name) and isinstance(value, ast.Name)  # guaranteed by _BINDERS_RE
            sort = value.id
            if sort not in self.sorts and sort not in BUILTIN_SORTS:
                raise self._err(
                    f"sort '{sort}' (for variable '{key.id}') is not declared; declare it with "
                    f"{sort} = EnumSort([...]) or use a declared sort",
                    ErrorKind.UNDECLARED,
                )
            if finite and sort == "int":
                raise self._err(
                    f"{what} needs a finite sort, but '{key.id}' ranges over int; use a declared sort", ErrorKind.TYPE
                )
            binders.append(Binder(key.id, sort))
            inner[key.id] = (self._value_type(sort), sort)
        return tuple(binders), inner

    def _args(self, node: ast.Call, name: str, env: dict[str, tuple[str, str]], *, allow_list: bool) -> list[Expr]:
        if node.keywords:
            raise self._err(f"{name} takes no keyword arguments")
        args = node.args
        if allow_list and len(args) == 1 and isinstance(args[0], (ast.List, ast.Tuple)):
            args = args[0].elts
        if any(isinstance(a, ast.Starred) for a in args):
            raise self._err("'*' arguments are not supported", ErrorKind.UNSUPPORTED)
        return [self._walk_inner(a, env) for a in args]

    def _call(self, node: ast.Call, env: dict[str, tuple[str, str]]) -> Expr:
        if not isinstance(node.func, ast.Name):
            raise self._err(
                f"'{ast.unparse(node.func)}' cannot be called; call a declared function or a built-in "
                "such as And/Or/Not/Implies/ForAll/Exists/Count",
                ErrorKind.UNSUPPORTED,
            )
        name = node.func.id
        if name in env:
            raise self._err(f"'{name}' is a bound variable, not a function", ErrorKind.TYPE)
        if name in self.functions:
            return self._apply(node, env)
        if name in ("ForAll", "Exists", "Count") or (
            name in ("Distinct", "Sum") and node.args and isinstance(node.args[0], ast.Dict)
        ):
            return self._scoped(node, name, env)
        if name in ("And", "Or"):
            return self._connective(node, name, env)
        if name in _FIXED_ARITY:
            return self._fixed_arity(node, name, env)
        if name in ("Sum", "Distinct"):
            return self._aggregate(node, name, env)
        raise self._not_callable(name)

    def _connective(self, node: ast.Call, name: str, env: dict[str, tuple[str, str]]) -> Expr:
        """And / Or over formulas (its arguments, or one list of them)."""
        args = self._args(node, name, env, allow_list=True)
        for a in args:
            require(a, "bool", self._line, f"an argument of {name}")
        return Op("bool", name.lower(), tuple(args))

    def _fixed_arity(self, node: ast.Call, name: str, env: dict[str, tuple[str, str]]) -> Expr:
        """Not, Implies, Xor, Iff, If / IfThenElse and Abs: a fixed number of arguments each."""
        arity = _FIXED_ARITY[name]
        args = self._args(node, name, env, allow_list=False)
        if name in ("If", "IfThenElse") and len(args) == 2 and all(a.type == "bool" for a in args):
            # An 'if' without 'else' constrains nothing when its condition is false: Implies.
            return Op("bool", "implies", tuple(args))
        if len(args) != arity:
            hint = {
                "Implies": "; for several conditions use Implies(And(c1, c2), conclusion)",
                "If": "; If(c, a, b) picks a value, and without b only a formula a has a reading (Implies(c, a))",
                "IfThenElse": "; IfThenElse(c, a, b) picks a value, and without b only a formula a has a "
                "reading (Implies(c, a))",
                "Xor": "; for 'exactly one of' use Count or Sum(If(c, 1, 0), ...) == 1",
                "Not": "; to negate several formulas use Not(And(...)) or Not(Or(...))",
            }.get(name, "")
            raise self._err(f"{name} takes {arity} argument(s), got {len(args)}{hint}", ErrorKind.TYPE)
        if name in ("If", "IfThenElse"):
            return self._ite(*args)
        want = "int" if name == "Abs" else "bool"
        for a in args:
            require(a, want, self._line, f"an argument of {name}")
        if name == "Iff":
            return Op("bool", "eq", tuple(args))
        return Op(want, name.lower(), tuple(args))

    def _aggregate(self, node: ast.Call, name: str, env: dict[str, tuple[str, str]]) -> Expr:
        """Sum of ints, or Distinct of one sort, over listed arguments (over binders: :meth:`_scoped`)."""
        args = self._args(node, name, env, allow_list=True)
        if name == "Sum":
            for a in args:
                require(a, "int", self._line, "an argument of Sum (count conditions with Count or If(c, 1, 0))")
            return Op("int", "sum", tuple(args))
        if args and any(a.type != args[0].type for a in args):
            raise self._err("Distinct needs arguments of one sort", ErrorKind.TYPE)
        return Op("bool", "distinct", tuple(args))

    def _not_callable(self, name: str) -> ProgramError:
        """The error for a call of ``name`` that is no function nor built-in: what it is, and what to write."""
        if name in _UNSUPPORTED_CALLS:
            return self._err(f"'{name}' is not supported; {_UNSUPPORTED_CALLS[name]}", ErrorKind.UNSUPPORTED)
        if name in OPTION_FUNCTIONS:
            return self._err(f"{name}(...) may only be used as a whole option line in '# Options'", ErrorKind.SYNTAX)
        if name in self.sorts or name in self.members:
            return self._err(
                f"'{name}' is a {'sort' if name in self.sorts else 'sort member'}, not a function", ErrorKind.TYPE
            )
        declared = ", ".join(self.functions) or "none"
        return self._err(
            f"function '{name}' is not declared (declared functions: {declared}); declare it with "
            f"{name} = Function([sortA, ...] -> [sortB]) and constrain it, or write the condition with "
            "And/Or/Not and comparisons",
            ErrorKind.UNDECLARED,
        )

    def _scoped(self, node: ast.Call, name: str, env: dict[str, tuple[str, str]]) -> Expr:
        """ForAll, Exists, Count, and Distinct or Sum over binders: ``name([x:sort, ...], body)``."""
        if len(node.args) != 2 or node.keywords:
            raise self._err(f"{name} takes two arguments: {name}([x:sort, ...], formula)", ErrorKind.TYPE)
        binders, inner = self._binders(node.args[0], name, env, finite=name in ("Count", "Distinct", "Sum"))
        body = self._walk_inner(node.args[1], inner)
        if name == "Distinct":
            return Scoped("bool", "distinct", binders, body)
        if name == "Sum":
            require(body, "int", self._line, "the term of Sum([x:sort], term)")
            return Scoped("int", "sum", binders, body)
        if name == "Count" and body.type == "int":
            # Count of a number reads as Sum (add the values) or as counting the nonzero ones: refused.
            raise self._err(
                "the formula of Count must be a Boolean formula, but this is an integer; to add the values "
                "write Sum([x:sort], term), to count the nonzero ones write Count([x:sort], term != 0)",
                ErrorKind.TYPE,
            )
        require(body, "bool", self._line, f"the formula of {name}")
        return Scoped("int" if name == "Count" else "bool", name.lower(), binders, body)

    def _apply(self, node: ast.Call, env: dict[str, tuple[str, str]]) -> Expr:
        decl = self.functions[node.func.id]  # type: ignore[union-attr]
        args = self._args(node, decl.name, env, allow_list=False)
        signature = f"{decl.name}({', '.join(decl.params)})"
        if len(args) != len(decl.params):
            raise self._err(
                f"function '{decl.name}' takes {len(decl.params)} argument(s) ({signature}), got {len(args)}",
                ErrorKind.TYPE,
            )
        for i, (arg, sort) in enumerate(zip(args, decl.params, strict=True), start=1):
            want = self._value_type(sort)
            if arg.type != want:
                raise self._err(
                    f"argument {i} of {signature} must be {_type_phrase(want)} (sort '{sort}'), but "
                    f"{ast.unparse(node.args[i - 1])} is {_type_phrase(arg.type)}",
                    ErrorKind.TYPE,
                )
            if isinstance(arg, Lit) and sort in self.sorts and arg.value not in self.sorts[sort].members:
                raise self._err(
                    f"argument {i} of {signature} is {arg.value}, which is not a member of sort "
                    f"'{sort}' {list(self.sorts[sort].members)}",
                    ErrorKind.TYPE,
                )
            if isinstance(arg, MemberRef) and sort in self.sorts and arg.name not in self.sorts[sort].members:
                raise self._err(
                    f"argument {i} of {signature} is {arg.name}, which is not a member of sort "
                    f"'{sort}' {list(self.sorts[sort].members)}",
                    ErrorKind.TYPE,
                )
        return Apply(self._value_type(decl.result), decl.name, tuple(args))

    def _ite(self, cond: Expr, then: Expr, other: Expr) -> Expr:
        require(cond, "bool", self._line, "the condition of If")
        if then.type != other.type:
            raise self._err(
                f"the two branches of If must have one type, got {_type_phrase(then.type)} and "
                f"{_type_phrase(other.type)}",
                ErrorKind.TYPE,
            )
        return Op(then.type, "ite", (cond, then, other))

    def _compare(self, node: ast.Compare, env: dict[str, tuple[str, str]]) -> Expr:
        parts: list[Expr] = []
        none_test = self._none_test(node, env)
        if none_test is not None:
            return none_test
        left = self._walk_inner(node.left, env)
        if any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops):
            if len(node.ops) > 1:
                raise self._err("'in' cannot be chained with other comparisons; combine them with And(...)")
            choices = self._membership(node.comparators[0], env)
            for c in choices:
                self._same_type(left, c, "in")
            test: Expr = Op("bool", "or", tuple(Op("bool", "eq", (left, c)) for c in choices))
            return Op("bool", "not", (test,)) if isinstance(node.ops[0], ast.NotIn) else test
        for op_node, right_node in zip(node.ops, node.comparators, strict=True):
            op = _CMP_OPS.get(type(op_node))
            if op is None:
                raise self._err("use == / != to compare values ('is' is not supported)", ErrorKind.UNSUPPORTED)
            right = self._walk_inner(right_node, env)
            a, b = self._positions(left, right)
            if a.type != left.type or b.type != right.type:
                parts.append(Op("bool", op, (a, b)))
                left = right
                continue
            self._same_type(left, right, _CMP_TEXT[op])
            if op in ("lt", "le", "gt", "ge") and left.type in self.sorts:
                # Names are ordered as the declaration lists them (the only order an EnumSort has).
                parts.append(Op("bool", op, (self._position(left), self._position(right))))
                left = right
                continue
            if op in ("lt", "le", "gt", "ge") and left.type != "int" and not left.type.startswith("pos:"):
                sort = left.type
                raise self._err(
                    f"'{_CMP_TEXT[op]}' orders numbers, but {ast.unparse(node)} compares {_type_phrase(sort)}"
                    + (
                        f"; sort '{sort}' has names, not numbers: declare it with numbers (e.g. EnumSort([1, 2, 3]))"
                        " or give it a numeric position function"
                        if sort in self.sorts
                        else ""
                    ),
                    ErrorKind.TYPE,
                )
            parts.append(Op("bool", op, (left, right)))
            left = right
        return parts[0] if len(parts) == 1 else Op("bool", "and", tuple(parts))

    def _whole_range(self, node: ast.expr, env: dict[str, tuple[str, str]]) -> Expr | None:
        """``lo <= t <= hi`` / ``And(lo <= t, t <= hi)`` with ``t`` of a sort of n names and
        ``hi - lo + 1 == n``: the program numbers the members from ``lo``, and under that numbering
        the bounds hold for every member, so the formula is ``True``. None for anything else."""
        bounds: list[tuple[str, str, int]] = []  # (term source, "lo"/"hi", bound)
        if isinstance(node, ast.Compare) and len(node.ops) == 2:
            parts = [
                ast.Compare(node.left, [node.ops[0]], [node.comparators[0]]),
                ast.Compare(node.comparators[0], [node.ops[1]], [node.comparators[1]]),
            ]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "And"
            and "And" not in env
            and len(node.args) == 2
            and not node.keywords
        ):
            parts = list(node.args)
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And) and len(node.values) == 2:
            parts = list(node.values)
        else:
            return None
        term_node: ast.expr | None = None
        for part in parts:
            if not (isinstance(part, ast.Compare) and len(part.ops) == 1):
                return None
            left, op, right = part.left, part.ops[0], part.comparators[0]
            if isinstance(right, ast.Constant) and type(right.value) is int:
                term, bound, flipped = left, right.value, False
            elif isinstance(left, ast.Constant) and type(left.value) is int:
                term, bound, flipped = right, left.value, True
            else:
                return None
            # lo <= t, t >= lo: a lower bound; t <= hi, hi >= t: an upper bound (only <= / >=).
            if isinstance(op, ast.LtE):
                side = "lo" if flipped else "hi"
            elif isinstance(op, ast.GtE):
                side = "hi" if flipped else "lo"
            else:
                return None
            if term_node is not None and ast.dump(term) != ast.dump(term_node):
                return None
            term_node = term
            bounds.append((ast.dump(term), side, bound))
        if term_node is None or sorted(b[1] for b in bounds) != ["hi", "lo"]:
            return None
        if any(isinstance(n, ast.Constant) and n.value is None for n in ast.walk(term_node)):
            return None
        typed = self._walk_inner(term_node, env)  # reports undeclared names / type errors in the term
        sort = self.sorts.get(typed.type)
        if sort is None or sort.numeric or typed.type not in self.sorts:
            return None
        lo = next(b for _, side, b in bounds if side == "lo")
        hi = next(b for _, side, b in bounds if side == "hi")
        members = [m for m in self.sorts.values() if m.base == typed.type and m.parent is None]
        size = len(members[0].members) if members else len(sort.members)
        if hi - lo + 1 != size:
            return None
        return Lit("bool", True)

    def _none_test(self, node: ast.Compare, env: dict[str, tuple[str, str]]) -> Expr | None:
        """``e != None`` is True and ``e == None`` False: every term has a value (functions are total)."""
        sides = [node.left, *node.comparators]
        if not any(isinstance(n, ast.Constant) and n.value is None for n in sides):
            return None
        if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            raise self._err("None can only be tested with == or != (f(x) != None is always true)", ErrorKind.TYPE)
        other = node.comparators[0] if isinstance(node.left, ast.Constant) and node.left.value is None else node.left
        if isinstance(other, ast.Constant) and other.value is None:
            raise self._err("'None == None' has no reading here", ErrorKind.TYPE)
        self._walk_inner(other, env)  # still report undeclared names and type errors on the other side
        return Lit("bool", isinstance(node.ops[0], ast.NotEq))

    def _position(self, e: Expr) -> Expr:
        """The declaration position of a name-sort value (``e`` itself when already a position)."""
        if e.type in self.sorts:
            return Op(f"pos:{e.type}", "pos", (e,))
        return e

    def _positions(self, left: Expr, right: Expr) -> tuple[Expr, Expr]:
        """Compare a member with a moved member (``f(a) == f(b) + 1``) as positions in their sort."""
        types = {left.type, right.type}
        for t in types:
            if t.startswith("pos:") and types == {t, t[4:]}:
                return self._position(left), self._position(right)
        return left, right

    def _position_arith(self, op: str, left: Expr, right: Expr) -> Expr | None:
        """``member + k`` / ``member - k`` move by k places in declaration order; ``member - member`` is a
        difference of places. None for any other mix (reported by the caller)."""

        def sort_of(e: Expr) -> str | None:
            return e.type[4:] if e.type.startswith("pos:") else e.type if e.type in self.sorts else None

        ls, rs = sort_of(left), sort_of(right)
        if op == "add" and ls and right.type == "int":
            return Op(f"pos:{ls}", "add", (self._position(left), right))
        if op == "add" and rs and left.type == "int":
            return Op(f"pos:{rs}", "add", (left, self._position(right)))
        if op == "sub" and ls and right.type == "int":
            return Op(f"pos:{ls}", "sub", (self._position(left), right))
        if op == "sub" and ls and ls == rs:
            return Op("int", "sub", (self._position(left), self._position(right)))
        return None

    def _membership(self, node: ast.expr, env: dict[str, tuple[str, str]]) -> list[Expr]:
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self._walk_inner(e, env) for e in node.elts]
        if isinstance(node, ast.Name) and node.id in self.sorts and node.id not in env:
            sort = self.sorts[node.id]
            if sort.numeric:
                return [Lit("int", v) for v in sort.members]  # type: ignore[arg-type]
            return [MemberRef(sort.base, str(m)) for m in sort.members]
        raise self._err("'in' needs a list [a, b, ...] or a sort name on its right", ErrorKind.TYPE)

    def _same_type(self, left: Expr, right: Expr, op: str) -> None:
        if left.type != right.type:
            raise self._err(
                f"'{op}' compares {_type_phrase(left.type)} with {_type_phrase(right.type)}; both sides "
                "must have the same sort",
                ErrorKind.TYPE,
            )


def _check_infix_mod(tree: ast.AST, text: str, lineno: int) -> None:
    """Refuse ``a + b mod c``: ``mod`` written as a word has no agreed precedence against + - *."""
    for node in ast.walk(tree):
        if not isinstance(node, (ast.BinOp, ast.UnaryOp)):
            continue
        children = [node.left, node.right] if isinstance(node, ast.BinOp) else [node.operand]
        for child in children:
            if not (isinstance(child, ast.BinOp) and child.end_col_offset is not None):
                continue
            if _neighbour(text, child.end_col_offset, 1) == ")" and _neighbour(text, child.col_offset - 1, -1) == "(":
                continue
            if isinstance(child.op, ast.Mod) or (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)):
                raise ProgramError(
                    "'mod' next to another arithmetic operator can be read two ways; add parentheses, e.g. "
                    "(a + b) % c or a + (b % c)",
                    lineno,
                )


def _neighbour(text: str, i: int, step: int) -> str:
    """The first non-blank character from ``text[i]`` on in direction ``step`` ('' at either end)."""
    while 0 <= i < len(text) and text[i].isspace():
        i += step
    return text[i] if 0 <= i < len(text) else ""


def _syntax_message(code: str, exc: SyntaxError) -> str:
    col = f" at column {exc.offset}" if exc.offset else ""
    hint = ""
    if "assignment" in exc.msg or re.search(r"(?<![=<>!])=(?!=)", code):
        hint = "; compare with '==', not '='"
    elif re.search(r"\)\s+(Or|And|Implies|Xor)\b|\b\w+\s+(Or|And)\s+\w", code):
        hint = "; And/Or/Implies are functions: write Or(a, b), not 'a Or b'"
    elif re.search(r"\bmod\b", code):
        hint = "; write the remainder as a % b, not 'a mod b'"
    elif re.search(r"\bif\b|\bthen\b", code) and "If(" not in code:
        hint = "; write a condition as Implies(cond, consequence) or If(cond, a, b)"
    elif code.count("(") != code.count(")"):
        hint = f"; the parentheses are unbalanced ({code.count('(')} '(' vs {code.count(')')} ')')"
    elif re.search(r"\w'", code):
        hint = "; names cannot contain quotes"
    return f"cannot parse this formula{col}: {exc.msg}{hint}"
