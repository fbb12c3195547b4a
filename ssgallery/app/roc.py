"""``ssgallery roc``: one function per input mode (protocol on a faces folder or on the
enrollment store, gallery + probe folder, score files, dev/eval score files), a thin
dispatcher `roc`; report folder out (figures of merit from
`ssgallery.biometrics.evaluation`)."""

import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np

from ssgallery import jsontext
from ssgallery.app.gallery_scores import score_gallery
from ssgallery.app.options import ReportOptions, RocInputs, resolve_between
from ssgallery.app.roc_setup import (
    checked_m,
    trained_as_compress,
    warn_between_unused,
    warn_unused_options,
    without_rbf_methods,
)
from ssgallery.biometrics.evaluation import evaluate
from ssgallery.biometrics.protocol import ProtocolOptions
from ssgallery.biometrics.scores import read_score_files
from ssgallery.errors import InputError, naming, option
from ssgallery.formats.integrity import reads_key_files
from ssgallery.learn.defaults import BLACK_BOX_M, DEFAULT_M
from ssgallery.learn.threads import single_threaded_blas
from ssgallery.progress import as_progress

# --------------------------------------------------------------------------- entry point

def _method_order(table):
    """Known methods in registry order (svm first), then others by name; m ascending."""
    from ssgallery.biometrics.methods import METHOD_NAMES

    known = table.method in METHOD_NAMES
    rank = METHOD_NAMES.index(table.method) if known else len(METHOD_NAMES)
    return (rank, table.method, -1 if table.m is None else table.m, table.repetition)


def _report(tables, report, mode, source, config, progress=None, n_boot=200):
    """Evaluate (verification, and identification where the tables carry searches) and
    write the report folder (`ReportOptions`)."""
    from ssgallery.biometrics import report as writer

    progress = as_progress(progress)
    summaries = evaluate(tables, n_boot=n_boot, progress=progress)
    searches = [t.search for t in tables if t.search is not None]
    found = None
    if searches:
        from ssgallery.biometrics.identification import evaluate_identification

        with progress.phase("evaluating identification", 1, "steps"):
            found = evaluate_identification(searches)
            progress.advance()
    files = writer.write_report(report.out_dir, tables, summaries, mode=mode, source=source,
                                config=config, plot=report.plot, warn=report.warn,
                                identification=found, force=report.force, progress=progress)
    return {"summaries": summaries, "identification": found, "files": files,
            "source": source, "mode": mode, "config": config}


def _protocol(data, source, protocol, report, *, factory=None, enrollable=None,
              progress=None, private=False, default_m=DEFAULT_M, left_out=None):
    from ssgallery.biometrics.protocol import between_applied, make_splits, run_protocol

    images, labels, paths = data
    splits = make_splits(labels, protocol.n_enrolled, protocol.n_train, protocol.repetitions,
                         protocol.seed, enrollable)
    p = checked_m(protocol, min(len(s.train_indices()) for s in splits), default_m, source)
    warn_between_unused(p, report)
    _check_planned_report(report, p)
    with naming(source):  # a matcher fitted on a split's images names the faces
        tables = run_protocol(images, labels, p, matcher_factory=factory,
                              probe_labels=paths, progress=progress, enrollable=enrollable,
                              private=private)
    config = {"enrolled": len(splits[0].enrolled), "train_images": int(p.n_train),
              "repetitions": int(p.repetitions), "seed": int(p.seed), "m": list(p.m),
              "methods": list(p.methods)}
    between = between_applied(p)
    if between:  # recorded when applied: a report at 0 reads as before
        config["between"] = float(between)
    if left_out:  # default methods that cannot run here: {method: why}
        config["left_out"] = dict(left_out)
    if p.method_options:  # e.g. a black box's ssvm, trained as compress trains it
        config["method_options"] = json.loads(json.dumps(
            p.method_options, default=lambda v: v.item() if isinstance(v, np.generic)
            else repr(v)))
    return _report(tables, report, "protocol", source, config, progress)


