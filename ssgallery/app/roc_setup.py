"""How ``roc`` sets its protocol for the data's matcher (`ssgallery.app.roc`), as
``compress`` trains it: the default m and its cap (`checked_m`), the methods a black box
can run (`without_rbf_methods`), its ``ssvm`` trained on swapped real images
(`trained_as_compress`), an ``--between`` no method uses (`warn_between_unused`), and
the options a mode does not read (`warn_unused_options`)."""

from dataclasses import replace

from ssgallery.app.options import CompressOptions, ReportOptions, RocInputs, resolve_training
from ssgallery.biometrics.protocol import method_specs
from ssgallery.errors import InputError, option


def checked_m(protocol, n_train, default_m, source):
    """``protocol`` with its m: ``default_m`` (the matcher's, `ssgallery.learn.defaults`:
    ``DEFAULT_M``, or ``BLACK_BOX_M`` for a black box) when unset, never more than the
    ``n_train`` images a split's models learn from, as ``compress`` caps it at the
    store's (`ssgallery.app.options.resolve_training`); an explicit m above them is
    refused."""
    if protocol.m is None:
        return replace(protocol, m=(min(default_m, n_train),))
    too_many = [m for m in protocol.m if m != "auto" and m > n_train]
    if too_many:  # a super-sparse model keeps fewer prototypes than it learns from
        raise InputError(f"{option('m')} = {too_many[0]} is more prototypes than a split's "
                         f"training images ({n_train}: {option('n_enrolled')} x "
                         f"{option('n_train')})", path=source)
    return protocol


def warn_between_unused(protocol, report):
    """An explicit ``--between`` that no listed method distils at is named, not dropped
    without a word (the default means "where it applies", as in
    `ssgallery.app.options.resolve_between`)."""
    from ssgallery.biometrics.protocol import between_applied
    from ssgallery.images.ingest import default_warn
    from ssgallery.learn.defaults import DEFAULT_BETWEEN

    if protocol.between in (0, DEFAULT_BETWEEN) or between_applied(protocol):
        return
    (report.warn or default_warn)(
        f"{option('between')} {protocol.between:g} is ignored: none of the methods "
        f"({', '.join(map(str, protocol.methods))}) distils between the classes (the "
        "super-sparse SVMs do)")


RBF_ONLY = ("svm-red",)  # pre-images by fixed-point iteration: an RBF similarity only


def without_rbf_methods(protocol, matcher_name):
    """``protocol`` for a black-box matcher's store: the default methods without
    ``svm-red``, which needs an RBF similarity, and what was left out (``{method:
    reason}``, empty when nothing was: the report records it, `_protocol`'s
    ``left_out``); an ``svm-red`` the user listed is refused before any training,
    naming the methods that run."""
    from ssgallery.biometrics.protocol_options import DEFAULT_METHODS

    names = [name for name, _ in method_specs(protocol.methods, (1,))]
    rbf = [n for n in names if n in RBF_ONLY]
    if not rbf:
        return protocol, {}
    if tuple(protocol.methods) != DEFAULT_METHODS:
        others = ",".join(n for n in names if n not in RBF_ONLY) or "svm,ssvm"
        raise InputError(f"{', '.join(rbf)} needs an RBF similarity (eigenface, dlib); the "
                         f"{matcher_name} matcher is a black box: leave it out "
                         f"({option('methods')} {others})")
    why = f"needs an RBF similarity (eigenface, dlib); the {matcher_name} matcher is a black box"
    return (replace(protocol, methods=tuple(m for m in protocol.methods if m not in RBF_ONLY)),
            dict.fromkeys(rbf, why))


def trained_as_compress(protocol):
    """``protocol`` whose ``ssvm`` methods train on a black box as ``compress`` does
    (`ssgallery.app.options.resolve_training`): swaps of real training images, no move.
    A method whose ``method_options`` set ``max_iter`` or ``swap_rounds`` keeps them;
    ``ssvm-paper`` stays the paper's Algorithm 1."""
    trained = resolve_training(CompressOptions(), black_box=True)
    auto = {"max_iter": trained.max_iter, "swap_rounds": trained.swap_rounds}
    options = dict(protocol.method_options)
    for name, _ in method_specs(protocol.methods, (1,)):
        own = options.get(name, {})
        if str(own.get("method", name)).lower() == "ssvm":
            options[name] = {**auto, **own}
    return replace(protocol, method_options=options)


# The options each mode of roc reads (besides its inputs and report folder), and why it
# reads no other: `warn_unused_options`. --identification and --norm-folds are left
# out (a flag pair: "--identification is ignored" would misname --no-identification).
_PROTOCOL = ("methods", "m", "n_enrolled", "n_train", "repetitions", "seed", "n_jobs",
             "between")
_TRAINS = "runs the protocol, which trains its own models and chooses no dev threshold"
_DEV_EVAL = (f"roc {option('dev_scores')}/{option('eval_scores')} reads the score files it "
             "is given (no protocol, no matcher)")
_SCORES = (f"roc {option('scores')} recomputes the figures of the score files (no protocol, "
           "no matcher, no dev threshold)")
_GALLERY = (f"roc {option('gallery')} evaluates the gallery's models as they are (no "
            "protocol, no dev threshold)")
_MODES = {
    "dev-eval": (("criterion", "criterion_far"), _DEV_EVAL),
    "scores": ((), _SCORES),
    "gallery": (("key_file", "matcher_cmd", "privacy_key_file"), _GALLERY),
    "protocol": (_PROTOCOL + ("matcher_cmd",), f"roc FACES_DIR {_TRAINS}"),
    "store": (_PROTOCOL + ("store_path", "matcher_cmd", "privacy_key_file"),
              f"roc on the store {_TRAINS}")}


def warn_unused_options(mode, inputs, protocol, report, default_protocol):
    """Name, in one warning (``report.warn``), the options given away from their default
    that roc's ``mode`` (`_MODES`: "dev-eval", "scores", "gallery", "protocol",
    "store") does not read, e.g. ``roc --scores FILES --m 5``: never dropped without a
    word. ``protocol`` is compared with ``default_protocol`` (roc's)."""
    default_inputs, default_report = RocInputs(), ReportOptions()
    given = [k for k in ("store_path", "key_file", "matcher_cmd", "privacy_key_file")
             if getattr(inputs, k) != getattr(default_inputs, k)]
    given += [k for k in _PROTOCOL if getattr(protocol, k) != getattr(default_protocol, k)]
    given += [k for k in ("criterion", "criterion_far")
              if getattr(report, k) != getattr(default_report, k)]
    reads, why = _MODES[mode]
    unused = [option(k) for k in given if k not in reads]
    if unused:
        report.warn(f"{', '.join(unused)} {'is' if len(unused) == 1 else 'are'} ignored: "
                    f"{why}")
