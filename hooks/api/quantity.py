"""Kubernetes resource quantities: parsing and the canonical spelling the API server stores.

Metacontroller compares what the hook returns with the live object; "4000m" and "4" are the
same CPU but not the same string, so every quantity the hook emits is spelled the way
Kubernetes serialises it (`resource.Quantity`'s canonical form) or every sync would update.
"""

from __future__ import annotations

import re
from fractions import Fraction

# The quantity grammar of apimachinery's resource.ParseQuantity (without a sign: every
# quantity in an LLMDeployment is a size or a count), shared with the CRD's `pattern`.
QUANTITY_PATTERN = (
    r"^(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?[0-9]+))?$"
)
_QUANTITY = re.compile(QUANTITY_PATTERN)

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_NANO = Fraction(1, 10**9)


class QuantityError(ValueError):
    """Not a Kubernetes quantity."""


def is_quantity(value: object) -> bool:
    """True for a non-negative int or a string in Kubernetes quantity syntax."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, str) and _QUANTITY.match(value) is not None


def canonical_quantity(value: str | int) -> str:
    """The spelling Kubernetes serialises `value` with: '4000m' -> '4', '32768Mi' -> '32Gi'."""
    if isinstance(value, bool) or not is_quantity(value):
        raise QuantityError(f"{value!r} is not a Kubernetes quantity")
    text = str(value)
    match = _QUANTITY.match(text)
    assert match is not None
    number, suffix = match.group(1), match.group(5) or ""
    amount = Fraction(number)
    if suffix in _BINARY:
        amount *= 2 ** _BINARY[suffix]
        style = "binary"
    elif suffix[:1] in ("e", "E") and len(suffix) > 1:
        amount *= Fraction(10) ** int(suffix[1:])
        style = "exponent"
    else:
        amount *= Fraction(10) ** _DECIMAL[suffix]
        style = "decimal"
    # Kubernetes keeps nano precision and rounds anything finer up.
    nanos = -((-amount) // _NANO)
    amount = nanos * _NANO
    if amount == 0:
        return "0"
    if style == "binary" and amount >= 1024 and amount.denominator == 1:
        return _base1024(int(amount))
    return _base10(nanos, style)


def _base1024(amount: int) -> str:
    exponent = 0
    while amount % 1024 == 0 and exponent < 60:
        amount //= 1024
        exponent += 10
    suffix = next((s for s, e in _BINARY.items() if e == exponent), "")
    return f"{amount}{suffix}"


def _base10(nanos: int, style: str) -> str:
    """nanos * 10^-9 as mantissa and an exponent that is a multiple of three, as large as the
    mantissa stays whole allows."""
    mantissa, exponent = nanos, -9
    while mantissa % 1000 == 0 and exponent < 18:
        mantissa //= 1000
        exponent += 3
    if style == "exponent":
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_DECIMAL_SUFFIX[exponent]}"
