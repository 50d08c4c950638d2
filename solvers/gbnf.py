r"""Building blocks of the program grammars (GBNF, the EBNF dialect xgrammar reads natively).

Each program language keeps its grammar beside its parser (``solvers/<family>/grammar.py``);
:func:`symbolkg.solvers.prompts.program_structured_output` hands the text to the engine, which
vLLM passes to xgrammar as ``StructuredOutputsParams(grammar=...)``. This module holds what the
grammars share: literal quoting, bounded free text (the English after ``:::``) and the character
classes of the line breaks that every parser's ``str.splitlines()`` sees.

Why GBNF and not Lark: vLLM sends a grammar with a ``::=`` line to xgrammar's own EBNF reader and
anything else through a Lark-to-EBNF conversion (``grammar_is_likely_lark``), whose ``%ignore``
and terminal priorities change what a grammar admits; written in GBNF, the text tested here
(``tests/solvers/test_grammars.py`` runs xgrammar on it) is the text vLLM enforces.

Why everything is bounded: a completion that may repeat a part without end can be cut off by the
token budget (a small model repeated ``Bright($x, True) &&`` until it ran out), and a cut-off
program does not parse. Every repetition has a bound (lines per section, conjuncts per rule,
characters per name, words per comment), so every path through a grammar reaches its end, and
a completion that ends with ``stop`` is whole.

How a rule is written decides what it costs at each decoding step: xgrammar computes a token
mask per step, deciding most tokens from tables built at compile time and checking the rest one
by one, among them every token that crosses the end of a rule. Measured with SmolLM2's
49k-token vocabulary, the written forms here keep that near a tenth of a millisecond per token
where equivalent ones cost 10 to 150 ms: free text bounded in groups of words
(:func:`text_rules`) rather than characters, blanks fixed around operators rather than optional,
alternatives as whole literals or rules of their own (:func:`expression_rules`), and in the FOL
grammar quantifiers spelled out in the rule that goes on with the formula.

Example:
    >>> print(literal('say "hi"\n'))
    "say \"hi\"\n"
    >>> print(render({"root": '"a" text', **text_rules("text", 30, max_word_chars=9)}), end="")
    root ::= "a" text
    text ::= text_word text_ten{0,2} text_more{0,9}
    text_ten ::= text_more{10}
    text_more ::= " " text_word
    text_word ::= [^ \n\r\x0b\x0c\x1c-\x1e\u0085\u2028\u2029]{0,9}
"""

from __future__ import annotations

from collections.abc import Mapping

#: The characters ``str.splitlines()`` breaks lines at, as the inside of a GBNF character class.
#: Free text must exclude all of them: a parser would see a new line where the grammar sees none.
LINE_BREAKS = r"\n\r\x0b\x0c\x1c-\x1e\u0085\u2028\u2029"

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def literal(text: str) -> str:
    """``text`` as a GBNF string literal (quotes, backslashes and control characters escaped)."""
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in text) + '"'


def choice(*texts: str) -> str:
    """An alternative of string literals, in parentheses: ``("a" | "b")``."""
    return "(" + " | ".join(literal(t) for t in texts) + ")"


def text_rules(name: str, max_words: int, *, max_word_chars: int = 40, exclude: str = "") -> dict[str, str]:
    """Rules for free text on one line: blank-separated words, at most about ``max_words`` of them.

    Words may be empty (two blanks in a row, a trailing blank), so every line of text within
    the bounds has exactly one parse. The bounds are on words, and the words come in groups of
    ten, because of what xgrammar's token masks cost at each decoding step (SmolLM2's vocabulary):
    a ``{0,n}`` over single characters grows to tens of milliseconds per token a few hundred
    characters into the text, and a ``{0,n}`` over words with ``n`` much above 100 to several;
    ten-word groups stay near a tenth of a millisecond.

    Args:
        name: the rule name of the text; its helper rules are named after it.
        max_words: the most blank-separated words, rounded up to a multiple of ten.
        max_word_chars: the longest word.
        exclude: characters (inside of a character class) the text may not contain besides
            the line breaks, e.g. ``":"``.

    Returns:
        ``{rule name: body}`` to merge into a grammar's rules.
    """
    word, more, ten = f"{name}_word", f"{name}_more", f"{name}_ten"
    return {
        name: f"{word} {ten}{{0,{-(-max_words // 10) - 1}}} {more}{{0,9}}",
        ten: f"{more}{{10}}",
        more: f'" " {word}',
        word: f"[^ {LINE_BREAKS}{exclude}]{{0,{max_word_chars}}}",
    }


