"""eval_int: literals, arithmetic, casts, nested #defines, and what it refuses."""

from __future__ import annotations

import pytest

from dpmlens.model.consteval import eval_int, parse_int_literal

DEFINES = {
    "FOO_DELAY": "(5 * 10)",
    "BAR": "FOO_DELAY + 1",
    "HEX": "0x10UL",
    "LOOP_A": "LOOP_B",
    "LOOP_B": "LOOP_A",
    "USB_RESUME_TIMEOUT": "40 /* ms */",
    "SHIFTED": "(1U << 4)",
}


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("10 + 40", 50),
        ("FOO_DELAY", 50),
        ("BAR * 2", 102),
        ("(u32)FOO_DELAY", 50),
        ("(unsigned long)(20)", 20),
        ("(FOO_DELAY) - 1", 49),
        ("HEX << 2", 64),
        ("0x1F", 31),
        ("017", 15),
        ("0b101", 5),
        ("100UL", 100),
        ("10ull", 10),
        ("-3 / 2", -1),
        ("7 % 3", 1),
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("2 * 3 << 1", 12),
        ("0xff & 0x0f | 0x100", 0x10F),
        ("~0 & 0xf", 15),
        ("USB_RESUME_TIMEOUT", 40),
        ("SHIFTED", 16),
        ("BIT(3)", 8),
        ("(int)-1", -1),
        ("'A'", 65),
    ],
)
def test_values(expr: str, value: int) -> None:
    assert eval_int(expr, DEFINES) == value


@pytest.mark.parametrize(
    "expr",
    ["foo(1)", "x + 1", "LOOP_A", "1 / 0", "sizeof(int)", "1 ? 2 : 3", "", "1 +", "(1"],
)
def test_not_constant(expr: str) -> None:
    assert eval_int(expr, DEFINES) is None


def test_without_defines() -> None:
    assert eval_int("10 + 40") == 50
    assert eval_int("FOO_DELAY") is None


def test_literal_parser() -> None:
    assert parse_int_literal("0x10UL") == 16
    assert parse_int_literal("0") == 0
    assert parse_int_literal("12abc") is None
