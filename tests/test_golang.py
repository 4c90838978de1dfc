"""Go's float formatting: the fast paths against a brute-force reference of Go's rule
(the shortest correctly rounded digits that read back as the same float32/float64)."""

from __future__ import annotations

import random
import struct
from decimal import Decimal

import pytest

from ticdc_sim.encoders import columnar
from ticdc_sim.golang.strconv import float32, format_f, json_number


def reference_digits(value: float, bits: int) -> tuple[str, int]:
    """Try every length from 1 digit up; the first that reads back as `value` wins."""
    for precision in range(1, 18):
        candidate = f"{value:.{precision - 1}e}"
        back = float(candidate)
        if (float32(back) if bits == 32 else back) == value:
            mantissa, _, exponent = candidate.partition("e")
            return mantissa.replace(".", "").rstrip("0") or "0", int(exponent) + 1
    raise AssertionError(value)


def reference_f(value: float, bits: int) -> str:
    if value == 0:
        return "-0" if str(value).startswith("-") else "0"
    digits, exponent = reference_digits(abs(value), bits)
    sign = "-" if value < 0 else ""
    if exponent <= 0:
        return f"{sign}0.{'0' * -exponent}{digits}"
    if exponent >= len(digits):
        return sign + digits + "0" * (exponent - len(digits))
    return f"{sign}{digits[:exponent]}.{digits[exponent:]}"


def _samples(bits: int, count: int) -> list[float]:
    rng = random.Random(bits)
    out = []
    while len(out) < count:
        if bits == 32:
            # every exponent, subnormals included (a quarter of the draws)
            raw = rng.getrandbits(32) if len(out) % 4 else rng.getrandbits(23)
            value = struct.unpack("f", struct.pack("I", raw))[0]
        else:
            value = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        if value == value and abs(value) != float("inf"):
            out.append(value)
    decimals = [rng.randrange(10**6) / 10 ** rng.randrange(8) for _ in range(count // 4)]
    return out + [float32(v) if bits == 32 else v for v in decimals]


@pytest.mark.parametrize("bits", [32, 64])
def test_format_f_is_the_shortest_round_trip(bits: int) -> None:
    for value in _samples(bits, 20000):
        assert format_f(value, bits) == reference_f(value, bits), value


@pytest.mark.parametrize(
    ("value", "bits", "text", "number"),
    [
        (1.0, 64, "1", "1"),
        (100.0, 64, "100", "100"),
        (1e21, 64, "1000000000000000000000", "1e+21"),
        (1e-7, 64, "0.0000001", "1e-7"),
        (0.000001, 64, "0.000001", "0.000001"),
        (-0.0, 64, "-0", "-0"),
        (float32(0.1), 32, "0.1", "0.1"),
        (float32(16777216.0), 32, "16777216", "16777216"),
        (
            float32(3.4028234663852886e38),
            32,
            "340282350000000000000000000000000000000",
            "3.4028235e+38",
        ),
        (float("nan"), 64, "0", "0"),
    ],
)
def test_known_layouts(value: float, bits: int, text: str, number: str) -> None:
    assert format_f(value, bits) == text
    assert json_number(value, bits) == number
    if text not in ("0", "-0"):
        assert Decimal(text) == Decimal(reference_f(value, bits))


@pytest.mark.parametrize("bits", [32, 64])
def test_column_writers_agree_with_the_per_value_layouts(bits: int) -> None:
    """The encoders write float columns with orjson (float32 through numpy) and fall back to
    `golang.strconv` per value; both layouts must come out as the reference's."""
    specials = [0.0, -0.0, 1.0, 100.0, 1e21, 1e20, 1e16, 1e-5, 1e-6, 9.9e-7, 1e-7, 5e-324]
    specials += [float("nan"), float("inf"), float("-inf"), 123456789.0, 0.1, 2.5]
    values = _samples(bits, 20000) + [float32(v) if bits == 32 else v for v in specials]
    quoted = columnar.floats(bits, quoted=True)(values)
    number = columnar.floats(bits, quoted=False)(values)
    for i, value in enumerate(values):
        assert columnar.text(quoted, i) == b'"%s"' % format_f(value, bits).encode(), value
        assert columnar.text(number, i) == json_number(value, bits).encode(), value
        if value == value and abs(value) != float("inf"):
            assert format_f(value, bits) == reference_f(value, bits), value
