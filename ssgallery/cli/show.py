"""``ssgallery show``: a client's virtual prototypes as a picture."""

import click

from ssgallery import jsontext
from ssgallery.cli.options import key_file_option, privacy_key_option
from ssgallery.cli.progress import quiet_option
from ssgallery.errors import printable
from ssgallery.tables import counted, signed


@click.command("show")
@click.option("--claim", "--client", "claim", required=True, metavar="ID",
              help="The client to show (--client, as info names it, is the same).")
@click.option("-o", "--output", default=None, metavar="FILE.png",
              show_default="prototypes_ID.png",
              help="Image to write (.png, .jpg, ...).")
@click.option("--gallery", default="gallery.h5", show_default=True, metavar="FILE",
              help="Gallery written by `ssgallery compress`.")
@click.option("--scale", type=click.IntRange(1, 8), default=2, show_default=True,
              help="Pixel up-scaling of each prototype.")
@click.option("--force", is_flag=True, help="Replace an existing -o file that is not an "
              "image of its format (never a folder, a device, a store or a gallery).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@quiet_option
@key_file_option
@privacy_key_option
def command(claim, output, gallery, scale, force, as_json, quiet, key_file, privacy_key_file):
    """Draw the claimed client's prototypes, each labelled with its weight beta.

    Prototypes with beta > 0 (green) look like the client and raise the score;
    prototypes with beta < 0 (red) are impostor-like and lower it (the paper's
    interpretability figure). An eigenface gallery's positive prototypes are face-like
    images in which the client can be recognised: treat every gallery as personal data
    (docs/privacy.md). A gallery with protected templates stores no image, and its
    prototypes are drawn only with the privacy key.

    With a signing key (--key-file or $SSGALLERY_KEY_FILE), the gallery's signature is
    checked as verify and info check it: a gallery unsigned, signed with another key or
    edited since is refused with verify's line and status (2), and nothing is drawn.
    Without a key the signature is not checked.

    Writes prototypes_ID.png here unless told (-o). An existing output is replaced when
    it is an image of its format (PNG, JPEG, GIF, BMP, TIFF or WebP); any other file,
    an image of another format (.ppm, .pdf, ...) included, only with --force.

    Exit status: 0 image written, 2 input or usage error (unknown claim, a gallery
    that fails its checks, an output it may not replace: one line on stderr, nothing
    written), 4 internal error.

    \b
    Examples:
      ssgallery show --claim c03                      # writes prototypes_c03.png
      ssgallery show --claim c03 -o c03.png --gallery site.h5 --scale 3
      ssgallery show --client c03                     # the same as --claim c03
    """
    from ssgallery.app.show import show_prototypes

    out = show_prototypes(gallery, claim, output, scale=scale,
                          privacy_key_file=privacy_key_file, force=force, key_file=key_file)
    if as_json:
        click.echo(jsontext.dumps(out, indent=2))
        return
    if quiet:  # the image is written; no summary of it
        return
    betas = ", ".join(signed(b) for b in out["beta"])
    click.echo(f"{printable(out['output'])}: {counted(out['m'], 'prototype')} of client "
               f"{printable(claim)} (beta {betas}; b = {signed(out['intercept'])}, "
               f"threshold {signed(out['threshold'])})")
