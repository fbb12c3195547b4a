"""``roc`` ranks the searches of its protocol as a deployed gallery ranks them: a client
without an impostor-score spread of its own (its held-out impostors all score alike)
borrows one by the rule ``compress`` applies
(`ssgallery.biometrics.openset.pooled_spreads`), instead of dividing its scores by the
near-zero spread of its constant scores.
"""

import numpy as np

from ssgallery.biometrics.calibration import constant_spread
from ssgallery.biometrics.openset import pooled_scale
from ssgallery.biometrics.protocol import ProtocolOptions, run_protocol
from ssgallery.images.ingest import load_faces
from ssgallery.matchers.eigenface import EigenfaceMatcher


def test_a_client_without_a_spread_borrows_the_others_in_roc_searches(hard_sample_faces):
    """sample_data as it was (`hard_sample_faces`), eigenface with gamma 14 (``enroll --gamma 14``: the RBF similarity of
    two different faces underflows to 0 for most pairs), roc's protocol with 6 enrolled
    clients and the full SVM: the held-out impostor scores of 5 of the 6 clients are
    equal to 1e-9 of their mean (std about 2.5e-10: calibration's constant_spread),
    c13's are not (1.6e-9). Before, roc Z-normalised the 5 by their own 2.5e-10
    (``roc --store S --enrolled 6 --methods svm --repetitions 1``: rank-1 46.67 %),
    where a gallery gives them the pooled spread of the clients that measured one
    (rank-1 43.33 %)."""
    faces = load_faces(hard_sample_faces, size=None)
    options = ProtocolOptions(identification=True, repetitions=1, n_enrolled=6, n_train=5,
                              methods=("svm",), seed=0)
    tables = run_protocol(faces.images, faces.labels, options,
                          matcher_factory=lambda: EigenfaceMatcher(gamma=14.0))
    clients = tables[0].search.clients
    norms = [(c, v["norm_mean"], v["norm_std"]) for c, v in sorted(clients.items())]
    assert len(norms) == 6
    assert not [(c, std) for c, mean, std in norms if constant_spread(std, mean)], norms
    stds, counts = np.unique([std for _, _, std in norms], return_counts=True)
    # the clients without a spread share the one they borrowed: c13's, the only measured
    assert counts.max() >= 5 and stds[np.argmax(counts)] == pooled_scale(
        [std for c, _, std in norms if c == "c13"]), norms
