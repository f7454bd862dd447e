from __future__ import annotations

import pytest
from hooks.api.quantity import QuantityError, canonical_quantity, is_quantity
from hypothesis import given
from hypothesis import strategies as st


@pytest.mark.parametrize(("given_value", "canonical"), [
    ("4", "4"), (4, "4"), ("4000m", "4"), ("1500m", "1500m"), ("0.5", "500m"), ("1.5", "1500m"),
    ("1000", "1k"), ("1500", "1500"), ("100M", "100M"), ("1000M", "1G"), ("0", "0"), ("0Gi", "0"),
    ("32Gi", "32Gi"), ("32768Mi", "32Gi"), ("1024Ki", "1Mi"), ("1536Mi", "1536Mi"), ("0.5Gi", "512Mi"),
    ("1.5Gi", "1536Mi"), ("0.5Ki", "512"), ("1023Ki", "1023Ki"), ("1e3", "1e3"), ("12e6", "12e6"),
    ("1.5e3", "1500"), ("100Gi", "100Gi"), (".5", "500m"), ("2.", "2"),
])
def test_canonical_spelling_matches_kubernetes(given_value: str | int, canonical: str) -> None:
    assert canonical_quantity(given_value) == canonical


@pytest.mark.parametrize("bad", ["", "4 cores", "-1", "1.5.5", "Gi", "1Gb", "1gi", "1e", True, -3, 1.5, None])
def test_rejects_what_kubernetes_rejects(bad: object) -> None:
    assert not is_quantity(bad)
    with pytest.raises(QuantityError):
        canonical_quantity(bad)  # type: ignore[arg-type]


@given(st.integers(min_value=0, max_value=10**15), st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi"]))
def test_canonical_form_is_a_fixed_point(number: int, suffix: str) -> None:
    once = canonical_quantity(f"{number}{suffix}")
    assert is_quantity(once)
    assert canonical_quantity(once) == once
