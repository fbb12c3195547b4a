"""Every attribute of a store or a gallery is read bounded (`ssgallery.formats.attr_reads`):
no larger than an attribute ssgallery writes can be in that file (16 MiB, and 16 KiB
more per client of a gallery, per image of a store), refused in one line naming the
file and the attribute, exit 2, before its bytes are read.

trust19 (session 18): 1,000,000 consistent people edited into a gallery's
``calibration.far_by_person`` (a 44 MB attribute) and the gallery re-hashed: ``info``
read it, exit 0, in 8 s and 341 MB; ``verify`` read it too (the root digest covers every
attribute)."""

import hashlib
import json
import subprocess
import sys

import h5py
import numpy as np
import pytest
from helpers import copied, invoked, refused, rehash_gallery, reseal

from ssgallery.datasets import sample_faces_path
from ssgallery.formats import integrity
from ssgallery.formats.attr_reads import ATTR_FLOOR, ATTR_PER_ENTRY, MAX_ATTRIBUTES

PROBE = str(sample_faces_path() / "c01" / "09.png")


@pytest.fixture(scope="module")
def gallery(sample_gallery_3, tmp_path_factory):
    """A copy of the 3-client sample gallery (c01-c03, m = 2)."""
    assert sample_gallery_3["compressed"]["exit_code"] == 0
    return copied(sample_gallery_3["gallery"], tmp_path_factory.mktemp("bounds"), "g.h5")


def _people(n):
    """``n`` consistent people for far_by_person: every sum what they give (`people_problem`
    holds), the record's pooled counts theirs (trust19's edit)."""
    from ssgallery.biometrics.calibration import clopper_pearson
    from ssgallery.biometrics.intervals import cluster_sums

    ids = sorted(hashlib.sha256(str(i).encode()).hexdigest()[:32] for i in range(n))
    people = [[p, int(i < 3), 1] for i, p in enumerate(ids)]
    return people, cluster_sums(np.array([k for _, k, _ in people], dtype=float),
                                np.ones(n)), clopper_pearson(3, n)


def _edited(gallery, tmp_path, n):
    """The gallery with ``n`` people in its far_by_person (about 47 bytes each), re-hashed."""
    path = copied(gallery, tmp_path, "big.h5")
    with h5py.File(path, "a") as f:
        cal = json.loads(f.attrs["calibration"])
        people, sums, ci = _people(n)
        cal["far_by_person"].update(people=people, sums=sums)
        cal.update(accepted=3, impostors=n, expected_far=3 / n, expected_far_ci=list(ci),
                   impostor_people=n)
        f.attrs["calibration"] = json.dumps(cal)
    rehash_gallery(path)
    return path


def _peak_kib(args):
    """The peak RSS (KiB) of ``python -m ssgallery ARGS`` in its own process, and its
    exit status and stderr."""
    code = ("import resource, runpy, sys; sys.argv = ['ssgallery'] + sys.argv[1:]\n"
            "try:\n    runpy.run_module('ssgallery', run_name='__main__')\n"
            "finally:\n    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
            "file=sys.stderr)")
    res = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                         check=False,
                         text=True)
    *lines, peak = res.stderr.splitlines()
    return int(peak), res.returncode, lines


def test_a_header_record_larger_than_the_gallery_can_hold_is_refused_unread(gallery,
                                                                           tmp_path):
    """400,000 people (19 MB) in far_by_person of a gallery of 3 clients, whose limit is
    16 MiB + 3 x 16 KiB: ``info`` and ``verify`` refuse it in one line naming the file
    and the attribute, exit 2 (on main: info read it, exit 0). HDF5 reads a string's heap
    in one read of its whole size, which is refused: the process never holds it."""
    big = _edited(gallery, tmp_path, 400_000)
    most = ATTR_FLOOR + 3 * ATTR_PER_ENTRY
    why = f"{big}: refused: attribute 'calibration' of / needs a read of "
    tail = f"bytes, more than the {most} a gallery of 3 clients can hold (an edited or " \
        "foreign file)"
    for args in (["info", "--gallery", big],
                 ["verify", "--gallery", big, "--claim", "c01", PROBE]):
        peak, status, lines = _peak_kib(args)
        assert status == 2 and len(lines) == 1, (status, lines)
        assert lines[0].startswith(f"ssgallery: error: {why}") and lines[0].endswith(tail), \
            lines[0]
        size = int(lines[0][len(f"ssgallery: error: {why}"):].split()[0])
        assert size > most
        small, _, _ = _peak_kib(["info", "--gallery", gallery])
        assert peak < small + 20_000, (peak, small)  # KiB: not the 19 MB string, nor its copies


