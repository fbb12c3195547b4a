"""``ssgallery synth``: write a synthetic face set and, optionally, measure how hard it is."""

from ssgallery.images.synth import write_sample_data

__all__ = ["difficulty", "write_sample_data"]


def difficulty(faces_dir, repetitions=5, seed=0, n_train=5, progress=None):
    """How hard a face folder is: the full SVM's figures under the paper's protocol.

    Runs `ssgallery.biometrics.protocol.run_protocol` with the SVM teacher only
    (eigenface matcher, defaults) and evaluates it with
    `ssgallery.biometrics.evaluation.evaluate`: the same code as ``ssgallery roc``
    (``progress``: its steps, `ssgallery.progress.Progress`).

    Returns
    -------
    dict
        ``eer_client_mean`` (mean client EER), ``eer_averaged_curve`` (EER of the
        client-averaged curve),
        ``repetitions`` and ``clients`` (client models evaluated).
    """
    from ssgallery.biometrics.evaluation import evaluate
    from ssgallery.biometrics.protocol import ProtocolOptions, run_protocol
    from ssgallery.images.ingest import load_faces

    faces = load_faces(faces_dir, size=None, min_images=n_train + 1)
    options = ProtocolOptions(methods=("svm",), n_train=n_train, repetitions=repetitions,
                              seed=seed)
    tables = run_protocol(faces.images, faces.labels, options, progress=progress)
    (summary,) = evaluate(tables, n_boot=0)
    return {key: summary[key] for key in ("eer_client_mean", "eer_averaged_curve",
                                          "repetitions", "clients")}
