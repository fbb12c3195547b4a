"""Library messages never name a command-line flag (issue 9): they name parameters with
`ssgallery.errors.option`, and the command line shows each as its flag."""

import ast
import re
from pathlib import Path

import click
from click.testing import CliRunner

import ssgallery
from ssgallery.cli import main
from ssgallery.cli.options import as_flags
from ssgallery.errors import InputError, option

PACKAGE = Path(ssgallery.__file__).resolve().parent
# the command that regenerates a synthetic data set, quoted in its README: not a message
# whole command lines of another command, for the user to run (synth's README of its
# folder; show's pointer to ``ssgallery info --client ID --gallery PATH``): not the
# raising command's own flags, which `option` names
ALLOWED = {("images/synth.py", f) for f in ("--identities", "--images", "--seed", "--probes",
                                            "--age", "--variation")} \
    | {("app/show.py", f) for f in ("--client", "--gallery")}


def _cli_flags():
    flags = set()
    for command in [main, *main.commands.values()]:
        for param in command.params:
            flags |= {o for o in getattr(param, "opts", ()) if o.startswith("--")}
    return flags - {"--help", "--version"}


def _strings(tree):
    """String literals of a module (f-string parts included), docstrings excluded."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            yield node.lineno, node.value


def test_library_strings_name_no_cli_flag():
    flags = _cli_flags()
    assert {"--skip-bad", "--force", "--m", "--matcher-cmd"} <= flags
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("cli/"):
            continue
        for line, text in _strings(ast.parse(path.read_text("utf-8"))):
            for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text):
                if flag in flags and (rel, flag) not in ALLOWED:
                    found.append(f"{rel}:{line}: {flag}")
    assert found == [], found


def test_the_command_line_shows_the_flag():
    compress = main.commands["compress"]
    message = str(InputError(f"{option('m')} must be >= 1; {option('max_iter')} too; "
                             f"{option('no_such_param')}"))
    assert "--" not in message
    assert as_flags(message, compress) == "--m must be >= 1; --max-iter too; --no-such-param"
    roc = main.commands["roc"]
    assert as_flags(f"give {option('faces_dir')} or {option('gallery')}", roc) == \
        "give FACES_DIR or --gallery"
    assert isinstance(roc.params[0], click.Argument)


def test_cli_error_and_warning_name_flags(tmp_path):
    out = tmp_path / "synth"
    runner = CliRunner()
    assert runner.invoke(main, ["synth", str(out), "--identities", "2", "--images", "2"]
                         ).exit_code == 0
    again = runner.invoke(main, ["synth", str(out), "--identities", "2", "--images", "2"])
    assert again.exit_code == 2 and "(use --force to replace it)" in again.output
    bad = tmp_path / "faces" / "c1"
    bad.mkdir(parents=True)
    (bad / "notes.txt").write_text("x")
    run = runner.invoke(main, ["enroll", str(tmp_path / "faces"), "--store",
                               str(tmp_path / "e.h5")])
    assert run.exit_code == 2 and "use --skip-bad to skip it" in run.output, run.output