def string_rule(max_chars: int) -> str:
    """The body of a rule for a quoted string on one line, ``'...'`` or ``"..."``, of at most ``max_chars``."""
    return f'"\'" [^\'{LINE_BREAKS}]{{0,{max_chars}}} "\'" | "\\"" [^"{LINE_BREAKS}]{{0,{max_chars}}} "\\""'


def char_class(chars: str) -> str:
    """A GBNF character class of the (ASCII) characters ``chars``, as ranges: ``"abcx"`` -> ``[a-cx]``."""
    codes = sorted({ord(ch) for ch in chars})
    if not codes:
        raise ValueError("a character class needs at least one character")
    parts, start = [], codes[0]
    for prev, code in zip(codes, codes[1:] + [None], strict=True):
        if code != prev + 1:
            parts.append(_class_char(start) if start == prev else f"{_class_char(start)}-{_class_char(prev)}")
            start = code
    return "[" + "".join(parts) + "]"


def _class_char(code: int) -> str:
    """One character inside a character class, escaped where the class syntax needs it."""
    ch = chr(code)
    return "\\" + ch if ch in "]-^\\" else ch


def word_except(
    name: str, excluded: tuple[str, ...], *, first: str, rest: str, max_len: int, prefixes: tuple[str, ...] = ()
) -> dict[str, str]:
    """Rules for a word of ``first`` then ``rest`` characters (at most ``max_len``), none of ``excluded``.

    xgrammar has no negative lookahead, so the complement is spelled out over the trie of the
    excluded words: at each prefix a word may end (unless the prefix is excluded), continue along
    the trie, or leave it with any other character and then continue freely. Letters compare
    without case, as the parsers compare such words (``bool``, ``Bool``, ``BOOL``).

    Args:
        name: the rule name; the trie's rules are named after it.
        excluded: the refused words, lower case, each made of ``first``/``rest`` characters.
        first, rest: the allowed first and later characters (ASCII).
        max_len: the longest word, at least as long as every excluded word.
        prefixes: refused beginnings, lower case: no word starts with one (``bool`` refuses
            ``bool``, ``boolean`` and ``bool_x``).

    Returns:
        ``{rule name: body}`` to merge into a grammar's rules.
    """
    if max_len < max(map(len, excluded + prefixes), default=1):
        raise ValueError(f"max_len {max_len} is shorter than an excluded word")
    rules: dict[str, str] = {}
    rest_rule = f"{name}_rest"
    rules[rest_rule] = char_class(rest)

    def node(prefix: str) -> str:
        rule = name if not prefix else f"{name}_{len(rules)}"
        rules[rule] = ""  # reserve the name (and the order) before the children
        allowed = first if not prefix else rest
        below = {w[len(prefix)] for w in excluded + prefixes if w.startswith(prefix) and len(w) > len(prefix)}
        blocked = {c for c in below if prefix + c in prefixes}
        children = sorted(below - blocked)
        taken = {c for ch in below for c in (ch.lower(), ch.upper())}
        alternatives = [f"{char_class(c.lower() + c.upper())} {node(prefix + c)}" for c in children]
        others = "".join(ch for ch in allowed if ch not in taken)
        if others:
            alternatives.append(f"{char_class(others)} {rest_rule}{{0,{max_len - len(prefix) - 1}}}")
        if prefix and prefix not in excluded:
            alternatives.append('""')
        rules[rule] = " | ".join(alternatives)
        return rule

    node("")
    return rules


