"""`.dpmlens.toml`: discovery upward from the checked paths, settings, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpmlens.config.file import find_config, find_config_for_paths, load_config, read_config
from dpmlens.core.errors import ConfigError
from dpmlens.core.findings import Severity

GOOD = """\
helper_depth = 5

[rules]
msleep-under-20ms = false
async-suspend-not-enabled = "off"
delay-beyond-spec = "info"
wake-setup-in-noirq = { enabled = true, severity = "error" }

[spec]
TRSTRCY = 12
"""


def test_settings_are_read(tmp_path: Path) -> None:
    (tmp_path / ".dpmlens.toml").write_text(GOOD)
    config = load_config(tmp_path)
    assert config.helper_depth == 5
    assert not config.is_enabled("msleep-under-20ms")
    assert not config.is_enabled("async-suspend-not-enabled")
    assert config.is_enabled("delay-beyond-spec")
    assert config.severity_for("delay-beyond-spec", Severity.WARNING) == Severity.INFO
    assert config.severity_for("wake-setup-in-noirq", Severity.WARNING) == Severity.ERROR
    assert config.severity_for("other", Severity.WARNING) == Severity.WARNING
    assert config.spec_overrides == {"TRSTRCY": 12.0}


def test_found_upward_from_paths(tmp_path: Path) -> None:
    (tmp_path / ".dpmlens.toml").write_text("helper_depth = 1\n")
    deep = tmp_path / "drivers" / "usb" / "core"
    deep.mkdir(parents=True)
    (deep / "hub.c").write_text("")
    assert find_config(deep / "hub.c") == tmp_path / ".dpmlens.toml"
    paths = [str(deep / "hub.c"), str(tmp_path / "drivers" / "usb")]
    assert find_config_for_paths(paths) == tmp_path / ".dpmlens.toml"
    # a nearer file wins
    (deep / ".dpmlens.toml").write_text("helper_depth = 2\n")
    assert load_config(deep).helper_depth == 2


def test_no_file_means_defaults(tmp_path: Path) -> None:
    if find_config(tmp_path) is not None:
        pytest.skip("a .dpmlens.toml exists above the temporary directory")
    assert load_config(tmp_path).helper_depth == 3


def _error(tmp_path: Path, text: str, known: list[str] | None = None) -> str:
    path = tmp_path / ".dpmlens.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        read_config(path, known_rules=known)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    return message


def test_broken_toml_names_file_and_line(tmp_path: Path) -> None:
    message = _error(tmp_path, "helper_depth = 3\n[rules\nfoo = 1\n")
    assert message.startswith(f"{tmp_path / '.dpmlens.toml'}:2:")
    assert "invalid TOML" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("colour = 1\n", ":1: unknown key 'colour'"),
        ("helper_depth = -1\n", ":1: helper_depth must be an integer"),
        ('helper_depth = "3"\n', ":1: helper_depth must be an integer"),
        ('[rules]\nfoo = "loud"\n', ":2: rule 'foo': unknown severity 'loud'"),
        ("[rules]\nfoo = { enable = true }\n", ":2: rule 'foo': unknown setting 'enable'"),
        ('[spec]\nTRSTRCY = "ten"\n', ":2: spec 'TRSTRCY' must be a number"),
        ("rules = 3\n", ":1: [rules] must be a table"),
    ],
)
def test_bad_values_name_the_line(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in _error(tmp_path, text)


def test_unknown_rule_rejected_when_rules_known(tmp_path: Path) -> None:
    message = _error(tmp_path, "[rules]\nno-such-rule = false\n", known=["msleep-under-20ms"])
    assert message.endswith(":2: unknown rule 'no-such-rule' (see `dpmlens rules list`)")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / ".dpmlens.toml"
    path.write_bytes(b"helper_depth = 3 # \xff\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        read_config(path)


def test_unknown_spec_quantity_rejected_when_known(tmp_path: Path) -> None:
    path = tmp_path / ".dpmlens.toml"
    path.write_text("[spec]\nTRSTRCX = 10\n")
    assert read_config(path).spec_overrides == {"TRSTRCX": 10.0}  # no table given: kept
    with pytest.raises(ConfigError) as info:
        read_config(path, known_spec=["TRSTRCY", "TDRSMDN"])
    assert str(info.value) == (
        f"{path}:2: unknown spec quantity 'TRSTRCX' (known: TDRSMDN, TRSTRCY)"
    )
