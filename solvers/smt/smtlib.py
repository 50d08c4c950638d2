"""SMT-LIB2 scripts run by Z3 (language ``smtlib2``).

A script is a sequence of SMT-LIB2 commands. It runs in Z3's own SMT-LIB2
command interpreter inside a fresh :class:`z3.Context`, one command at a time,
so that every result and every error is tied to the command (and line) that
produced it. The answer is the result of the **last** ``(check-sat)``:

* ``sat`` -> ``Status.SAT``, ``unsat`` -> ``Status.UNSAT``;
* ``unknown`` because the time limit was reached -> ``Status.TIMEOUT``; because
  memory ran out -> ``Status.MEMORY``; for any other reason (e.g. incomplete
  quantifier reasoning) -> ``Status.UNKNOWN`` with answer ``"unknown"``.

``Outcome.proof`` holds the script's own output (``get-model``, ``get-value``,
``get-unsat-core``, ``echo`` ...); when the last result is ``sat`` and the script
did not ask for a model after it, the model is appended.

Entailment convention (optional): a comment line ``; goal: <term>`` turns the
script into an entailment question. After the script's commands have run, the
goal is checked in the final assertion scope: premises and not goal unsat ->
``PROVED``/``"True"``; premises and goal unsat -> ``DISPROVED``/``"False"``;
both satisfiable -> ``UNKNOWN``/``"Unknown"``; both unsat (contradictory
premises) -> ``UNSAT`` with ``error_kind="no_answer"``.

Example:
    >>> from symbolkg.solvers.outcomes import Limits
    >>> solve("(declare-const x Int)\\n(assert (> x 2))\\n(check-sat)", Limits(timeout_s=5)).answer
    'sat'
    >>> solve("(declare-const x Int)\\n(assert (> x 2))\\n; goal: (> x 1)", Limits(timeout_s=5)).answer
    'True'

Isolation: the script cannot read or write files (``include`` and output-channel
or file-valued options are rejected). ``(set-option :timeout N)`` is honoured
per ``check-sat`` by this module (never above ``Limits.timeout_s``) instead of
being passed to Z3, because Z3 stores it as a process-global parameter. Other
non-standard options (``:smt.mbqi`` ...) are Z3 global parameters too; they are
passed through and all global parameters are reset after the call, so that
nothing leaks into the next program run by the same worker.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import z3

from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch
from symbolkg.solvers.smt.z3_watchdog import Z3Watchdog

BACKEND = "z3"

#: An S-expression as read here: an atom (symbol, numeral, string with its quotes) or a tuple.
SExpr = str | tuple["SExpr", ...]

#: Commands Z3's interpreter accepts that a script may use.
KNOWN_COMMANDS = frozenset(
    {
        "set-logic", "set-option", "set-info", "get-option", "get-info",
        "declare-sort", "define-sort", "declare-fun", "declare-const", "define-fun", "define-const",
        "define-fun-rec", "define-funs-rec", "declare-datatype", "declare-datatypes",
        "push", "pop", "reset", "reset-assertions", "exit",
        "assert", "assert-soft", "minimize", "maximize", "check-sat", "check-sat-assuming",
        "get-model", "get-value", "get-assignment", "get-unsat-core", "get-unsat-assumptions",
        "get-proof", "get-assertions", "get-objectives", "echo", "simplify", "eval", "display",
    }
)  # fmt: skip

#: Commands whose failure does not invalidate the verdict (asking for a model after ``unsat``).
_QUERY_COMMANDS = frozenset(
    {"get-model", "get-value", "get-assignment", "get-unsat-core", "get-unsat-assumptions", "get-proof",
     "get-assertions", "get-objectives", "get-info", "get-option", "echo", "simplify", "eval", "display"}
)  # fmt: skip

#: ``set-option`` keywords kept inside the command interpreter (not Z3 global parameters).
_LOCAL_OPTIONS = frozenset(
    {":produce-models", ":produce-unsat-cores", ":produce-proofs", ":produce-assignments", ":produce-assertions",
     ":produce-unsat-assumptions", ":print-success", ":random-seed", ":global-declarations", ":interactive-mode"}
)  # fmt: skip

#: Option names that would make Z3 read or write files.
_FILE_OPTION = re.compile(r"channel|file|dump|trace|log", re.IGNORECASE)
_GOAL_COMMENT = re.compile(r"^;+\s*goal\s*:\s*(?P<term>.*)$", re.IGNORECASE)
_Z3_ERROR = re.compile(r'\(error "line (?P<line>\d+) column (?P<col>\d+): (?P<msg>.*)"\)\s*$', re.DOTALL)
_CHECK_RESULTS = ("sat", "unsat", "unknown")
#: Scripts longer than this are refused (an LLM-written script is a few kilobytes).
MAX_PROGRAM_CHARS = 1_000_000
# One token of SMT-LIB2; "" inside a string is an escaped quote (SMT-LIB 2.6).
_TOKEN = re.compile(
    r"""(?P<space>\s+)|(?P<comment>;[^\n]*)|(?P<open>\()|(?P<close>\))"""
    r"""|(?P<string>"(?:[^"]|"")*")|(?P<bad_string>"[^"]*$)"""
    r"""|(?P<symbol>\|[^|]*\|)|(?P<bad_symbol>\|[^|]*$)"""
    r"""|(?P<atom>[^\s();"|]+)"""
)


