"""Export: .lp/.mps files that another solver (highspy, read directly) solves to lipopt's value."""

from __future__ import annotations

from pathlib import Path

import highspy
import numpy as np
import pytest

import lipopt
from lipopt.solvers.export import ExportError, write_model
from tests.solvers.cases import CASES, Case, exact_value

EXPORT_CASES = [pytest.param(case, id=case.id) for case in (CASES[1], CASES[2], CASES[6])]


def _solve_file(path: Path) -> tuple[float, highspy.Highs]:
    """Read ``path`` with highspy and solve it; the optimal objective in the file's own sense."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.setOptionValue("mip_abs_gap", 1e-9)
    h.setOptionValue("mip_feasibility_tolerance", 1e-9)
    # kWarning: HiGHS drops matrix entries below 1e-9 (it does the same in-process)
    assert h.readModel(str(path)) in (highspy.HighsStatus.kOk, highspy.HighsStatus.kWarning)
    assert h.run() == highspy.HighsStatus.kOk
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h.getInfo().objective_function_value, h


@pytest.mark.parametrize("suffix", [".mps", ".lp"])
@pytest.mark.parametrize("case", EXPORT_CASES)
def test_export_solved_by_highspy_gives_lipopt_value(case: Case, suffix: str, tmp_path: Path):
    net, c = case.network(), case.c()
    result = lipopt.lipschitz(net, case.domain, case.norm, c, split=False, regions=False)
    lip = lipopt.build_model(net, case.domain, case.norm, c)
    path = write_model(lip.model, tmp_path / f"lip{suffix}")
    assert path == tmp_path / f"lip{suffix}" and path.stat().st_size > 0
    objective, h = _solve_file(path)
    # the file keeps the sense: a maximisation (a reader that lost it would minimise -> 0 or less)
    assert h.getLp().sense_ == highspy.ObjSense.kMaximize
    assert objective == pytest.approx(result.value, rel=1e-6)
    assert objective == pytest.approx(exact_value(case), rel=1e-6)


@pytest.mark.parametrize("suffix", [".mps", ".lp"])
def test_export_names_map_back_to_layer_and_neuron(suffix: str, tmp_path: Path):
    case = CASES[6]  # 2 -> 8 -> 8 -> 8 -> 2: unstable neurons in every hidden layer
    lip = lipopt.build_model(case.network(), case.domain, case.norm, case.c())
    path = write_model(lip.model, tmp_path / f"lip{suffix}")
    _, h = _solve_file(path)
    names = set(h.getLp().col_names_)
    assert {"x(0)", "x(1)"} <= names
    for k, layer in enumerate(lip.activations, start=1):
        for i in layer:
            assert f"a{k}({i})" in names  # activation binary of neuron i, hidden layer k
        assert any(name.startswith(f"h{k}(") for name in names)
    integers = [
        name
        for name, kind in zip(h.getLp().col_names_, h.getLp().integrality_, strict=True)
        if kind == highspy.HighsVarType.kInteger
    ]
    assert integers and all(name.startswith(("a", "g_")) for name in integers)


def test_export_lp_relaxation_has_no_integers_and_bounds_the_value(tmp_path: Path):
    case = CASES[2]
    lip = lipopt.build_model(case.network(), case.domain, case.norm, case.c(), relax=True)
    objective, h = _solve_file(write_model(lip.model, tmp_path / "relaxed.mps"))
    assert all(kind != highspy.HighsVarType.kInteger for kind in h.getLp().integrality_)
    assert objective >= exact_value(case) * (1 - 1e-9)


def test_export_suffix_is_case_insensitive(tmp_path: Path):
    lip = lipopt.build_model(CASES[0].network(), CASES[0].domain, CASES[0].norm)
    path = write_model(lip.model, str(tmp_path / "LIP.MPS"))
    assert path.read_text().lstrip().startswith("*")  # MPS comment header, not an LP file


@pytest.mark.parametrize(
    "name, fragment",
    [
        ("lip.txt", "unknown file type '.txt'; use one of .lp, .mps"),
        ("lip", "unknown file type '(none)'"),
        ("missing/lip.mps", "does not exist"),
        ("afile/lip.lp", "is not a directory"),
        ("adir.lp", "it is a directory"),
    ],
)
def test_export_bad_path_is_one_clear_line(name: str, fragment: str, tmp_path: Path):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir.lp").mkdir()
    lip = lipopt.build_model(CASES[0].network(), CASES[0].domain, CASES[0].norm)
    with pytest.raises(ExportError) as info:
        write_model(lip.model, tmp_path / name)
    assert isinstance(info.value, ValueError)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_export_os_error_is_one_clear_line(tmp_path: Path, monkeypatch):
    """An error while writing (disk full, no permission) becomes one line, no traceback."""
    lip = lipopt.build_model(CASES[0].network(), CASES[0].domain, CASES[0].norm)

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(lip.model, "write", refuse)
    with pytest.raises(ExportError, match=r"cannot write .*lip\.lp': Permission denied$"):
        write_model(lip.model, tmp_path / "lip.lp")


def test_export_writes_exactly_what_lipschitz_solves(tmp_path: Path):
    """Same options, same model: the exported file has the model's variable count."""
    case = CASES[3]
    lip = lipopt.build_model(case.network(), case.domain, case.norm, case.c())
    _, h = _solve_file(write_model(lip.model, tmp_path / "lip.mps"))
    assert h.getLp().num_col_ == lip.stats["variables"]
    assert h.getLp().num_row_ == lip.stats["constraints"]
    x = np.array(h.getSolution().col_value)
    assert np.all(np.isfinite(x))
