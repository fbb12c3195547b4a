"""The learner's default settings, in a module that imports nothing (the CLI shows them
in ``--help`` without loading scikit-learn). Chosen on every data set measured by
``benchmarks/defaults.py`` (docs/benchmarks/defaults.md): AT&T and the synthetic sample
data with eigenfaces, LFW with eigenfaces and with dlib descriptors, SSVM against its
own SVM teacher at m = 2 and 3."""

DEFAULT_M = 2
"""Prototypes per client (``CompressOptions.m``, ``ProtocolOptions.m`` left unset) with a
matcher whose prototypes move (eigenface, dlib: the analytic gradient of Eq. 7
(eq:similarity-grad))."""

BLACK_BOX_M = 5
"""Prototypes per client with a black-box matcher, whose prototypes are real training
images: with 2 of them a fifth of the EBGM client models on AT&T were more than 5 points
worse than their SVM (docs/benchmarks/ebgm_office.md)."""

MIN_SWAP_IMPOSTOR_PEOPLE = 2
"""Swaps of real training images (``swap_rounds``, `ssgallery.learn.initial.swap_start`)
need a client's impostors to be of this many people or more: with one person, the
swaps lower the training objective by telling the client from that person, not from
strangers (galleries of two people, EBGM and dlib as black boxes:
docs/benchmarks/blackbox_small.md)."""


def swap_rounds_for(swap_rounds, y, groups):
    """``swap_rounds``, or 0 when the rows of negative ``y`` (a client's impostors) are of
    fewer than `MIN_SWAP_IMPOSTOR_PEOPLE` people by ``groups`` (the subject of each row);
    ``groups`` None (people not known): ``swap_rounds`` unchanged."""
    if groups is None:
        return swap_rounds
    people = {g for g, target in zip(groups, y, strict=True) if target < 0}
    return 0 if len(people) < MIN_SWAP_IMPOSTOR_PEOPLE else swap_rounds


DEFAULT_LAM = 2e-3
"""Ridge penalty on beta (Eq. 2 (eq:objective)), in the units of ``DEFAULT_LAM_SCALE``.

Relative to `ssgallery.learn.initial.similarity_scale` (the mean diagonal of
the weighted, centred similarity Gram): that scale is about 0.05 for eigenface RBF on
AT&T, so 2e-3 is there the absolute 1e-4 chosen on AT&T before, and the same relative
strength on any other similarity."""

DEFAULT_LAM_SCALE = "gram"
"""``"gram"``: ``lam`` relative to the similarity scale; ``"none"``: absolute."""

DEFAULT_N_INIT = 1
"""Starts of the learner; with more, the fit of lowest training Eq. 2 (eq:objective) is
kept (the first start is the ``init`` rule, the others random samples of each class in
the same proportions). One: three starts moved the mean client EER by a fraction of a
point, in either direction, on the data sets measured (docs/benchmarks/defaults.md, rows
rel-2e-3 and rel-2e-3x3), cost three times the distillation, and make the fit depend on
how the sample weights are expressed (random draws), which scikit-learn's sample-weight
check refuses. Raise it for a matcher where a start gets stuck."""

DEFAULT_BETWEEN = 0.5
"""Weight of the teacher's targets between the classes (``CompressOptions.between``,
``ProtocolOptions.between``; `ssgallery.learn.targets.with_between`), relative to the
training points'.
The estimators keep 0, the paper's fit; the application's default is this one, because
without it the 1:N search of SSVM m = 2 misses many more mated searches than its SVM
at FPIR 1 % on AT&T (docs/method.md, "Targets between the classes")."""

MAX_BETWEEN_POINTS = 100
"""At most this many points between the classes per client (a seeded sample of the
impostors when a client has more): the distillation's cost stays bounded when a client
trains on hundreds of impostor images, as on LFW or a large gallery."""
