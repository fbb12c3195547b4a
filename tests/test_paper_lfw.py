"""A small version of benchmarks/paper_lfw.py: the paper's protocol on LFW with the dlib
matcher (the library's run_protocol + evaluate), and the descriptor cache file that lets
the benchmark's repetitions and runs share descriptors. Skipped only without the extra."""

import importlib.util

import numpy as np
import pytest

pytest.importorskip("dlib", reason="the dlib matcher needs the extra: "
                    "pip install 'ssgallery[dlib]'")
if importlib.util.find_spec("face_recognition_models") is None:
    pytest.skip("the dlib matcher needs the extra: pip install 'ssgallery[dlib]' "
                "(face-recognition-models missing)", allow_module_level=True)

from ssgallery.biometrics.evaluation import evaluate
from ssgallery.biometrics.protocol import ProtocolOptions, run_protocol
from ssgallery.images.ingest import load_faces
from ssgallery.matchers import deep

PEOPLE = 20


@pytest.fixture(scope="module")
def lfw20(lfw_faces):
    """The first 20 LFW people: images (n, 100, 75), labels."""
    names = sorted(p.name for p in lfw_faces.iterdir() if p.is_dir())[:PEOPLE]
    faces = load_faces(lfw_faces, size=None, clients=names)
    return faces.images, np.asarray(faces.labels)


@pytest.mark.slow
def test_dlib_protocol_ssvm_m2_close_to_svm_with_far_fewer_matches(lfw20):
    images, labels = lfw20
    tables = run_protocol(images, labels, ProtocolOptions(methods=["svm", "ssvm"], m=2,
                                                          repetitions=1, seed=0),
                          matcher_factory=deep.DlibMatcher)
    by = {s["label"]: s for s in evaluate(tables)}
    svm, ssvm = by["svm"], by["ssvm m=2"]
    assert svm["clients"] == ssvm["clients"] == PEOPLE // 2
    # probes the matcher does not acquire (is_face False) are rejected genuine claims
    assert svm["fta_genuine"] <= 0.02  # 1 of 88: no face detected (dlib_fta.py)
    assert svm["eer_client_mean"] <= 0.045
    assert ssvm["eer_client_mean"] <= svm["eer_client_mean"] + 0.005
    assert ssvm["matches_mean"] == 2
    assert svm["matches_mean"] / ssvm["matches_mean"] >= 8


@pytest.mark.slow
def test_descriptor_cache_file_is_read_back_and_refused_for_other_weights(lfw20, tmp_path):
    images = lfw20[0][:3]
    D, q = deep.DlibMatcher().describe(images)
    path = tmp_path / "cache.npz"
    assert deep.save_cache(path) >= 3
    with np.load(path) as f:
        fields = dict(f)
    fields["descriptor"] = fields["descriptor"] + 1.0  # marks what comes from the file
    np.savez(tmp_path / "marked.npz", **fields)
    fields["model_sha256"] = np.array('{"landmarks": "0", "recognition": "0"}')
    np.savez(tmp_path / "other.npz", **fields)
    saved = dict(deep.DESCRIPTOR_CACHE)
    try:
        deep.DESCRIPTOR_CACHE.clear()
        assert deep.load_cache(tmp_path / "other.npz") == 0
        assert not deep.DESCRIPTOR_CACHE
        assert deep.load_cache(tmp_path / "marked.npz") == len(saved)
        D2, q2 = deep.DlibMatcher().describe(images)
        np.testing.assert_allclose(D2, D + 1.0)
        np.testing.assert_array_equal(q2, q)
    finally:
        deep.DESCRIPTOR_CACHE.clear()
        deep.DESCRIPTOR_CACHE.update(saved)