# --------------------------------------------------------------------------- typed program


@dataclass(frozen=True)
class Command:
    """One top-level command of a script.

    Attributes:
        head: the command name, e.g. ``"assert"``.
        args: the command's arguments as S-expressions.
        start: offset of its opening parenthesis in the script text.
        end: offset just past its closing parenthesis.
        line: 1-based line of its opening parenthesis.
        end_line: 1-based line of its closing parenthesis.
    """

    head: str
    args: tuple[SExpr, ...]
    start: int
    end: int
    line: int
    end_line: int


@dataclass(frozen=True)
class Goal:
    """The term of a ``; goal: <term>`` comment and the line it is on."""

    term: str
    line: int


@dataclass(frozen=True)
class Script:
    """A parsed SMT-LIB2 script: its text, its commands, and the optional goal."""

    text: str
    commands: tuple[Command, ...]
    goal: Goal | None


# --------------------------------------------------------------------------- reader


def parse(text: str) -> Script:
    """Read an SMT-LIB2 script into commands, checking its shape.

    Only the surface is checked here (balanced parentheses, strings and quoted
    symbols closed, known command names, no file access); sorts and declarations
    are checked by Z3 when the script runs in :func:`solve`.

    Args:
        text: the script.

    Returns:
        The :class:`Script`.

    Raises:
        ProgramError: with the 1-based line of the first problem.
    """
    if len(text) > MAX_PROGRAM_CHARS:
        raise ProgramError(
            f"the script has {len(text):,} characters; the limit is {MAX_PROGRAM_CHARS:,}", 1, ErrorKind.UNSUPPORTED
        )
    commands: list[Command] = []
    goal: Goal | None = None
    # Each open list: (items so far, offset of '(', line of '(').
    stack: list[tuple[list[SExpr], int, int]] = []
    line = 1
    for token in _TOKEN.finditer(text):
        kind, value = token.lastgroup, token.group()
        if kind == "space":
            line += value.count("\n")
        elif kind == "comment":
            match = _GOAL_COMMENT.match(value.strip())
            if match:
                if stack:
                    raise ProgramError("a '; goal:' comment must be on its own line between commands", line)
                if goal is not None:
                    raise ProgramError(
                        f"a second '; goal:' comment (the first is on line {goal.line}); keep exactly one goal", line
                    )
                goal = Goal(match.group("term").strip(), line)
                _check_goal_term(goal)
        elif kind == "open":
            stack.append(([], token.start(), line))
        elif kind == "close":
            if not stack:
                raise ProgramError("unexpected ')' with no matching '(' (remove it or add the missing '(')", line)
            items, start, start_line = stack.pop()
            if stack:
                stack[-1][0].append(tuple(items))
            else:
                commands.append(_command(items, start, token.end(), start_line, line))
        elif kind == "bad_string":
            raise ProgramError("string literal is not closed: add the closing '\"'", line)
        elif kind == "bad_symbol":
            raise ProgramError("quoted symbol |...| is not closed: add the closing '|'", line)
        else:  # an atom: symbol, keyword, numeral, string literal or quoted symbol
            if not stack:
                raise ProgramError(
                    f"expected '(' to start a command, found {value[:40]!r}; every command is "
                    "written like (assert ...)",
                    line,
                )
            stack[-1][0].append(value)
            line += value.count("\n")
    if stack:
        _, _, open_line = stack[0]
        raise ProgramError(f"the command starting on this line is not closed: {len(stack)} ')' missing", open_line)
    return Script(text=text, commands=tuple(commands), goal=goal)