def test_a_record_ssgallery_writes_reads_at_its_size(gallery, tmp_path):
    """Below the limit the same record reads: 100,000 people (4.7 MB) in a gallery of 3
    clients, info exit 0, and it says how many."""
    path = _edited(gallery, tmp_path, 100_000)
    res = invoked(["info", "--gallery", str(path)])
    assert res["exit_code"] == 0, res["output"]
    assert "100000 impostor people" in res["stdout"], res["stdout"]


def _store_with(tmp_path, sample_store, edit):
    """A copy of the sample store with ``edit(f)`` made to it and its digest made
    consistent again (a limit far above the file: what an editor without a key does)."""
    path = copied(sample_store["store"], tmp_path, "e.h5")
    with h5py.File(path, "a") as f:
        edit(f)
        f.attrs["digest"] = integrity.node_digest(f, exclude=integrity.ROOT_EXCLUDED,
                                                  limit=(1 << 40, "any file"))
    reseal(path)
    return path


def test_a_store_attribute_beyond_its_limit_is_refused(sample_store, tmp_path):
    """A store of 20 clients holds at most 16 MiB + 20 x 16 KiB in one attribute: an
    extra root attribute of 20 MB (on main: hashed and ignored, info exit 0) is refused
    by info and by compress, before anything is trained."""
    path = _store_with(tmp_path, sample_store,
                       lambda f: f.attrs.__setitem__("note", "x" * 20_000_000))
    with h5py.File(path, "r") as f:
        n = f["clients"].shape[0]
    what = "refused: attribute 'note' of / needs a read of "
    refused(["info", "--store", path], what)
    res = refused(["compress", "--store", path, "-o", tmp_path / "g.h5", "--m", "1"], what)
    assert f"more than the {ATTR_FLOOR + n * ATTR_PER_ENTRY} a store of {n} clients can " \
        "hold" in res["stderr"], res["stderr"]
    assert not (tmp_path / "g.h5").exists()


def test_a_fixed_size_attribute_is_refused_by_its_stored_size(gallery, tmp_path):
    """A number array's size is known before it is read: 3,000,000 int64 (24 MB) in a
    client's group (written with HDF5's newer object headers, which hold attributes
    above 64 KB) is refused by its stored size (on main: read and hashed, verify's
    verdict, exit 0 or 1)."""
    path = copied(gallery, tmp_path, "fixed.h5")
    with h5py.File(path, "a", libver="latest") as f:
        clients = f["clients"]
        new = clients.create_group("c01-new")  # a group of the newer header version
        for name, value in clients["c01"].attrs.items():
            new.attrs[name] = value
        for name in clients["c01"]:
            clients.copy(clients["c01"][name], new, name)
        del clients["c01"]
        clients.move("c01-new", "c01")
        new.attrs["note"] = np.zeros(3_000_000, dtype=np.int64)
    rehash_gallery(path, limit=False)
    most = ATTR_FLOOR + 3 * ATTR_PER_ENTRY
    refused(["verify", "--gallery", path, "--claim", "c01", PROBE],
            f"refused: attribute 'note' of /clients/c01 holds 24000000 bytes, more "
            f"than the {most} a gallery of 3 clients can hold")


def test_attributes_of_a_kind_or_number_ssgallery_never_writes_are_refused(gallery,
                                                                          tmp_path):
    """An attribute of a compound type (one of variable-length strings would be read
    whole) and a group of more than MAX_ATTRIBUTES attributes are refused before any is
    read (on main: hashed and ignored, verify's verdict)."""
    path = copied(gallery, tmp_path, "kind.h5")
    with h5py.File(path, "a") as f:
        f["clients/c02"].attrs["extra"] = np.array(
            [(1, 2.0)], dtype=[("a", "i8"), ("b", "f8")])
    rehash_gallery(path, limit=False)
    refused(["verify", "--gallery", path, "--claim", "c02", PROBE],
            "refused: attribute 'extra' of /clients/c02 is of an HDF5 type ssgallery never "
            "writes (an edited or foreign file)")
    path = copied(gallery, tmp_path, "many.h5")
    with h5py.File(path, "a") as f:
        for i in range(MAX_ATTRIBUTES + 1):
            f["clients/c03"].attrs[f"a{i}"] = i
        count = len(f["clients/c03"].attrs)
    rehash_gallery(path, limit=False)
    refused(["verify", "--gallery", path, "--claim", "c03", PROBE],
            f"refused: /clients/c03 has {count} attributes, more than the "
            f"{MAX_ATTRIBUTES} any file of ssgallery's can have")

