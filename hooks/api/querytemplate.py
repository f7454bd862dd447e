"""PromQL with placeholders, filled in so that no value can change the query's structure.

A custom analysis check is PromQL written by the resource's author, with placeholders
(`{{ namespace }}`, `{{ deployment }}`, ...) the hook fills in per track. The values come
from the resource too (a model URI may hold any character but whitespace), so a placeholder
may stand only where a value cannot escape:

- inside a quoted string literal, where the value is escaped as PromQL (Go) strings are, and,
  after `=~` or `!~`, also quoted as a regular expression matching the value literally;
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
    """`value` as the inside of a PromQL string literal quoted with `quote`."""
    escaped = value.replace("\\", "\\\\").replace(quote, "\\" + quote)
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in escaped)


def parse(query: str) -> QueryTemplate:
    """The query's parts; ValueError saying what is wrong when a placeholder stands where a
    value could change the query's structure."""
    parts: list[Part] = []
    literal: list[str] = []
    quote = ""  # the open string's quote, or ""
    regex = False
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
                quote, regex = "", False
        elif char in "\"'`":
            quote = char
            regex = re.search(r"[=!]~\s*$", "".join(literal[:-1])) is not None
        elif char == "#":  # a comment runs to the end of the line
            end = query.find("\n", i)
            end = len(query) if end < 0 else end
            comment = query[i:end]
            if "{{" in comment:
                raise ValueError("placeholders cannot stand in a # comment")
            literal.append(comment)
            i = end
    if quote:
        raise ValueError(f"a string opened with {quote} is not closed")
    flush()
    return QueryTemplate(tuple(parts))