def _command(items: list[SExpr], start: int, end: int, line: int, end_line: int) -> Command:
    if not items:
        raise ProgramError("empty command '()'", line)
    head = items[0]
    if not isinstance(head, str):
        raise ProgramError("a command must start with its name, e.g. (assert ...), not with '('", line)
    if head == "include":
        raise ProgramError("(include ...) is not allowed: put everything in one script", line, ErrorKind.UNSUPPORTED)
    if head not in KNOWN_COMMANDS:
        raise ProgramError(
            f"unknown command {head!r}; use SMT-LIB2 commands such as declare-const, declare-fun, "
            "assert, push, pop, check-sat, get-model",
            line,
        )
    args = tuple(items[1:])
    if head == "set-option" and args and isinstance(args[0], str) and _FILE_OPTION.search(args[0]):
        raise ProgramError(
            f"option {args[0]} is not allowed (it would read or write files)", line, ErrorKind.UNSUPPORTED
        )
    return Command(head=head, args=args, start=start, end=end, line=line, end_line=end_line)


def _check_goal_term(goal: Goal) -> None:
    if not goal.term:
        raise ProgramError("'; goal:' needs a Boolean term on the same line, e.g. ; goal: (> x 1)", goal.line)
    depth = 0
    for c in goal.term:
        depth += (c == "(") - (c == ")")
        if depth < 0:
            break
    if depth != 0:
        raise ProgramError(
            "the goal term has unbalanced parentheses; write it on one line, e.g. ; goal: (> x 1)", goal.line
        )


# --------------------------------------------------------------------------- time limit


def _is_timeout_reason(reason: str) -> bool:
    return "timeout" in reason or "canceled" in reason or "cancelled" in reason


def _is_memory_reason(reason: str) -> bool:
    return "memory" in reason or "memout" in reason


# --------------------------------------------------------------------------- running


@dataclass(frozen=True)
class _Check:
    """One check-sat and what it said."""

    line: int
    result: str  # sat / unsat / unknown
    reason: str  # reason-unknown when result is unknown, else ""


