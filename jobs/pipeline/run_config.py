"""A run of ``symbolkg solve`` as one typed config: a file (``--config run.yaml``), a stored run
(``--rerun RUN.parquet``) and the command line, merged and validated.

The options are the flags of ``symbolkg solve``: the :class:`Schema` is read from its parser, so a
flag that a method adds (its ``add_arguments``) is a config key at once, with the flag's type,
choices, default and help (the help is the option's documentation). A file holds the shared
options at the top level and a method's own options in a section named after the method, the
method's flag prefix dropped::

    method: symba
    dataset: symba/clutrr
    limit: 20
    engine: gold
    out: runs/clutrr.parquet
    symba:
      max_calls: 50        # --symba-max-calls

Keys take dashes or underscores. A method's option may also stand at the top level under its
flag's own name (``symba_max_calls: 50``). YAML (``.yaml``, ``.yml``) or TOML (``.toml``, a
section is a table: ``[symba]``). Relative paths are relative to the working directory, as on the
command line.

Precedence, lowest first: the flags' defaults, the stored config of ``--rerun`` (all but
:data:`NOT_RERUN`), the file, the command line.

Refused, with :class:`ConfigError` (one line that names the file, the key or value, and what is
allowed): an unknown key (with the closest known one), a value of the wrong type or outside the
flag's choices, a key given twice, and a section, or a command-line flag, that belongs to another
method than the run's.

:class:`RunConfig` is the result: every setting of the run, defaults included. Its
:meth:`RunConfig.document` is what a results file stores (``config`` in its metadata) and what
``symbolkg config show`` prints; read back with ``--config`` it gives the same run.

    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> _ = p.add_argument("--workers", type=int, default=2, help="solver processes")
    >>> _ = p.add_argument("--method", choices=("a", "b"), default="a")
    >>> _ = p.add_argument("--b-depth", type=int, default=3, help="depth of method b")
    >>> schema = Schema.from_parser(p, {"a": [], "b": ["b_depth"]})
    >>> resolve(schema, {"workers": 4}, file=Source("run.yaml", {"method": "b", "b": {"depth": 5}})).document()
    {'method': 'b', 'workers': 4, 'b': {'depth': 5}}
    >>> try:
    ...     resolve(schema, {}, file=Source("run.yaml", {"b": {"depth": 5}}))
    ... except ConfigError as exc:
    ...     print(exc)  # doctest: +NORMALIZE_WHITESPACE
    run.yaml: section 'b' holds options of --method b, but this run's method is 'a' (the default);
    remove it, or set method: b
"""

from __future__ import annotations

import argparse
import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "ConfigError",
    "NOT_RERUN",
    "Option",
    "RunConfig",
    "Schema",
    "Source",
    "load_file",
    "resolve",
    "stored_source",
    "to_yaml",
]

#: Options that are never config keys: how the config itself is given, and ``--help``.
META_OPTIONS = frozenset({"help", "config", "rerun"})
#: Options that ``--rerun`` does not take from the stored run (``overwrite`` would discard new results).
NOT_RERUN = frozenset({"overwrite"})
#: Config file suffix -> format.
SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".toml": "toml"}


class ConfigError(ValueError):
    """A bad config: an unreadable file, an unknown key, a bad value, a key for another method.

    The message is one line: the file (or ``--flag``), the key or value, and what is allowed.
    """


def _norm(key: Any) -> str:
    return str(key).strip().replace("-", "_")


