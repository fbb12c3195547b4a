"""enroll fits its matcher with one BLAS thread, as training does (ssgallery.learn.threads):
a multi-threaded SVD of a few hundred images spins its threads when the other core is
busy."""

import scipy.linalg  # noqa: F401  (its BLAS loaded before the limits below, as numpy's)
from threadpoolctl import threadpool_info, threadpool_limits

from ssgallery.app.enroll import enroll
from ssgallery.matchers.eigenface import EigenfaceMatcher


def _blas_threads():
    """Threads of each BLAS library loaded (numpy and scipy may each bring their own)."""
    return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()
            if lib["user_api"] == "blas"}


def test_enroll_fits_the_matcher_with_one_blas_thread(faces_factory, tmp_path, monkeypatch):
    seen = []
    real_fit = EigenfaceMatcher.fit

    def fit_and_record(self, images, groups=None):  # the real fit; records its threads
        seen.append(_blas_threads())
        return real_fit(self, images, groups=groups)

    monkeypatch.setattr(EigenfaceMatcher, "fit", fit_and_record)
    faces = faces_factory(n_clients=3, n_images=4)
    with threadpool_limits(limits=2, user_api="blas"):  # as on a 2-core machine
        before = _blas_threads()
        enroll(faces, tmp_path / "e.h5")
        after = _blas_threads()
    assert before and set(before.values()) == {2}, before
    assert seen and all(set(t.values()) == {1} for t in seen), seen
    assert after == before  # restored when enroll returns
