"""``ssgallery synth``: write a synthetic face set (the project's own sample data)."""

import click

from ssgallery import jsontext
from ssgallery.cli.progress import quiet_option, reporting


@click.command("synth")
@click.argument("out", type=click.Path(file_okay=False))
@click.option("--identities", type=click.IntRange(min=1), default=20, show_default=True,
              help="Number of enrolled identities (folders c01, c02, ...).")
@click.option("--images", type=click.IntRange(min=1), default=10, show_default=True,
              help="Images per identity.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--probes", type=click.IntRange(min=0), default=2, show_default=True,
              help="Probe images per probe identity (c01..c03 and two unknown people).")
@click.option("--jobs", type=click.IntRange(min=-1), default=1, show_default=True,
              metavar="N", help="Render in N processes (-1: one per core).")
@click.option("--age", is_flag=True,
              help="Render every face at a random apparent age (20-70), recorded in "
                   "attributes.csv (a regression target).")
@click.option("--variation", type=float, default=1.0, show_default=True, metavar="V",
              help="Scale every image's pose, expression, background, lighting, exposure "
                   "and noise around their middle by V (0: every image of a person alike). "
                   "For eigenfaces the default set is deliberately harder than AT&T; "
                   "sample_data/ is --variation 0.55, the variation nearest AT&T.")
@click.option("--force", is_flag=True, help="Replace an existing faces/ and probes/.")
@click.option("--check", is_flag=True,
              help="Then print the full SVM's EER on the new faces (5 repetitions).")
@click.option("--json", "as_json", is_flag=True,
              help="Print what was written (and --check's figures) as JSON.")
@quiet_option
def command(out, identities, images, seed, probes, jobs, age, variation, force, check, as_json,
            quiet):
    """Generate synthetic grey-scale faces (92x112) into OUT/faces and OUT/probes.

    Deterministic from --seed. OUT/faces/<client>/NN.png is the layout `enroll`
    reads; OUT/probes holds new images of c01..c03 (cNN_genuine_K.png) and of two
    identities that are not enrolled (unknownJ_K.png). OUT/attributes.csv records each
    face image's continuous ground truth (lighting, exposure, ... and age with --age).

    Exit status: 0 written, 2 input or usage error (one line on stderr), 4 internal
    error, 130 interrupted.

    \b
    Examples:
      ssgallery synth faces_demo                       # 20 identities x 10 images
      ssgallery synth big --identities 100 --images 8 --seed 3
      ssgallery synth huge --identities 10000 --images 6 --jobs 2   # a few minutes
      ssgallery synth aged --identities 60 --images 8 --age   # regression data
      ssgallery synth calm --variation 0.5   # half the pose, lighting, ... changes
    """
    from pathlib import Path

    from ssgallery.app.synth import difficulty, write_sample_data

    with reporting(quiet) as progress:
        files = write_sample_data(out, identities=identities, images=images, seed=seed,
                                  probes=probes, force=force, jobs=jobs, age=age,
                                  progress=progress, variation=variation)
    if not as_json and not quiet:  # said before --check, which may fail: the files are there
        click.echo(f"wrote {len(files)} files to {out}")
    with reporting(quiet) as progress:
        r = difficulty(Path(out) / "faces", progress=progress) if check else None
    if as_json:
        probe_files = [str(f) for f in files if f.parent.name == "probes"]
        click.echo(jsontext.dumps({"out": out, "files": len(files), "identities": identities,
                                   "images": images, "probes": probe_files, "check": r},
                                  indent=2))
    elif check:
        click.echo(f"full SVM: mean client EER {100 * r['eer_client_mean']:.2f}%, EER of the "
                   f"averaged curve {100 * r['eer_averaged_curve']:.2f}% "
                   f"({r['repetitions']} repetitions)")
