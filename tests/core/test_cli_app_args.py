"""The app's command line (no command word) is parsed by the global options alone (issue 33:
the ~30 subcommands' parsers cost 11-17 ms of start-up before the head start's child forks),
to the same namespace the full parser gives; anything else is the full parser's, errors and help included."""

from __future__ import annotations

import pytest

from mailtriage.cli import main as cli


@pytest.mark.parametrize("argv", [
    [], ["--demo"], ["--demo-reset"], ["--project", "some/dir"], ["--project=some/dir"], ["--demo-r"],
])
def test_the_apps_command_line_parses_as_the_full_parser_does(argv):
    args = cli._app_args(argv)
    assert args is not None
    assert vars(args) == vars(cli.build_parser().parse_args(argv))


@pytest.mark.parametrize("argv", [
    ["list"], ["--project", "x", "sources"], ["-h"], ["--help"], ["--demo", "--project", "x"], ["--nope"],
    ["--project"], ["--dem"],  # (ambiguous: --demo or --demo-reset)
])
def test_anything_else_goes_to_the_full_parser(argv):
    assert cli._app_args(argv) is None


def test_an_error_on_the_apps_command_line_is_the_full_parsers(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--demo", "--project", "x"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "COMMAND" in err.split("error:")[0]  # the full usage, with the commands
    assert "not allowed with argument" in err


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--help"])
    assert exit_.value.code == 0
    assert "sources" in capsys.readouterr().out