def _check_planned_report(report, protocol):
    """Refuse, before the protocol trains anything, a report file ``roc`` would have to
    replace and may not (`ssgallery.biometrics.report.check_report`)."""
    from ssgallery.biometrics.protocol import method_specs
    from ssgallery.biometrics.report import check_report
    from ssgallery.biometrics.scores import score_file_name

    names = [score_file_name(method, m, r) for r in range(protocol.repetitions)
             for method, m in method_specs(protocol.methods, protocol.m)]
    check_report(report.out_dir, names, names if protocol.identification else [],
                 report.plot, report.force)


ROC_PROTOCOL = ProtocolOptions(identification=True)  # roc also searches, by default


def roc_protocol(faces_dir, protocol=None, report=None, *, progress=None):
    """The paper's protocol on a labelled faces folder.

    ``protocol``: `ssgallery.biometrics.protocol.ProtocolOptions` (default
    `ROC_PROTOCOL`: identification too, i.e. every probe against every client: CMC,
    DIR); ``report``: `ssgallery.app.options.ReportOptions`; ``progress``
    (`ssgallery.progress.Progress`): reading the faces, then each repetition's
    features and clients, the evaluation and the report."""
    from ssgallery.images.ingest import load_faces

    report = report if report is not None else ReportOptions()
    faces = load_faces(faces_dir, size=None, warn=report.warn,  # like enroll: first size
                       progress=progress, input_options=False)  # no --skip-bad, --strict
    return _protocol((faces.images, faces.labels, np.asarray(faces.paths)),
                     os.fspath(faces_dir), protocol or ROC_PROTOCOL, report,
                     progress=progress)


@reads_key_files()
def roc_store(store_path="enrollment.h5", protocol=None, report=None, *, matcher_cmd=None,
              progress=None, privacy_key_file=None):
    """The protocol on an enrollment store: its matcher configuration is reused (refitted
    on each split's training images; an external matcher runs the host's program
    ``matcher_cmd``, see `ssgallery.matchers.host`, which must have the store's contract,
    `ssgallery.matchers.host.same_program`) and its background subjects
    are never enrolled; an encrypted store is read with the privacy key
    ``privacy_key_file`` (default ``$SSGALLERY_PRIVACY_KEY_FILE``, as ``roc --gallery``
    reads an encrypted gallery). The other arguments: `roc_protocol`."""
    if not Path(store_path).exists():
        raise InputError(f"{store_path}: no enrollment store here; give a faces folder "
                         f"(ssgallery roc FACES_DIR) or run 'ssgallery enroll FACES_DIR' first")
    from ssgallery.formats.encryption import load_privacy_key
    from ssgallery.formats.store import load_store
    from ssgallery.images.ingest import default_warn
    from ssgallery.matchers import get_matcher_class
    from ssgallery.matchers.host import attached, host_matcher, runs_program, same_program

    privacy_key = load_privacy_key(privacy_key_file)  # else $SSGALLERY_PRIVACY_KEY_FILE
    store = load_store(store_path, privacy_key=privacy_key)
    cls, config = get_matcher_class(store.matcher_name), dict(store.matcher_config)
    report = report if report is not None else ReportOptions()
    host = None
    if runs_program(cls) or matcher_cmd is not None:
        host = host_matcher(matcher_cmd, report.warn or default_warn)
    same_program(store, host)  # once, as compress checks it (the factory runs per split)
    protocol = protocol or ROC_PROTOCOL
    black_box = cls.black_box  # as compress decides (`Matcher.black_box`)
    protocol = replace(protocol, between=resolve_between(
        protocol.between, black_box, store.matcher_name, report.warn or default_warn))
    left_out = {}
    if black_box:
        protocol, left_out = without_rbf_methods(protocol, store.matcher_name)
        protocol = trained_as_compress(protocol)
    return _protocol((store.images, store.labels, np.asarray(store.paths)),
                     os.fspath(store_path), protocol, report,
                     factory=lambda: attached(cls(**config), host, store_path),
                     enrollable=list(store.clients), progress=progress,
                     private=privacy_key is not None, left_out=left_out,
                     default_m=BLACK_BOX_M if black_box else DEFAULT_M)  # real images: 5


