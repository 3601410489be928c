"""model/rescan.py: a file scanned again is scanned piece by piece, with the same answers as a
scan of the whole text, and a piece an edit changed is scanned again."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_trees import K61, K612

from dpmlens.model import ops_structs, rescan
from dpmlens.model.build import build_model
from dpmlens.model.types import FileModel

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "test-fixtures" / "rules").glob("*.c"))
REAL = ["drivers/usb/core/hub.c", "drivers/scsi/lpfc/lpfc_init.c",
        "drivers/pci/controller/dwc/pcie-qcom.c", "drivers/mmc/host/sdhci-pci-core.c"]


def _facts(model: FileModel) -> tuple[object, ...]:
    return (ops_structs.match_data_vars(model), ops_structs._declared_types(model, "x"),
            model.__dict__["_declared_types"], ops_structs._scan(model))


def _twice(path: str, source: bytes) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """The facts of a first model of `source` (scanned whole) and of a second (by pieces)."""
    rescan.forget()
    whole = _facts(build_model(path, source))
    assert rescan.pieces(build_model(path, source)) is not None  # (seen: cut from now on)
    return whole, _facts(build_model(path, source))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_by_pieces_is_the_whole_scan_on_fixtures(path: Path) -> None:
    whole, pieces = _twice(str(path), path.read_bytes())
    assert pieces == whole


@pytest.mark.parametrize("rel", REAL)
@pytest.mark.parametrize("tree", [K612, K61], ids=["6.12", "6.1"])
def test_by_pieces_is_the_whole_scan_on_real_drivers(tree: Path, rel: str) -> None:
    if not (tree / rel).is_file():
        pytest.skip(f"needs {tree / rel}")
    source = (tree / rel).read_bytes()
    rescan.forget()
    model = build_model(rel, source)
    assert rescan.pieces(model) is None  # (the first time: scanned whole)
    cut = rescan.pieces(model)
    assert cut is not None and len(cut) > 3 and b"".join(cut) == source
    whole, pieces = _twice(rel, source)
    assert pieces == whole


_SOURCE = b"""struct soc { int (*power_up)(void *p); };
static int a(void *p)
{
\treturn 0;
}
""" + b"".join(
    b"static int f%d(void *p)\n{\n\treturn %d;\n}\n" % (i, i) for i in range(40)
) + b"""static struct soc soc_a = {
\t.power_up = a,
};
static const struct of_device_id ids[] = {
\t{ .compatible = "x,a", .data = &soc_a },
\t{ }
};
"""


def test_a_piece_an_edit_changed_is_scanned_again() -> None:
    # f20's body gets a match-data address, a declaration and an initializer at a line's
    # start: each found in the second text (a memo kept by position would miss them)
    rescan.forget()
    first = build_model("m.c", _SOURCE)
    assert ops_structs.match_data_vars(first) == {"soc_a"}
    assert ops_structs._declared_types(first, "hold") == frozenset()
    assert [e.var for e in ops_structs._scan(first)] == ["soc_a"]
    at = _SOURCE.index(b"\treturn 20;")
    typed = (b"\tstruct other *hold;\n\tp = (kernel_ulong_t)&soc_b;\n"
             b"static const struct soc soc_c = {\n\t.power_up = f3,\n};\n")
    edited = _SOURCE[:at] + typed + _SOURCE[at:]
    second = build_model("m.c", edited)
    assert rescan.pieces(second) is not None
    assert ops_structs.match_data_vars(second) == {"soc_a", "soc_b"}
    assert ops_structs._declared_types(second, "hold") == {"other"}
    assert [e.var for e in ops_structs._scan(second)] == ["soc_c", "soc_a"]
    rescan.forget()
    assert _facts(build_model("m.c", edited)) == _facts(second)  # (a whole scan)


def test_the_text_is_cut_only_after_a_brace_a_line_break_follows() -> None:
    rescan.forget()
    source = _SOURCE.replace(b"static int f15(", b"} /* */ static int f15(")
    assert rescan.pieces(build_model("c.c", source)) is None
    cut = rescan.pieces(build_model("c.c", source))
    assert cut is not None and len(cut) > 2
    assert all(piece.endswith(b"}") for piece in cut[:-1])
    assert all(piece.startswith(b"\n") for piece in cut[1:])