class _ScriptError(Exception):
    """A command failed in Z3; carries the outcome to return."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.error_message)
        self.outcome = outcome


class _Runner:
    """Feeds one script to Z3's SMT-LIB2 interpreter, command by command.

    Each piece fed is the original text from the end of the previous command to
    the end of this one, so Z3's running line count equals the script's line
    numbers in its error messages. Commands this module adds (``get-info``,
    ``get-model``) contain no newline, so they do not shift line numbers.
    """

    def __init__(self, script: Script, ctx: z3.Context, dog: Z3Watchdog, deadline: float) -> None:
        self.script = script
        self.ctx = ctx
        self.dog = dog
        self.deadline = deadline
        self.fed_to = 0  # offset of the script text fed so far
        self.transcript: list[str] = []
        self.checks: list[_Check] = []
        self.check_timeout_s: float | None = None  # from (set-option :timeout N)
        self.touched_globals = False
        self.model_after_last_check = False
        self.exited = False

    def eval(self, piece: str) -> str:
        out = z3.Z3_eval_smtlib2_string(self.ctx.ref(), piece)
        return "\n".join(ln for ln in out.splitlines() if ln.strip() != "success")

    def run_commands(self) -> None:
        for cmd in self.script.commands:
            if time.monotonic() >= self.deadline:
                raise _ScriptError(self.timeout_outcome(f"before the command on line {cmd.line}"))
            piece = self.script.text[self.fed_to : cmd.end]
            self.fed_to = cmd.end
            if cmd.head == "set-option" and cmd.args and cmd.args[0] == ":timeout":
                self.check_timeout_s = _timeout_option(cmd)
                piece = "\n" * piece.count("\n")  # keep Z3's line count in step without setting the global
            elif cmd.head == "set-option" and cmd.args and cmd.args[0] not in _LOCAL_OPTIONS:
                self.touched_globals = True
            if cmd.head in ("check-sat", "check-sat-assuming"):
                self.checks.append(self.check(piece, cmd.line))
                self.model_after_last_check = False
                continue
            if cmd.head == "exit":
                self.exited = True
                return
            try:
                out = self.eval(piece)
            except z3.Z3Exception as exc:
                message = _exception_text(exc)
                if cmd.head in _QUERY_COMMANDS:
                    self.transcript.append(message.strip())
                    continue
                raise _ScriptError(self.error_outcome(message, cmd)) from None
            if out:
                self.transcript.append(out)
            if cmd.head == "get-model":
                self.model_after_last_check = True

    def check(self, piece: str, line: int, *, record: bool = True) -> _Check:
        """Run one check-sat piece under the watchdog; ``record`` adds its result to the transcript."""
        limit = self.deadline
        if self.check_timeout_s is not None:
            limit = min(limit, time.monotonic() + self.check_timeout_s)
        try:
            with self.dog.guard(limit):
                out = self.eval(piece)
        except z3.Z3Exception as exc:
            message = _exception_text(exc)
            if _is_memory_reason(message.lower()):
                return _Check(line, "unknown", "memory")
            raise _ScriptError(self.error_outcome(message, None, line)) from None
        lines = out.split()
        result = lines[0] if lines else ""
        if result not in _CHECK_RESULTS:
            raise _ScriptError(
                Outcome.error(
                    Status.RUNTIME_ERROR,
                    ErrorKind.SOLVER,
                    f"check-sat on line {line} gave {out!r}",
                    line=line,
                    backend=BACKEND,
                )
            )
        reason = ""
        if result == "unknown":
            reason = self.reason_unknown()
            if time.monotonic() >= limit and not _is_memory_reason(reason):
                reason = "timeout"
        if record:
            self.transcript.append(result if not reason else f"{result} ; reason: {reason}")
        return _Check(line, result, reason)

    def reason_unknown(self) -> str:
        try:
            out = self.eval("(get-info :reason-unknown)")
        except z3.Z3Exception as exc:
            return _exception_text(exc)
        match = re.search(r':reason-unknown\s+"(.*)"', out)
        return match.group(1) if match else out.strip()

    def extra(self, piece: str) -> str:
        """Run a command this module adds; returns its output or the error text."""
        try:
            return self.eval(piece)
        except z3.Z3Exception as exc:
            return _exception_text(exc)

    def error_outcome(self, message: str, cmd: Command | None, line: int | None = None) -> Outcome:
        match = _Z3_ERROR.search(message)
        text = match.group("msg") if match else message.strip()
        text = text.replace('\\"', '"')
        if cmd is not None:
            line = cmd.line
            if match and cmd.line <= int(match.group("line")) <= cmd.end_line:
                line = int(match.group("line"))
            snippet = " ".join(self.script.text[cmd.start : cmd.end].split())
            if len(snippet) > 120:
                snippet = snippet[:117] + "..."
            text = f"{text} (in {snippet})"
        lowered = text.lower()
        if _is_memory_reason(lowered):
            return Outcome.error(Status.MEMORY, ErrorKind.MEMORY, text, line=line, backend=BACKEND)
        if "unknown constant" in lowered or "unknown function" in lowered or "unknown sort" in lowered:
            kind = ErrorKind.UNDECLARED
        elif "sort" in lowered or "boolean" in lowered or "ill-formed" in lowered or "argument" in lowered:
            kind = ErrorKind.TYPE
        else:
            kind = ErrorKind.SYNTAX
        return Outcome.error(Status.PARSE_ERROR, kind, text, line=line, backend=BACKEND)

    def timeout_outcome(self, where: str) -> Outcome:
        return Outcome.error(
            Status.TIMEOUT,
            ErrorKind.TIMEOUT,
            f"time limit reached {where}; simplify the "
            "problem (fewer quantifiers, no nonlinear arithmetic) or split it",
            backend=BACKEND,
        )


def _timeout_option(cmd: Command) -> float | None:
    value = cmd.args[1] if len(cmd.args) > 1 else ""
    if not isinstance(value, str) or not value.isdigit():
        raise _ScriptError(
            Outcome.error(
                Status.PARSE_ERROR,
                ErrorKind.SYNTAX,
                "(set-option :timeout N) needs N in milliseconds, e.g. (set-option :timeout 5000)",
                line=cmd.line,
                backend=BACKEND,
            )
        )
    return int(value) / 1000.0 if int(value) > 0 else None  # 0: no limit of the script's own


def _exception_text(exc: z3.Z3Exception) -> str:
    value = exc.value if hasattr(exc, "value") else str(exc)
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


# --------------------------------------------------------------------------- public entry point


def solve(text: str, limits: Limits) -> Outcome:
    """Run an SMT-LIB2 script in a fresh Z3 context.

    Never raises for a bad script: malformed input gives ``Status.PARSE_ERROR``
    with the line, a script that runs past ``limits.timeout_s`` gives
    ``Status.TIMEOUT``.

    Args:
        text: the script (see the module docstring for the answer rules).
        limits: ``timeout_s`` bounds the whole call, all check-sats together.

    Returns:
        The :class:`Outcome`; ``answer`` is ``"sat"``/``"unsat"``/``"unknown"``
        of the last ``check-sat``, or ``"True"``/``"False"``/``"Unknown"`` with a
        ``; goal:`` comment.
    """
    with Stopwatch() as sw:
        outcome = _solve(text, limits, time.monotonic() + limits.timeout_s)
    return _with_seconds(outcome, sw.seconds)


def _with_seconds(outcome: Outcome, seconds: float) -> Outcome:
    data = outcome.to_dict()
    data.update(seconds=seconds, backend=BACKEND)
    return Outcome.from_dict(data)


def _solve(text: str, limits: Limits, deadline: float) -> Outcome:
    try:
        script = parse(text)
    except ProgramError as err:
        return err.to_outcome(backend=BACKEND)
    ctx = z3.Context()
    runner: _Runner | None = None
    try:
        with Z3Watchdog(ctx) as dog:
            runner = _Runner(script, ctx, dog, deadline)
            try:
                runner.run_commands()
                if script.goal is not None:
                    return _goal_outcome(runner, script.goal)
                return _last_check_outcome(runner)
            except _ScriptError as err:
                return err.outcome
    except MemoryError:
        return Outcome.error(
            Status.MEMORY, ErrorKind.MEMORY, "out of memory (worker memory limit reached)", backend=BACKEND
        )
    finally:
        if runner is not None and runner.touched_globals:
            # The script set Z3 global parameters; put them back for the next program in this process.
            z3.Z3_global_param_reset_all()


def _proof(runner: _Runner) -> str | None:
    text = "\n".join(t for t in runner.transcript if t)
    return text or None


def _last_check_outcome(runner: _Runner) -> Outcome:
    if not runner.checks:
        return Outcome(
            status=Status.UNKNOWN,
            error_kind=ErrorKind.NO_ANSWER.value,
            proof=_proof(runner),
            error_message="the script has no (check-sat) command, so it has no answer; add (check-sat) "
            "after the assertions (or a '; goal: <term>' comment to ask whether a term follows)",
            backend=BACKEND,
        )
    last = runner.checks[-1]
    if last.result == "unknown":
        if _is_memory_reason(last.reason):
            return Outcome.error(
                Status.MEMORY,
                ErrorKind.MEMORY,
                f"out of memory in the check-sat on line {last.line}",
                line=last.line,
                backend=BACKEND,
            )
        if _is_timeout_reason(last.reason):
            return Outcome.error(
                Status.TIMEOUT,
                ErrorKind.TIMEOUT,
                f"time limit reached in the check-sat on line "
                f"{last.line}; simplify the problem (fewer quantifiers, no nonlinear arithmetic) "
                "or split it",
                line=last.line,
                backend=BACKEND,
            )
        return Outcome(
            status=Status.UNKNOWN,
            answer="unknown",
            proof=_proof(runner),
            error_message=f"Z3 answered unknown on line {last.line} (reason: {last.reason})",
            error_line=last.line,
            backend=BACKEND,
        )
    if last.result == "sat" and not runner.model_after_last_check and not runner.exited:
        model = runner.extra("(get-model)")
        if "".join(model.split()) not in ("", "()"):
            runner.transcript.append(model)
    status = Status.SAT if last.result == "sat" else Status.UNSAT
    return Outcome(status=status, answer=last.result, proof=_proof(runner), backend=BACKEND)


def _goal_outcome(runner: _Runner, goal: Goal) -> Outcome:
    """Decide whether the assertions entail the goal term (module docstring)."""
    verdicts: dict[str, _Check] = {}
    models: dict[str, str] = {}
    for name, term in (("negated", f"(not {goal.term})"), ("goal", goal.term)):
        if time.monotonic() >= runner.deadline:
            return Outcome.error(
                Status.TIMEOUT,
                ErrorKind.TIMEOUT,
                "time limit reached while checking the goal",
                line=goal.line,
                backend=BACKEND,
            )
        try:
            runner.eval("(push 1)")
            runner.eval(f"(assert {term})")
        except z3.Z3Exception as exc:
            outcome = runner.error_outcome(_exception_text(exc), None, goal.line)
            message = f"in the '; goal:' term: {outcome.error_message}"
            return Outcome.error(
                outcome.status, outcome.error_kind or ErrorKind.SYNTAX, message, line=goal.line, backend=BACKEND
            )
        verdicts[name] = runner.check("(check-sat)", goal.line, record=False)
        if verdicts[name].result == "sat":
            models[name] = runner.extra("(get-model)").strip()
        runner.extra("(pop 1)")
    neg, pos = verdicts["negated"], verdicts["goal"]
    for check in (neg, pos):
        if check.result == "unknown" and _is_memory_reason(check.reason):
            return Outcome.error(
                Status.MEMORY,
                ErrorKind.MEMORY,
                "out of memory while checking the goal",
                line=goal.line,
                backend=BACKEND,
            )
    transcript = _proof(runner)
    if neg.result == "unsat" and pos.result == "unsat":
        return Outcome(
            status=Status.UNSAT,
            error_kind=ErrorKind.NO_ANSWER.value,
            proof=transcript,
            error_message="the assertions are contradictory (unsatisfiable on their own), so both the "
            "goal and its negation follow; fix the premises that conflict",
            backend=BACKEND,
        )
    if neg.result == "unsat":
        proof = "\n".join(p for p in (transcript, "assertions and (not goal) are unsatisfiable: the goal follows") if p)
        return Outcome(status=Status.PROVED, answer="True", proof=proof, backend=BACKEND)
    if pos.result == "unsat":
        proof = "\n".join(
            p
            for p in (
                transcript,
                "assertions and goal are unsatisfiable: the negation follows",
                f"model of the assertions:\n{models.get('negated', '')}",
            )
            if p
        )
        return Outcome(status=Status.DISPROVED, answer="False", proof=proof, backend=BACKEND)
    if _is_timeout_reason(neg.reason) or _is_timeout_reason(pos.reason):
        return Outcome.error(
            Status.TIMEOUT,
            ErrorKind.TIMEOUT,
            "time limit reached while checking the goal; "
            "simplify the problem (fewer quantifiers, no nonlinear arithmetic)",
            line=goal.line,
            backend=BACKEND,
        )
    return _undecided_goal(transcript, models, neg, pos, goal)


def _undecided_goal(transcript: str, models: dict[str, str], neg: _Check, pos: _Check, goal: Goal) -> Outcome:
    """Neither the goal nor its negation follows: Unknown, with a model of each side that has one."""
    parts = [transcript] if transcript else []
    if "negated" in models:
        parts.append(f"a model where the goal is false:\n{models['negated']}")
    if "goal" in models:
        parts.append(f"a model where the goal is true:\n{models['goal']}")
    message = None
    if neg.result == "unknown" or pos.result == "unknown":
        message = f"Z3 could not decide the goal (reason: {neg.reason or pos.reason})"
    return Outcome(
        status=Status.UNKNOWN,
        answer="Unknown",
        proof="\n".join(parts) or None,
        error_message=message,
        error_line=goal.line if message else None,
        backend=BACKEND,
    )