@reads_key_files()
def roc_gallery(gallery, probes, report=None, *, key_file=None, matcher_cmd=None,
                progress=None, privacy_key_file=None):
    """An existing gallery on a labelled probe folder (figures at the stored thresholds
    too); ``key_file``, ``matcher_cmd``, ``privacy_key_file``: the host's signing key,
    external matcher program and privacy key (see `ssgallery.app.verify.load_client`);
    ``progress``: see `score_gallery`, then the evaluation and the report."""
    report = report if report is not None else ReportOptions()
    tables = [score_gallery(gallery, probes, warn=report.warn, key_file=key_file,
                            matcher_cmd=matcher_cmd, progress=progress,
                            privacy_key_file=privacy_key_file)]
    return _report(tables, report, "gallery", f"{gallery} on {probes}", {}, progress)


def roc_scores(scores, report=None, *, progress=None):
    """Recompute every figure from score files (4-column, 5-column or bob CSV);
    ``progress``: reading each file, then the evaluation and the report."""
    tables = sorted(read_score_files(scores, progress), key=_method_order)
    source = ", ".join(os.fspath(s) for s in scores)
    return _report(tables, report if report is not None else ReportOptions(), "scores",
                   source, {}, progress)


def roc_dev_eval(dev_scores, eval_scores, report=None):
    """One global threshold per method chosen on development score files by the
    report's ``criterion`` ("eer", "min-hter" or "far" with ``criterion_far``), error
    rates on evaluation score files (``bob bio metrics -e``); writes ``summary.json``."""
    from ssgallery import __version__
    from ssgallery.biometrics.evaluation import dev_eval
    from ssgallery.biometrics.report import SUMMARY_HEAD
    from ssgallery.formats.atomic import has_prefix, write_text_atomic

    report = report if report is not None else ReportOptions()
    criterion, criterion_far = report.criterion, report.criterion_far
    dev = sorted(read_score_files(dev_scores), key=_method_order)
    ev = sorted(read_score_files(eval_scores), key=_method_order)
    results = dev_eval(dev, ev, criterion, criterion_far)
    out = Path(report.out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the report folder ({exc.strerror})", path=out) from None
    source = (f"dev: {', '.join(map(os.fspath, dev_scores))}; "
              f"eval: {', '.join(map(os.fspath, eval_scores))}")
    summary = {"tool": "ssgallery roc", "tool_version": __version__, "mode": "dev-eval",
               "source": source, "config": {"criterion": criterion, "far": criterion_far},
               "convention": "one global threshold per method, chosen on dev",
               "methods": results}
    path = os.fspath(out / "summary.json")
    write_text_atomic(path, jsontext.dumps(summary, indent=2) + "\n", has_prefix(SUMMARY_HEAD),
                      report.force, lock=True)
    return {"results": results, "files": {"summary": path, "scores": []}, "source": source,
            "mode": "dev-eval", "config": summary["config"]}


def _select(inputs):
    """Which mode the given inputs ask for (and usage errors for mixed inputs)."""
    given = {k for k in ("faces_dir", "scores", "gallery", "probes", "dev_scores",
                         "eval_scores") if getattr(inputs, k)}
    if given & {"dev_scores", "eval_scores"}:
        if given != {"dev_scores", "eval_scores"}:
            raise InputError(f"{option('dev_scores')} and {option('eval_scores')} go together, "
                             "without other inputs")
        return roc_dev_eval
    if "scores" in given:
        if given != {"scores"}:
            raise InputError(f"{option('scores')} cannot be combined with {option('faces_dir')} "
                             f"or {option('gallery')}/{option('probes')}")
        return roc_scores
    if given & {"gallery", "probes"}:
        if not {"gallery", "probes"} <= given:
            raise InputError(f"{option('gallery')} and {option('probes')} go together")
        if "faces_dir" in given:
            raise InputError(f"give either {option('faces_dir')} or "
                             f"{option('gallery')}/{option('probes')}, not both")
        return roc_gallery
    return roc_protocol if inputs.faces_dir else roc_store


_MODE_NAMES = {roc_dev_eval: "dev-eval", roc_scores: "scores", roc_gallery: "gallery",
               roc_protocol: "protocol", roc_store: "store"}  # warn_unused_options


@single_threaded_blas()
def roc(inputs=None, protocol=None, report=None, *, progress=None):
    """What ``ssgallery roc`` does: pick the mode from the inputs given and run it.

    Parameters
    ----------
    inputs : RocInputs, optional
        ``dev_scores`` + ``eval_scores``: `roc_dev_eval`; ``scores``: `roc_scores`;
        ``gallery`` + ``probes``: `roc_gallery`; ``faces_dir``: `roc_protocol`;
        nothing: `roc_store` on ``store_path``.
    protocol : ProtocolOptions, optional
        The protocol modes' options (default `ROC_PROTOCOL`).
    report : ReportOptions, optional
        Report folder, plots, force, warnings (default: the library's), dev criterion.
    progress : ssgallery.progress.Progress, optional
        Every phase of the chosen mode (`roc_protocol`, `roc_gallery`, `roc_scores`).

    Returns
    -------
    dict
        ``{"summaries" (or "results" in dev/eval mode), "files", "source", "mode",
        "config"}``.
    """
    from ssgallery.images.ingest import default_warn

    i = inputs if inputs is not None else RocInputs()
    report = report if report is not None else ReportOptions()
    if report.warn is None:
        report = replace(report, warn=default_warn)
    run = _select(i)
    warn_unused_options(_MODE_NAMES[run], i, protocol or ROC_PROTOCOL, report, ROC_PROTOCOL)
    if run is roc_dev_eval:
        return roc_dev_eval(i.dev_scores, i.eval_scores, report)
    if run is roc_scores:
        return roc_scores(i.scores, report, progress=progress)
    if run is roc_gallery:
        return roc_gallery(i.gallery, i.probes, report, key_file=i.key_file,
                           matcher_cmd=i.matcher_cmd, progress=progress,
                           privacy_key_file=i.privacy_key_file)
    if run is roc_protocol:
        if i.matcher_cmd is not None:  # a faces folder is run with eigenface
            _folder_runs_no_program(i, report.warn)
        return roc_protocol(i.faces_dir, protocol, report, progress=progress)
    return roc_store(i.store_path, protocol, report, matcher_cmd=i.matcher_cmd,
                     progress=progress, privacy_key_file=i.privacy_key_file)


def _folder_runs_no_program(inputs, warn):
    """Warn that roc on a faces folder, which runs the eigenface matcher, ignores the
    program given (the command checked first, `host_matcher`), and how the external
    matcher is measured: enrolled with it, then roc on the store."""
    from ssgallery.errors import printable
    from ssgallery.matchers.host import host_matcher

    host_matcher(inputs.matcher_cmd, warn)
    flag, folder = option("matcher_cmd"), printable(os.fspath(inputs.faces_dir))
    warn(f"{flag} is ignored: roc on a faces folder ({folder}) runs the eigenface matcher, "
         f"which runs no program; to measure the external matcher, enroll {folder} with "
         f"{flag} and run roc on the store")


__all__ = ["roc", "roc_dev_eval", "roc_gallery", "roc_protocol", "roc_scores", "roc_store",
           "score_gallery"]