def expression_rules(
    prefix: str,
    *,
    depth: int,
    operands: int,
    arguments: int,
    operators: tuple[str, ...],
    tight: tuple[str, ...],
    words: tuple[str, ...],
    unary: tuple[str, ...],
    binders: bool,
) -> dict[str, str]:
    """Rules for Python-style expressions (the CSP language and the AR-LSAT DSL are read by ``ast.parse``).

    An expression is a chain of at most ``operands`` operands joined by binary operators; an
    operand is a number, a quoted string, a name, a call ``f(...)``, a list ``[...]`` or a group
    ``(...)``, after at most two unary operators. The rules are unrolled ``depth`` times, one copy
    per level of brackets, so nesting is bounded; the innermost level has no brackets. Syntax
    only: which names exist, arities and types are the parser's to check.

    Blanks are fixed: one around a binary operator (``a == b``), none around those in ``tight``
    too (``l+1``), one after a comma. An optional blank (``" "?``) would admit the same
    programs and more, but it makes every vocabulary token that starts with a blank ambiguous
    for xgrammar, whose token masks then cost tens of milliseconds per token instead of a
    fraction of one; the recorded programs space their operators this way.

    Args:
        prefix: the rule-name prefix (the top rule is ``{prefix}_0``).
        depth: levels of brackets.
        operands: operands of one chain.
        arguments: items of one argument list or list display.
        operators: symbolic binary operators, written with a blank on each side.
        tight: those of ``operators`` that may also be written without blanks.
        words: binary operators that are words (``and``, ``not in``), written with blanks.
        unary: prefix operators, as written (``"not "``, ``"-"``).
        binders: whether a list item may be a binder ``x:sort`` (the AR-LSAT DSL's ``[c:children]``).

    Returns:
        ``{rule name: body}``; the grammar must also define ``name``, ``number`` and ``string``.
    """
    spaced = sorted(operators, key=len, reverse=True) + list(words)
    rules = {f"{prefix}_unary": choice(*unary)}
    for d in range(depth + 1):
        # xgrammar's token masks cost ~10 ms per token with the tight operators as an alternative in
        # the chain's group, ~0.01 ms with them in a rule of their own (measured with SmolLM2's vocabulary).
        tail = f" | {prefix}_tight_{d}" if tight else ""
        rules[f"{prefix}_{d}"] = (
            f'{prefix}_operand_{d} (" " {choice(*spaced)} " " {prefix}_operand_{d}{tail}){{0,{operands - 1}}}'
        )
        if tight:
            rules[f"{prefix}_tight_{d}"] = f"{choice(*tight)} {prefix}_operand_{d}"
        brackets = ""
        if d < depth:
            inner, item = f"{prefix}_items_{d + 1}", f"{prefix}_item_{d + 1}"
            brackets = f' | name "(" {inner}? ")" | "(" {prefix}_{d + 1} ")" | "[" {inner}? "]"'
            rules[inner] = f'{item} (", " {item}){{0,{arguments - 1}}}'
            rules[item] = f"{prefix}_{d + 1}" + (f' (":" {prefix}_{d + 1})?' if binders else "")
        rules[f"{prefix}_operand_{d}"] = f"{prefix}_unary{{0,2}} (number | string | name{brackets})"
    return rules


def render(rules: Mapping[str, str], *, root: str = "root") -> str:
    """The grammar text: ``root`` first, then the other rules in their order.

    The first line holds ``::=``, which is how vLLM tells GBNF from Lark (``grammar_is_likely_lark``).

    Raises:
        ValueError: ``root`` is not a rule.
    """
    if root not in rules:
        raise ValueError(f"the grammar has no rule {root!r}")
    order = [root] + [name for name in rules if name != root]
    return "\n".join(f"{name} ::= {rules[name]}" for name in order) + "\n"
