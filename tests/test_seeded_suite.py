"""tools/seeded_suite.py compare: what two runs of the same code may differ in is masked
(a creation time, the run's folder name, seconds, HDF5's created/digest), and nothing
else is: since 9cd665d a calibration record's salt is a digest of the store, so another
salt or other salted ids are a difference."""

import hashlib
import importlib.util
import json
from pathlib import Path

import h5py
import numpy as np

TOOL = Path(__file__).resolve().parents[1] / "tools" / "seeded_suite.py"


def _tool():
    spec = importlib.util.spec_from_file_location("seeded_suite", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(folder, created, seconds, value, scores=(1.0, 2.0), salt="a", counts=(0, 1)):
    """A folder as a run writes it: a printed line, a JSON summary and an HDF5 file whose
    calibration record's people ids are salted with ``salt`` (``counts``: theirs)."""
    folder.mkdir()
    (folder / "001_info.out").write_text(f"store {folder}/e.h5: created {created}\n")
    (folder / "002_roc.out").write_text(json.dumps(
        {"methods": [{"eer": value, "fit_seconds_mean": seconds}]}))
    people = sorted([hashlib.md5(f"{salt}{p}".encode()).hexdigest(), k, 10]
                    for p, k in enumerate(counts))
    with h5py.File(folder / "g.h5", "w") as f:
        f.attrs["created"], f.attrs["digest"] = created, f"{seconds}"
        f.attrs["store"] = str(folder / "e.h5")
        f.attrs["calibration"] = json.dumps({"far_by_person": {"salt": salt * 32,
                                                               "people": people}})
        f["scores"] = np.array(scores)
    return folder


def test_compare_masks_what_runs_of_one_commit_differ_in_and_nothing_else(tmp_path, capsys):
    tool = _tool()
    a = _run(tmp_path / "a", "2026-11-28T11:15:37+00:00", 0.21, 0.5)
    b = _run(tmp_path / "b", "2026-11-28T11:18:03+00:00", 0.34, 0.5)
    assert tool.main(["compare", str(a), str(b)]) == 0
    assert capsys.readouterr().out == (
        "3 and 3 files: 0 byte-identical, 3 equal once masked (a creation time or the "
        "folder's name 1, JSON but seconds 1, HDF5 content 1), 0 differ\n")
    for other in ({"salt": "b"}, {"counts": (1, 0)}, {"counts": (1, 1)}):  # the salt and
        d = _run(tmp_path / f"d{other}", "2026-11-28T11:18:03+00:00", 0.21, 0.5, **other)
        assert tool.main(["compare", str(a), str(d)]) == 1, other  # the ids are compared
        assert capsys.readouterr().out.endswith("1 differ: g.h5\n"), other
    c = _run(tmp_path / "c", "2026-11-28T11:18:03+00:00", 0.34, 0.25, scores=(1.0, 2.5))
    (c / "003_new.out").write_text("")
    assert tool.main(["compare", str(a), str(c)]) == 1
    assert capsys.readouterr().out.endswith(
        "3 differ: 003_new.out, 002_roc.out, g.h5\n")


def test_every_command_names_files_the_run_has():
    """The commands read only what sample_data/ or an earlier command holds."""
    tool = _tool()
    names = [name for name, _ in tool.COMMANDS]
    assert len(names) == len(set(names)) == 58
    assert all(Path(p).is_file() for p in tool.PROBES) and len(tool.PROBES) == 10
