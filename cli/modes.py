"""``mailtriage modes …``: the MAS modes endpoint and its thread record.

    mailtriage modes serve [--host 127.0.0.1] [--port N] [--role master|slave] [--config FILE]
    mailtriage modes cases  [--config FILE]            the cases of the record, JSON
    mailtriage modes thread CASE [--config FILE]       one case's thread (mails, handoffs, statuses), JSON
    mailtriage modes token [--mode TYPE.MODE] [--config FILE]
                                                       print the master's token, or one mode endpoint's

``--config`` defaults to ``modes.toml`` in the mailtriage config dir. Exit codes: 0 ok,
2 usage or configuration, 3 no such case, 4 the server could not start.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import Sequence

import mailtriage.application as application
from mailtriage.application.errors import ConfigError
from mailtriage.cli.exit_codes import ExitCode, exit_code, handled, modes_table
from mailtriage.core.paths import private_dir
from mailtriage.core.secrets import scrub, scrub_json
from mailtriage.core.settings import config_dir


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mailtriage modes",
                                     description="The email side of the MAS mode contract v0.1 (see docs/modes.md).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", metavar="FILE", type=Path,
                       help="modes configuration TOML (default: modes.toml in the mailtriage config dir)")
        p.add_argument("--database", metavar="FILE", type=Path, help="thread record SQLite file (overrides config)")

    serve = sub.add_parser("serve", help="run the endpoint (JSON over HTTP POST) and the mailbox poll")
    common(serve)
    serve.add_argument("--host", help="address to listen on (default: config server.host or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default: config server.port or 8025; 0 picks a free one)")
    serve.add_argument("--role", choices=("master", "slave"), help="default role of resource types without one")
    serve.add_argument("--domain", help="the MAS domain D (overrides config)")
    serve.add_argument("-v", "--verbose", action="store_true", help="log every background pass")

    cases = sub.add_parser("cases", help="list the cases of the thread record")
    common(cases)
    cases.add_argument("--domain", help=argparse.SUPPRESS)

    thread = sub.add_parser("thread", help="print one case's thread record")
    common(thread)
    thread.add_argument("--domain", help=argparse.SUPPRESS)
    thread.add_argument("case", help="case address (ticket=gs-1@D), key or resource id")

    token = sub.add_parser("token", help="print the token the master (or, with --mode, one mode endpoint) must "
                                         "send (Authorization: Bearer <token>); made and kept in the keyring when missing")
    common(token)
    token.add_argument("--mode", metavar="TYPE.MODE", help="the token of this mode endpoint ([types.TYPE.modes.MODE])")
    token.add_argument("--domain", help=argparse.SUPPRESS)
    return parser


def _config(args: argparse.Namespace):
    path = args.config
    if path is None:
        default = config_dir() / "modes.toml"
        path = default if default.exists() else None
    overrides = {}
    if getattr(args, "role", None):
        overrides["role"] = args.role
    if getattr(args, "domain", None):
        overrides["domain"] = args.domain
    if args.database:
        overrides["database"] = str(args.database)
    config = application.load_modes_config(path, overrides=overrides)
    private_dir(Path(config.database).parent)  # the thread record: never in a folder others can write
    return config


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    table = modes_table()
    try:
        config = _config(args)
        if args.command == "serve":
            return _serve(args, config)
        if args.command == "token":
            # Printed only on this explicit request, to stdout, for the operator to hand on.
            sys.stdout.write(_token(args, config) + "\n")
            return ExitCode.OK
        store = application.Store(config.database)
        try:
            if args.command == "cases":
                _emit([{"address": c.address, "key": c.key, "role": c.role, "participant": c.participant,
                        "handoffs": [{"handoff_id": h.handoff_id, "mode": h.mode, "status": h.status}
                                     for h in store.handoffs(c.key)]} for c in store.cases()])
                return ExitCode.OK
            case = store.find_case(args.case)
            if case is None:
                _err(f"no case {args.case!r} in {config.database}")
                return ExitCode.DECLINED
            _emit(store.thread(case.key))
            return ExitCode.OK
        finally:
            store.close()
    except handled(table) as exc:
        _err(f"configuration error: {exc}" if isinstance(exc, ConfigError) else str(exc))
        return exit_code(exc, table)


def _token(args: argparse.Namespace, config) -> str:
    """The master's token, or with ``--mode`` that mode endpoint's. Raises ConfigError."""
    master = application.endpoint_token(config)[0]
    if not args.mode:
        return master
    tokens = application.mode_tokens(config, master)
    type_name, _, mode = args.mode.lower().partition(".")
    if (type_name, mode) not in tokens:
        known = ", ".join(f"{t}.{m}" for t, m in sorted(tokens)) or "none configured"
        raise ConfigError(config.file or "(modes configuration)", "--mode",
                          f"{args.mode!r} is no mode of a [types.TYPE.modes.MODE] table", known)
    return tokens[(type_name, mode)]


def _serve(args: argparse.Namespace, config) -> int:
    ModesServer = application.ModesServer
    handler = logging.StreamHandler()
    handler.setFormatter(_InertFormatter("mailtriage modes: %(message)s"))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, handlers=[handler])
    server = ModesServer(config, host=args.host, port=args.port)

    def ready(s: ModesServer) -> None:
        sys.stderr.write(f"mailtriage modes: serving {s.url} (domain {config.domain}, default role {config.role}, "
                         f"record {config.database})\n")
        made = "a new endpoint token was made and kept in the keyring; " if s.token_generated else ""
        sys.stderr.write(f"mailtriage modes: {made}{application.token_hint(config)}\n")
        sys.stderr.flush()

    async def run() -> None:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, task.cancel)  # type: ignore[union-attr]
            except (NotImplementedError, RuntimeError):
                pass
        await application.serve_forever(server, ready)

    try:
        asyncio.run(run())
    except asyncio.CancelledError:
        pass
    except KeyboardInterrupt:
        pass
    except ConfigError as exc:
        _err(f"configuration error: {exc}")
        return exit_code(exc, modes_table())
    except OSError as exc:
        _err(f"cannot serve on {args.host or config.host}:{config.port if args.port is None else args.port}: {exc}")
        return ExitCode.FAILED
    return ExitCode.OK


def _emit(doc) -> None:
    # Case records hold mail text: through the one inert-text boundary, like every other command.
    sys.stdout.write(scrub(application.json_dumps(scrub_json(doc))) + "\n")


class _InertFormatter(logging.Formatter):
    """Log lines quote server text, Message-IDs and tracebacks: inert, lines kept, secrets masked."""

    def format(self, record: logging.LogRecord) -> str:
        return application.terminal_text(scrub(super().format(record)))


def _err(text: str) -> None:
    sys.stderr.write(f"mailtriage modes: {application.terminal_text(scrub(text))}\n")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