def _describe(value: Any) -> str:
    """A value as a config user wrote it, with its type: ``'two' (a string)``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    kind = {int: "an integer", float: "a number", str: "a string", list: "a list", dict: "a mapping"}
    name = next((v for t, v in kind.items() if isinstance(value, t)), type(value).__name__)
    shown = repr(value) if isinstance(value, (str, int, float)) else ""
    return f"{shown} ({name})" if shown else name


def _did_you_mean(word: str, candidates: Sequence[str]) -> str | None:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return close[0] if close else None


@dataclass(frozen=True)
class Option:
    """One setting of a run: a flag of ``symbolkg solve`` and its key in a config file.

    Attributes:
        dest: the flag's destination (the attribute of the parsed namespace), e.g. ``symba_max_calls``.
        key: its key in its section of a file (underscores), e.g. ``max_calls``.
        section: None for a top-level key, else the method whose section holds it.
        flag: the command-line flag, e.g. ``--symba-max-calls``.
        kind: the value's type: ``bool`` (a switch), ``int``, ``float`` or ``str``; None takes any value.
        default: the value when neither the file nor the command line gives one.
        choices: the allowed values, or None for any value of ``kind``.
        help: the flag's help text: the option's documentation.
    """

    dest: str
    key: str
    section: str | None
    flag: str
    kind: type | None
    default: Any
    choices: tuple[Any, ...] | None = None
    help: str = ""

    @property
    def nullable(self) -> bool:
        """Whether null is a value (it is the default: "not set", e.g. ``limit``)."""
        return self.default is None and self.kind is not bool

    def where(self) -> str:
        return f"'{self.key}'" + (f" in section '{self.section}'" if self.section else "")

    def _expected(self, value: Any) -> str:
        names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
        words = names[self.kind]  # type: ignore[index]
        if self.kind is str and isinstance(value, (int, float)) and not isinstance(value, bool):
            words += " (quote it)"
        return words + (" or null" if self.nullable else "")

    def check(self, value: Any, origin: str) -> Any:
        """``value`` if it fits the option (an int is taken for a float); raises :class:`ConfigError` otherwise."""
        if value is None and self.nullable:
            return None
        if self.kind is not None:
            ok = {
                bool: isinstance(value, bool),
                int: isinstance(value, int) and not isinstance(value, bool),
                float: isinstance(value, (int, float)) and not isinstance(value, bool),
                str: isinstance(value, str),
            }[self.kind]
            if not ok:
                raise ConfigError(
                    f"{origin}: bad value for {self.where()} ({self.flag}): expected "
                    f"{self._expected(value)}, got {_describe(value)}"
                )
            if self.kind is float:
                value = float(value)
        if self.choices is not None and value not in self.choices:
            allowed = ", ".join(str(c) for c in self.choices)
            close = _did_you_mean(str(value), [str(c) for c in self.choices])
            raise ConfigError(
                f"{origin}: bad value for {self.where()} ({self.flag}): {value!r} is not one of "
                f"{allowed}" + (f" (did you mean '{close}'?)" if close else "")
            )
        return value


def _kind(action: argparse.Action) -> type | None:
    if action.nargs == 0 and isinstance(action.const, bool):  # store_true / store_false
        return bool
    if action.nargs is not None:  # lists and the like: taken as they are
        return None
    if action.type in (int, float):
        return action.type  # type: ignore[return-value]
    return str if action.type in (None, str) else None


@dataclass(frozen=True)
class Schema:
    """Every option of a command, read from its parser: the keys a config may hold.

    Attributes:
        options: the options, in the parser's order.
        methods: the methods that may have a section (each registered method, options or not).
    """

    options: tuple[Option, ...]
    methods: tuple[str, ...]

    @classmethod
    def from_parser(cls, parser: argparse.ArgumentParser, sections: Mapping[str, Sequence[str]]) -> Schema:
        """The schema of ``parser``'s flags; ``sections`` names each method's own flags (their dests).

        Raises:
            ValueError: two options of one section would have the same key, or a section is named
                like a top-level key (a bug in the flags, not in a user's file).
        """
        owner = {dest: method for method, dests in sections.items() for dest in dests}
        options = []
        for action in parser._actions:  # argparse has no public list of its actions
            if not action.option_strings or action.dest in META_OPTIONS or action.dest == argparse.SUPPRESS:
                continue
            section = owner.get(action.dest)
            prefix = f"{_norm(section)}_" if section else ""
            key = action.dest[len(prefix) :] if prefix and action.dest.startswith(prefix) else action.dest
            options.append(
                Option(
                    action.dest,
                    key,
                    section,
                    max(action.option_strings, key=len),
                    _kind(action),
                    action.default,
                    tuple(action.choices) if action.choices else None,
                    action.help or "",
                )
            )
        schema = cls(tuple(options), tuple(sections))
        schema._check_keys()
        return schema

    def _check_keys(self) -> None:
        seen: dict[tuple[str | None, str], str] = {}
        for opt in self.options:
            if (opt.section, opt.key) in seen:
                raise ValueError(f"{opt.flag} and {seen[opt.section, opt.key]} have the same config key {opt.key!r}")
            seen[opt.section, opt.key] = opt.flag
        clash = [m for m in self.methods if (None, _norm(m)) in seen]
        if clash:
            raise ValueError(f"method {clash[0]!r} is named like a top-level option")

    def top(self) -> dict[str, Option]:
        """The top-level keys (the options every method shares)."""
        return {o.key: o for o in self.options if o.section is None}

    def section(self, method: str) -> dict[str, Option]:
        """The keys of ``method``'s section (its own options)."""
        return {o.key: o for o in self.options if o.section == method}

    def dest(self, dest: str) -> Option | None:
        return next((o for o in self.options if o.dest == dest), None)

    def section_name(self, key: str) -> str | None:
        """The method whose section ``key`` names (``prolog_agent`` -> ``prolog-agent``), or None."""
        return next((m for m in self.methods if _norm(m) == key), None)

    def defaults(self, method: str) -> dict[str, Any]:
        """dest -> default of the shared options and of ``method``'s own."""
        return {o.dest: o.default for o in self.options if o.section in (None, method)}


@dataclass(frozen=True)
class Source:
    """A config document and where it came from.

    Attributes:
        origin: what the error messages name: the file as given (``run.yaml``), or the stored run's path.
        document: the parsed document: a mapping of keys (and method sections) to values.
    """

    origin: str
    document: Any


@dataclass(frozen=True)
class RunConfig:
    """Every setting of one run: the shared options and the method's own, defaults included.

    Attributes:
        method: the run's ``--method``.
        values: dest -> value for every option of the run (:meth:`Schema.defaults` of ``method``).
        schema: the options the values belong to.
    """

    method: str
    values: Mapping[str, Any]
    schema: Schema = field(repr=False, compare=False)

    def namespace(self) -> argparse.Namespace:
        """The values as the parsed flags of the command (other methods' options at their defaults)."""
        every = {o.dest: o.default for o in self.schema.options}
        return argparse.Namespace(**{**every, **self.values})

    def document(self) -> dict[str, Any]:
        """The config as a file holds it: ``method`` first, the shared keys, then the method's section."""
        doc: dict[str, Any] = {"method": self.method}
        for opt in self.schema.options:
            if opt.section is None and opt.dest != "method":
                doc[opt.key] = self.values[opt.dest]
        own = {o.key: self.values[o.dest] for o in self.schema.options if o.section == self.method}
        if own:
            doc[self.method] = own
        return doc


# --------------------------------------------------------------------------- reading documents


def _unknown_key(raw: Any, section: str | None, schema: Schema, origin: str) -> ConfigError:
    key = _norm(raw)
    top = schema.top()
    if section is None:
        allowed = [*top, *schema.methods]
        owners = [m for m in schema.methods if key in schema.section(m)]
        close = _did_you_mean(key, allowed)
        hint = (
            f" (an option of section '{owners[0]}': put it under '{owners[0]}:')"
            if owners
            else f" (did you mean '{close}'?)"
            if close
            else ""
        )
        return ConfigError(f"{origin}: unknown key '{raw}'{hint}; allowed top-level keys: {', '.join(allowed)}")
    own = list(schema.section(section))
    close = _did_you_mean(key, own)
    if close:
        hint = f" (did you mean '{close}'?)"
    elif key in top or _did_you_mean(key, list(top)):
        hint = f" (did you mean the top-level key '{key if key in top else _did_you_mean(key, list(top))}'?)"
    else:
        hint = ""
    takes = f"section '{section}' takes: {', '.join(own)}" if own else f"--method {section} has no options of its own"
    return ConfigError(f"{origin}: unknown key '{raw}' in section '{section}'{hint}; {takes}")


def _method_of(source: Source | None, schema: Schema) -> str | None:
    if source is None or not isinstance(source.document, Mapping):
        return None
    option = schema.dest("method")
    for raw, value in source.document.items():
        if _norm(raw) == "method" and option is not None:
            return option.check(value, source.origin)
    return None


@dataclass
class _Reader:
    """Reads one document into dest -> value for a run of ``method``.

    Attributes:
        schema: the command's options.
        method: the run's method (its section is read; another method's is refused or dropped).
        method_origin: where the method came from, for the messages (``from the command line``).
        origin: the document's :attr:`Source.origin`.
        other_methods: ``"error"`` (a file) or ``"drop"`` (a stored run whose method was changed).
        values: dest -> value read so far.
    """

    schema: Schema
    method: str
    method_origin: str
    origin: str
    other_methods: str = "error"
    values: dict[str, Any] = field(default_factory=dict)

    def read(self, document: Any) -> dict[str, Any]:
        if not isinstance(document, Mapping):
            raise ConfigError(f"{self.origin}: a config maps keys to values, got {_describe(document)}")
        top = self.schema.top()
        for raw, value in document.items():
            key = _norm(raw)
            section = self.schema.section_name(key)
            if section is not None:
                self._section(raw, section, value)
                continue
            opt = top.get(key) or self.schema.dest(key)
            if opt is None:
                raise _unknown_key(raw, None, self.schema, self.origin)
            if self._belongs(opt.section, f"'{raw}' is an option of --method {opt.section}"):
                self._put(opt, value, raw)
        return self.values

    def _belongs(self, section: str | None, what: str) -> bool:
        if section is None or section == self.method:
            return True
        if self.other_methods == "drop":
            return False
        raise ConfigError(
            f"{self.origin}: {what}, but this run's method is '{self.method}' ({self.method_origin}); "
            f"remove it, or set method: {section}"
        )

    def _section(self, raw: Any, section: str, body: Any) -> None:
        if not self._belongs(section, f"section '{raw}' holds options of --method {section}"):
            return
        if not isinstance(body, Mapping):
            raise ConfigError(
                f"{self.origin}: section '{raw}' maps the options of --method {section} to values, "
                f"got {_describe(body)}"
            )
        own = self.schema.section(section)
        for k, value in body.items():
            opt = own.get(_norm(k))
            if opt is None:
                raise _unknown_key(k, section, self.schema, self.origin)
            self._put(opt, value, k)

    def _put(self, opt: Option, value: Any, raw: Any) -> None:
        if opt.dest in self.values:
            raise ConfigError(f"{self.origin}: {opt.where()} ({opt.flag}) is given twice (as '{raw}' too); keep one")
        self.values[opt.dest] = opt.check(value, self.origin)


def _check_flags(given: Mapping[str, Any], schema: Schema, method: str, method_origin: str) -> None:
    for dest in given:
        opt = schema.dest(dest)
        if opt is not None and opt.section not in (None, method):
            raise ConfigError(
                f"{opt.flag} is an option of --method {opt.section}, but this run's method is "
                f"'{method}' ({method_origin})"
            )


def resolve(
    schema: Schema, given: Mapping[str, Any], *, file: Source | None = None, stored: Source | None = None
) -> RunConfig:
    """The run's config: defaults < ``stored`` (a ``--rerun``) < ``file`` (``--config``) < ``given`` flags.

    Args:
        schema: the command's options.
        given: dest -> value of the flags given on the command line (argparse already checked them).
        file: the ``--config`` document.
        stored: the stored config of the ``--rerun`` run; its sections of other methods are dropped
            when the method is changed, and :data:`NOT_RERUN` options are not taken.

    Raises:
        ConfigError: see the module docstring.
    """
    candidates = [("from the command line", given.get("method"))]
    for source in (file, stored):
        if source is not None:
            candidates.append((f"from {source.origin}", _method_of(source, schema)))
    method_origin, method = next(
        ((o, m) for o, m in candidates if m is not None),
        ("the default", schema.dest("method").default if schema.dest("method") else ""),
    )
    _check_flags(given, schema, method, method_origin)
    values = schema.defaults(method)
    if stored is not None:
        old = _Reader(schema, method, method_origin, stored.origin, "drop").read(stored.document)
        values.update({k: v for k, v in old.items() if k not in NOT_RERUN})
    if file is not None:
        values.update(_Reader(schema, method, method_origin, file.origin).read(file.document))
    values.update({k: v for k, v in given.items() if k in values})
    values["method"] = method
    return RunConfig(method, values, schema)


# --------------------------------------------------------------------------- files and stored runs


def _parse(text: str, fmt: str, origin: str) -> Any:
    if fmt == "toml":
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{origin}: not valid TOML: {exc}") from None
    import yaml  # only when a YAML config is read: the CLI builds its parsers without it

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
        raise ConfigError(f"{origin}{where}: not valid YAML: {problem}") from None
    return {} if doc is None else doc


def load_file(path: str | os.PathLike[str]) -> Source:
    """The config document of a YAML (``.yaml``, ``.yml``) or TOML (``.toml``) file.

    Raises:
        ConfigError: another suffix, no such file, or a syntax error (with its line).
    """
    p, origin = Path(path), os.fspath(path)
    fmt = SUFFIXES.get(p.suffix.lower())
    if fmt is None:
        raise ConfigError(
            f"{origin}: a config file is YAML (.yaml, .yml) or TOML (.toml), not '{p.suffix or 'no suffix'}'"
        )
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{origin}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{origin}: cannot read it: {exc}") from None
    return Source(origin, _parse(text, fmt, origin))


def stored_source(run: str | os.PathLike[str]) -> tuple[Source, dict[str, Any]]:
    """The config a results file stored, and the file's whole metadata (for ``--rerun`` and ``config show``).

    Raises:
        ConfigError: no results there, an unreadable file, or a run written before runs stored their config.
    """
    from symbolkg.jobs.pipeline.store import read_run_meta  # pyarrow: only when a run is read

    origin = os.fspath(run)
    try:
        meta = read_run_meta(run)
    except FileNotFoundError:
        raise ConfigError(f"{origin}: no results there (nor its parts or shards)") from None
    except Exception as exc:  # noqa: BLE001 - pyarrow raises its own errors for a corrupt file
        raise ConfigError(f"{origin}: cannot read its metadata: {type(exc).__name__}: {exc}") from None
    if not isinstance(meta.get("config"), Mapping):
        raise ConfigError(
            f"{origin}: no stored config (the run was written before runs stored theirs); rerun it with its flags"
        )
    return Source(origin, meta["config"]), meta


def to_yaml(document: Mapping[str, Any], header: Sequence[str] = ()) -> str:
    """``document`` as YAML, keys in their order, after ``header`` lines as comments."""
    import yaml

    body = yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=False, allow_unicode=True, width=120)
    return "".join(f"# {line}\n" for line in header) + body
