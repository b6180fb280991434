"""Errors: one root per layer, no exit codes in the domain, one map in the CLI (issue 19 §5)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from mailtriage.application import errors
from mailtriage.backends.send_policy import SendRefusal
from mailtriage.cli.exit_codes import ACCOUNT, MAIN, TRACKER, ExitCode, exit_code, modes_table

ROOT = Path(__file__).resolve().parents[2]


def test_each_layer_has_one_root():
    mail = [errors.NotSupported, errors.Unavailable, errors.SignInNeeded, errors.BackendFailure, errors.ConnectionLost,
            errors.MandatoryBackendUnavailable, errors.NoBackendAvailable, errors.NoBackendReachable,
            errors.DraftAlreadyPending, errors.SendRefused]
    assert all(issubclass(cls, errors.MailError) for cls in mail)
    tracker = [errors.TrackerUsageError, errors.NotFound, errors.Refused, errors.TrackerBackendError,
               errors.MalformedIssue]
    assert all(issubclass(cls, errors.TrackerError) for cls in tracker)
    assert issubclass(errors.UsageError, errors.ApplicationError)
    roots = (errors.MailError, errors.TrackerError, errors.ApplicationError, errors.ConfigError)
    for a in roots:
        assert not any(issubclass(a, b) for b in roots if b is not a)


# The root of each layer (docs/architecture.md). ConfigError is core's best-known error, under CoreError.
ROOTS = (errors.MailError, errors.TrackerError, errors.ApplicationError, errors.CoreError, errors.ModesError)


def _public_exception_classes() -> dict[str, type[BaseException]]:
    """Every public exception class the package defines (imported module by module from the tree)."""
    from tests.core.package_layout import packages

    found: dict[str, type[BaseException]] = {}
    for package in packages():
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(("mailtriage", *(parts[:-1] if parts[-1] == "__init__" else parts)))
            module = importlib.import_module(name)
            for attr, value in vars(module).items():
                if (isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == name
                        and not attr.startswith("_")):
                    found[f"{name}.{attr}"] = value
    return found


def test_every_public_exception_class_sits_under_a_layer_root():
    found = _public_exception_classes()
    assert len(found) > 60  # the walk reached the package
    assert [name for name, cls in sorted(found.items()) if not issubclass(cls, ROOTS)] == []
    # and under one root only: a catch of one layer's root never takes another layer's error
    assert [name for name, cls in sorted(found.items()) if sum(issubclass(cls, r) for r in ROOTS) != 1] == []


def test_the_rooted_errors_keep_their_builtin_bases():
    # `except ValueError` / `except LookupError` / `except OSError` around them still catch them.
    from mailtriage.backends.mailbox_contract import InvalidQuery
    from mailtriage.backends.mime import AttachmentNotFound
    from mailtriage.core.origins import OriginRefused
    from mailtriage.core.safe_names import SaveError
    from mailtriage.modes.addresses import AddressError

    assert issubclass(InvalidQuery, ValueError) and issubclass(AttachmentNotFound, LookupError)
    assert issubclass(OriginRefused, ValueError) and issubclass(AddressError, ValueError)
    saved = SaveError(28, "no space left")
    assert isinstance(saved, OSError) and saved.errno == 28 and isinstance(saved, errors.CoreError)


def test_send_refused_sits_under_the_mail_root_and_keeps_its_old_name():
    from mailtriage.backends import send_policy

    assert send_policy.SendRefused is errors.SendRefused
    refused = errors.SendRefused(SendRefusal("send-cap-reached", "send-cap", "10 sent"))
    assert isinstance(refused, errors.MailError) and refused.refusal.rule == "send-cap"
    assert str(refused) == "send refused (send-cap-reached): 10 sent"


def test_the_configuration_errors_live_in_core_errors():
    from mailtriage.core import errors as core_errors
    from mailtriage.core import projectconfig

    assert projectconfig.ConfigError is core_errors.ConfigError is errors.ConfigError
    assert issubclass(core_errors.ProjectFileError, core_errors.ConfigError)


def test_domain_errors_carry_no_exit_codes():
    import mailtriage.backends.errors as mail_errors
    import mailtriage.trackers.contract as contract
    import mailtriage.trackers.errors as tracker_errors

    for module in (mail_errors, tracker_errors, contract):
        assert not [n for n in vars(module) if n.startswith("EXIT_")], module.__name__
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseException):
                assert not hasattr(value, "exit_code"), value


def test_exit_codes_are_defined_once():
    # Only cli/exit_codes.py names exit codes; every other module asks it.
    pattern = re.compile(r"^\s*(EXIT_\w+\s*=|EXIT_\w+\s*,)", re.M)
    offenders = [str(p.relative_to(ROOT)) for folder in ("cli", "tui", "backends", "trackers",
                                                          "application", "core", "modes")
                 for p in sorted((ROOT / folder).rglob("*.py"))
                 if pattern.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
    assert len({code.value for code in ExitCode}) == len(ExitCode)  # one name per code


CASES_MAIN = [
    (errors.UsageError("x"), 2), (errors.ConfigError("f", "k", "bad"), 2),
    (errors.NotSupported("b", "op"), 3), (errors.NoBackendAvailable("op"), 3),
    (errors.NoBackendReachable("op"), 4), (errors.MandatoryBackendUnavailable("b", "down"), 4),
    (errors.Unavailable("b", "down"), 4), (errors.SignInNeeded("b", "expired"), 4),
    (errors.BackendFailure("b", "oops"), 4), (errors.ConnectionLost("b", "reset"), 4),
    (errors.SendRefused(SendRefusal("send-cap-reached", "send-cap", "")), 4),
    (errors.TrackerUsageError("x"), 2), (errors.NotFound("x"), 3), (errors.Refused("x"), 4),
    (errors.TrackerBackendError("x"), 4),
    (errors.AttachmentError("disk full"), 4), (errors.KeyringUnavailable("NoKeyringError"), 2),
    (errors.SecretCommandFailed("pass failed"), 2), (errors.NoListToReplyTo("no List-Post"), 2),
]


@pytest.mark.parametrize("error, code", CASES_MAIN, ids=lambda v: type(v).__name__ if isinstance(v, Exception) else v)
def test_the_main_commands_map_types_to_codes(error, code):
    assert exit_code(error, MAIN) == code


CASES_TRACKER = [
    (errors.TrackerUsageError("x"), 2), (errors.NotFound("x"), 3), (errors.Refused("x"), 4),
    (errors.TrackerBackendError("x"), 5), (errors.MalformedIssue("a", "b"), 5),
    (errors.ProjectFileError("p", "project.md", "file not found"), 3), (errors.ConfigError("p", "k", "bad"), 2),
    (errors.SecretMissing("token"), 5), (RuntimeError("surprise"), 5),
    # under CoreError now, which the tracker command does not name: still "anything unforeseen", 5
    (errors.KeyringUnavailable("NoKeyringError"), 5),
]


@pytest.mark.parametrize("error, code", CASES_TRACKER, ids=lambda v: type(v).__name__ if isinstance(v, Exception) else v)
def test_the_tracker_command_maps_types_to_codes(error, code):
    assert exit_code(error, TRACKER) == code


def test_account_and_modes_commands():
    from mailtriage.application import StoreError

    assert exit_code(errors.ConfigError("f", "k", "bad"), ACCOUNT) == 2
    assert exit_code(errors.SignInNeeded("b", "x"), ACCOUNT) == 4
    assert exit_code(errors.KeyringUnavailable("NoKeyringError", "work"), ACCOUNT) == 2
    assert exit_code(StoreError("locked"), modes_table()) == 4
    assert exit_code(errors.ConfigError("f", "k", "bad"), modes_table()) == 2


def test_no_message_decides_an_exit_code():
    # The words of a message change nothing: a decline that quotes "mandatory backend" or
    # "unavailable" is still a decline.
    assert exit_code(errors.NoBackendAvailable("mandatory backend x unavailable"), MAIN) == 3
    assert exit_code(errors.ConfigError("f", "project.md", "bad"), TRACKER) == 2
    for path in sorted((ROOT / "cli").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r'"[^"]*" in (str\(exc\)|proposal\.blocked|exc\.message)', text), path
        assert "exc.key ==" not in text, path


def test_the_unresolved_error_says_by_its_type_whether_a_backend_was_down():
    from mailtriage.backends.contract import Op
    from mailtriage.backends.resolution import Resolution, Step

    down = Resolution(Op.READ_THREAD, None, None, (Step("a", "primary", "unavailable: gone"),))
    with pytest.raises(errors.NoBackendReachable) as info:
        down.raise_if_unresolved()
    assert info.value.some_unavailable is True
    nobody = Resolution(Op.READ_THREAD, None, None, (Step("a", "primary", "declines read_thread"),))
    with pytest.raises(errors.NoBackendAvailable) as info:
        nobody.raise_if_unresolved()
    assert type(info.value) is errors.NoBackendAvailable and info.value.some_unavailable is False
