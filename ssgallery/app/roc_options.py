"""The options of ``roc``, as objects validated once, where they come in: `RocInputs`
(what it evaluates) and `ReportOptions` (where its report goes and what it holds); the
protocol's own are `ssgallery.biometrics.protocol.ProtocolOptions`. Nothing of ``roc``
is digested. `ssgallery.app.options` re-exports them.
"""

from dataclasses import dataclass

from ssgallery.app.option_digest import option_field
from ssgallery.checks import CheckedOptions as _Options  # the objects' base
from ssgallery.checks import flag_bool


def _files(name, value):
    """A sequence of paths as a tuple; none (empty) as None."""
    return tuple(value) if value else None


@dataclass(frozen=True, kw_only=True)
class RocInputs(_Options):
    """What ``roc`` evaluates, one mode (`ssgallery.app.roc.roc` picks it).

    Attributes
    ----------
    faces_dir : str, optional
        The protocol on a labelled faces folder.
    store_path : str
        Else the protocol on this enrollment store (its matcher, refitted per split).
    scores : tuple of str, optional
        Recompute every figure from score files (an empty sequence is None).
    gallery, probes : str, optional
        An existing gallery on a labelled probe folder.
    dev_scores, eval_scores : tuple of str, optional
        One threshold per method chosen on dev score files, rates on eval ones.
    key_file, matcher_cmd : str, optional
        The host's signing key and external matcher program.
    privacy_key_file : str, optional
        The host's privacy key (default ``$SSGALLERY_PRIVACY_KEY_FILE``): reads an
        encrypted store or gallery.
    """

    faces_dir: str = option_field(None)
    store_path: str = option_field("enrollment.h5")
    scores: tuple = option_field(None, _files)
    gallery: str = option_field(None)
    probes: str = option_field(None)
    dev_scores: tuple = option_field(None, _files)
    eval_scores: tuple = option_field(None, _files)
    key_file: str = option_field(None)
    matcher_cmd: object = option_field(None)
    privacy_key_file: str = option_field(None)


@dataclass(frozen=True, kw_only=True)
class ReportOptions(_Options):
    """Where ``roc`` writes its report and what it holds.

    Attributes
    ----------
    out_dir : str
        Report folder.
    plot : bool
        Draw the plots.
    force : bool
        Replace report files that were not written by ``ssgallery roc``.
    warn : callable(str), optional
        Where warnings go (`ssgallery.app.roc.roc`: the library's default).
    criterion : {"eer", "min-hter", "far"}
        How the dev threshold is chosen (dev/eval mode; "far": at ``criterion_far``).
    criterion_far : float, optional
    """

    out_dir: str = option_field("report")
    plot: bool = option_field(True, flag_bool)
    force: bool = option_field(False, flag_bool)
    warn: object = option_field(None)
    criterion: str = option_field("eer")
    criterion_far: float = option_field(None)
