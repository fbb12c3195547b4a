"""Whether a figure's scores are a client's held-out scores or its training scores
(``--cv-folds 0``, nothing to hold out, or off scale): `on_training_scores` decides it
for a client's result, `training_share` for a record's counts, and `fitted_note` says
it, the one rule of every line that says "training" or "held-out" (the calibration,
`ssgallery.app.thresholds`; the 1:N point, `ssgallery.app.open_set`; ``info``,
`ssgallery.cli.operating`)."""

from ssgallery.checks import is_int
from ssgallery.tables import counted


def training_share(training, clients):
    """Whose scores a figure counted on the scores of ``clients`` clients, ``training``
    of them on training scores (`on_training_scores`), are: the one rule of every line
    that says "training" or "held-out" (`fitted_note`, ``info``'s counts,
    `ssgallery.app.open_set.searches_kind`).

    Parameters
    ----------
    training, clients : int or None
        As a record holds them (``training_clients``; ``clients`` None when not
        recorded).

    Returns
    -------
    str
        ``"all"`` (every client's: ``training`` >= ``clients``), ``"some"`` (also when
        ``clients`` is not known: not every one can be said) or ``"none"`` (``training``
        not a whole number > 0).
    """
    if not is_int(training) or training <= 0:
        return "none"
    return "all" if is_int(clients) and training >= clients else "some"


def fitted_note(training, clients, what, outcome, fitted="reject those very people"):
    """``; every client's <what> are training scores (nothing held out): not an estimate,
    <outcome> more often than it says (the models were fitted to <fitted>)`` for a figure
    counted on the scores of ``clients`` clients, ``training`` of them on training
    scores (`training_share`); "" when none is."""
    share = training_share(training, clients)
    if share == "none":
        return ""
    whose = "every client's" if share == "all" else \
        f"{training} of the {clients} clients'" if is_int(clients) else \
        f"{counted(training, 'client')}'"
    return (f"; {whose} {what} are training scores (nothing held out): not an estimate, "
            f"{outcome} more often than it says (the models were fitted to {fitted})")


def on_training_scores(result):
    """Whether a client result's held-out scores are training scores (``--cv-folds 0``,
    nothing to hold out, or off scale: its provenance's ``threshold_folds`` is 0), for
    its share of the expected FAR and of the 1:N point's searches."""
    return (result.provenance or {}).get("threshold_folds") == 0
