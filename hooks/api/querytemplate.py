"""PromQL with placeholders, filled in so that no value can change the query's structure.

A custom analysis check is PromQL written by the resource's author, with placeholders
(`{{ namespace }}`, `{{ deployment }}`, ...) the hook fills in per track. The values come
from the resource too (a model URI may hold any character but whitespace), so a placeholder
may stand only where a value cannot escape:

- inside a quoted string that is a label matcher's value, where the value is escaped as
  PromQL (Go) strings are, and, after `=~` or `!~`, also quoted as a regular expression
  matching the value literally (a function's string argument, such as label_replace's
  regular expression, takes no placeholder);
- `{{ window }}` also outside strings: its value is the hook's own duration, e.g. `300s`.

Anything else (a placeholder in a raw backtick string, a name outside a string, an unknown
name, a stray `{{`) is refused when the spec is validated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PLACEHOLDERS = ("namespace", "name", "deployment", "track", "window", "model")
UNQUOTED = frozenset({"window"})  # placeholders whose value the hook itself writes
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_REGEX_META = re.compile(r"([\\.+*?()|\[\]{}^$])")
_OPERATORS = ("=~", "!~", "!=", "=")  # a label matcher's, right before its value


@dataclass(frozen=True)
class Part:
    """A piece of the query: literal text, or a placeholder and how its value is quoted."""

    text: str  # the literal text, or the placeholder's name
    placeholder: bool = False
    quote: str = ""  # "" outside strings, else the string's quote character
    regex: bool = False  # inside a string after =~ or !~


@dataclass(frozen=True)
class QueryTemplate:
    parts: tuple[Part, ...]

    def render(self, values: dict[str, str]) -> str:
        out = []
        for part in self.parts:
            if not part.placeholder:
                out.append(part.text)
                continue
            value = values[part.text]
            if part.regex:
                value = _REGEX_META.sub(r"\\\1", value)
            out.append(_escape(value, part.quote) if part.quote else value)
        return "".join(out)


def _escape(value: str, quote: str) -> str:
    """`value` as the inside of a PromQL (Go) string literal quoted with `quote`. What is not
    printable is escaped, and so is U+FFFD, which Prometheus' lexer takes for bad UTF-8."""
    escaped = value.replace("\\", "\\\\").replace(quote, "\\" + quote)
    return "".join(c if c.isprintable() and c != "\ufffd" else f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF
                   else f"\\U{ord(c):08x}" for c in escaped)


def parse(query: str) -> QueryTemplate:
    """The query's parts; ValueError saying what is wrong when a placeholder stands where a
    value could change the query's structure."""
    parts: list[Part] = []
    literal: list[str] = []
    quote = ""  # the open string's quote, or ""
    regex = False  # the open string is a regular expression matcher's value
    value = False  # the open string is a label matcher's value
    significant = ""  # the last two characters outside strings, blanks and comments
    i = 0

    def flush() -> None:
        if literal:
            parts.append(Part("".join(literal)))
            literal.clear()

    while i < len(query):
        if query.startswith("{{", i):
            match = _PLACEHOLDER.match(query, i)
            if match is None:
                raise ValueError(f"'{{{{' at character {i + 1} does not open a placeholder such as "
                                 "{{ namespace }}")
            name = match.group(1)
            if name not in PLACEHOLDERS:
                raise ValueError(f"unknown placeholder {{{{ {name} }}}}: use {', '.join(PLACEHOLDERS)}")
            if quote == "`":
                raise ValueError(f"{{{{ {name} }}}} cannot stand in a raw `string`: use \"...\"")
            if not quote and name not in UNQUOTED:
                raise ValueError(f"{{{{ {name} }}}} must stand inside a quoted string, e.g. "
                                 f'{{namespace="{{{{ {name} }}}}"}}')
            if quote and not value:
                raise ValueError(f"{{{{ {name} }}}} may stand only in a label matcher's value (after =, !=, =~ "
                                 "or !~), not in a function's string argument")
            flush()
            parts.append(Part(name, placeholder=True, quote=quote, regex=regex))
            i = match.end()
            continue
        char = query[i]
        literal.append(char)
        i += 1
        if quote:
            if char == "\\" and quote != "`" and i < len(query):
                literal.append(query[i])
                i += 1
            elif char == quote:
                quote, regex, value = "", False, False
            if not quote:
                significant = '"'
        elif char in "\"'`":
            quote = char
            operator = next((op for op in _OPERATORS if significant.endswith(op)), "")
            regex, value = operator in ("=~", "!~"), bool(operator) and not significant.endswith("==")
        elif not char.isspace() and char != "#":
            significant = (significant + char)[-2:]
        if char == "#" and not quote:  # a comment runs to the end of the line (\n or \r, as PromQL reads it)
            ends = [e for e in (query.find("\n", i), query.find("\r", i)) if e >= 0]
            end = min(ends) if ends else len(query)
            comment = query[i:end]
            if "{{" in comment:
                raise ValueError("placeholders cannot stand in a # comment")
            literal.append(comment)
            i = end
    if quote:
        raise ValueError(f"a string opened with {quote} is not closed")
    flush()
    return QueryTemplate(tuple(parts))
