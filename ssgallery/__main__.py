"""``python -m ssgallery``: the same as the ``ssgallery`` command."""

from ssgallery.cli import main

if __name__ == "__main__":
    main(prog_name="ssgallery")
