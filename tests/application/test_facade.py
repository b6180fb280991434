"""The façade ``mailtriage.application``: typed, lean, and no concrete adapter (issue 36 §2).

Its exports are the names ``cli/`` and ``tui/`` use, each declared twice: a static import
under ``TYPE_CHECKING`` (what mypy and an editor read) and a row of the lazy ``_EXPORTS``
table (what loads at run time). These checks read the source, so they cost no import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import mailtriage.application as application
from tests.core.parsed import parse

ROOT = Path(__file__).resolve().parents[2]
FACADE = ROOT / "application" / "__init__.py"
FRONT_ENDS = ("cli", "tui")


def names_used(*folders: str, root: Path = ROOT) -> set[str]:
    """Every name a module of ``folders`` takes from the façade: ``from mailtriage.application
    import X`` anywhere (function bodies included), and ``application.X`` on the module
    imported as a whole (``import mailtriage.application as application``)."""
    used: set[str] = set()
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            tree = parse(path)
            whole: set[str] = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "mailtriage.application":
                    used |= {alias.name for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "mailtriage":
                    whole |= {alias.asname or alias.name for alias in node.names if alias.name == "application"}
                elif isinstance(node, ast.Import):
                    whole |= {alias.asname or alias.name for alias in node.names
                              if alias.name == "mailtriage.application"}
            used |= {node.attr for node in ast.walk(tree)
                     if isinstance(node, ast.Attribute) and ast.unparse(node.value) in whole}
    return used


def static_exports(path: Path = FACADE) -> dict[str, tuple[str, str]]:
    """name -> (module, name there) for every import under the façade's ``if TYPE_CHECKING:``."""
    found: dict[str, tuple[str, str]] = {}
    for node in parse(path).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.level == 0, ast.unparse(statement)
                for alias in statement.names:
                    assert alias.asname, f"{ast.unparse(statement)}: write 'import x as x' (an explicit re-export)"
                    found[alias.asname] = (statement.module or "", alias.name)
    return found


def run_time_exports() -> dict[str, tuple[str, str]]:
    table = application._EXPORTS
    return {name: (target, name) if isinstance(target, str) else target for name, target in table.items()}


def a_module(root: Path, folder: str, source: str) -> None:
    """``folder/x.py`` under ``root`` holding ``source``: a front end for the scans' own tests."""
    (root / folder).mkdir()
    (root / folder / "x.py").write_text(source)


def test_every_export_is_used_by_a_front_end():
    unused = sorted(set(application.__all__) - names_used(*FRONT_ENDS))
    assert unused == [], (f"mailtriage.application exports {unused}, which neither cli/ nor tui/ uses: remove "
                          "them (a test imports a name from the module that defines it)")


def test_the_usage_scan_sees_both_import_forms(tmp_path):
    a_module(tmp_path, "cli",
        "import mailtriage.application as app\n\n\ndef f():\n"
        "    from mailtriage.application import Op  # why: a test\n    return app.Project\n")
    assert names_used("cli", root=tmp_path) == {"Op", "Project"}


def test_the_static_imports_name_what_loads_at_run_time():
    # A name missing under TYPE_CHECKING is Any to mypy and an editor; one missing from the
    # table fails at run time although the type checker is content.
    assert static_exports() == run_time_exports()


def test_the_static_view_is_read_from_the_source(tmp_path):
    facade = tmp_path / "__init__.py"
    facade.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from mailtriage.x import y as z\n")
    assert static_exports(facade) == {"z": ("mailtriage.x", "y")}


#: The modules whose work the application service does for both front ends (issue 36 §1): the flows,
#: the queue's and the search's operations. The service imports them in its methods.
BEHIND_THE_SERVICE = ("mailtriage.application.flows", "mailtriage.application.queue", "mailtriage.application.search")


def flow_classes(root: Path = ROOT) -> set[str]:
    """Every class of application/ named ``…Flow`` (one object per triage flow)."""
    return {node.name for path in sorted((root / "application").rglob("*.py")) for node in ast.walk(parse(path))
            if isinstance(node, ast.ClassDef) and node.name.endswith("Flow")}


def service_entries(root: Path = ROOT) -> set[str]:
    """The names the service takes at run time from the modules behind it: what it calls for a front end."""
    found: set[str] = set()
    for path in sorted((root / "application").glob("service*.py")):
        tree = parse(path)
        typing_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and ast.unparse(block.test) == "TYPE_CHECKING" for node in ast.walk(block)}
        found |= {alias.asname or alias.name for node in ast.walk(tree)
                  if isinstance(node, ast.ImportFrom) and id(node) not in typing_only
                  and (node.module or "").startswith(BEHIND_THE_SERVICE) for alias in node.names}
    return found


#: Flow calls a front end still makes itself, with why (may only shrink).
PENDING_BYPASS = {
    "run_poll_loop": "tui/alerts.py runs the app's poll loop on the poller Service.alert_watch builds (its own "
                     "sources, on a worker); Service.watch_polls is the command line's. A tui/ change: another "
                     "brief's area this session (cli15)",
}


def test_front_ends_call_the_service_never_a_flow():
    # The command line once opened the service and then built ReplyFlow, SyncFlow, PublishFlow,
    # PollFlow and SweepFlow itself, and called build_queue, propose_claim, sync_tracker and
    # search_project: the two front ends then agreed by discipline only. Add a Service method instead.
    bypass = sorted((flow_classes() | service_entries()) & names_used(*FRONT_ENDS) - set(PENDING_BYPASS))
    assert bypass == [], f"cli/ or tui/ calls {bypass} itself: call the application service's method for it"


def test_the_facade_exports_no_flow():
    exported = sorted((flow_classes() | service_entries()) & set(application.__all__) - set(PENDING_BYPASS))
    assert exported == [], f"the façade exports {exported}: front ends reach them through the Service"


def test_the_flow_scans_see_what_the_service_calls():
    assert {"ReplyFlow", "SyncFlow", "PublishFlow", "PollFlow", "SweepFlow", "ImportFlow"} <= flow_classes()
    assert {"build_queue", "propose_claim", "sync_tracker", "search_project", "search_mailbox"} <= service_entries()


def test_no_concrete_adapter_is_reexported():
    # backends/<package>/ is one adapter (imap, gmail, microsoft): a front end that needs one
    # of its parts calls an application function that hides it (flush_listing_caches).
    adapters = sorted(p.name for p in (ROOT / "backends").iterdir() if (p / "__init__.py").is_file())
    assert adapters, "no adapter package found under backends/"
    reexported = sorted(f"{name} from {module}" for name, (module, _) in run_time_exports().items()
                        if module.startswith(tuple(f"mailtriage.backends.{a}" for a in adapters)))
    assert reexported == []


#: The one module behind the façade a front end may import at run time: the error types, which
#: cli/exit_codes.py maps to exit codes one by one (application/errors.py re-exports them all).
ERROR_DOOR = "mailtriage.application.errors"
#: Front-end modules not held yet, with why (may only shrink).
PENDING_DOORS = {
    "tui/dialogs/compose.py": "application.crypto's editor folder; another brief's file this session (reply11)",
}


def doors_around_the_facade(*folders: str, root: Path = ROOT) -> list[str]:
    """``path:line module`` for each run-time import of a module behind the façade (outside ``if
    TYPE_CHECKING:``, where a type may come from its own module) in ``folders``."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            tree = parse(path)
            typing_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                           and ast.unparse(block.test) == "TYPE_CHECKING" for node in ast.walk(block)}
            for node in ast.walk(tree):
                if id(node) in typing_only:
                    continue
                if isinstance(node, ast.ImportFrom) and node.level == 0:
                    modules = [node.module or ""]
                elif isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                else:
                    continue
                found += [f"{path.relative_to(root).as_posix()}:{node.lineno} {module}" for module in modules
                          if module.startswith("mailtriage.application.") and module != ERROR_DOOR]
    return found


def test_front_ends_reach_the_application_layer_through_the_facade():
    # A name a front end took from the module behind the façade was one the façade's usage scan
    # never saw (tui took unconfigured_list from application.list_read, which the façade exports).
    around = [hit for hit in doors_around_the_facade(*FRONT_ENDS) if hit.partition(":")[0] not in PENDING_DOORS]
    assert around == [], f"import these from mailtriage.application (export them there): {around}"


def test_the_door_scan_skips_types_and_the_error_module(tmp_path):
    a_module(tmp_path, "tui",
        "from typing import TYPE_CHECKING\nfrom mailtriage.application.errors import UsageError\n"
        "if TYPE_CHECKING:\n    from mailtriage.application.queue import Queue\n\n\n"
        "def f():\n    from mailtriage.application.crypto import editor_folder\n")
    assert doors_around_the_facade("tui", root=tmp_path) == ["tui/x.py:8 mailtriage.application.crypto"]


#: What the service holds for the command line and never hands over: the project, its sources,
#: its tracker (``service.opened.run(…)`` was the command line's six mail operations once).
SERVICE_INSIDES = ("project", "opened", "sources", "tracker")
#: What opens a project or a tracker beside the service (the façade's names, and the modules).
OPENERS = ("open_tracker", "load_project", "Project")
OPENER_MODULES = ("mailtriage.trackers", "mailtriage.core.projectconfig", "mailtriage.application.project")


def behind_the_service(folder: str = "cli", root: Path = ROOT) -> list[str]:
    """``path:line what`` for each place in ``folder`` that reaches into the service (an
    attribute of :data:`SERVICE_INSIDES` on a name ending in ``service``), or opens a project or
    a tracker itself (a name of :data:`OPENERS` from the façade or :data:`OPENER_MODULES`, any
    import from the trackers)."""
    found = []
    for path in sorted((root / folder).rglob("*.py")):
        where = path.relative_to(root).as_posix()
        tree = parse(path)
        facade = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                  for alias in node.names if alias.name == "mailtriage.application"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in SERVICE_INSIDES \
                    and ast.unparse(node.value).split(".")[-1].lower().endswith("service"):
                found.append(f"{where}:{node.lineno} {ast.unparse(node)}")
            elif isinstance(node, ast.Attribute) and node.attr in OPENERS and ast.unparse(node.value) in facade:
                found.append(f"{where}:{node.lineno} {ast.unparse(node)}")
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                module = node.module or ""
                names = {alias.name for alias in node.names}
                opens = module.startswith(OPENER_MODULES + ("mailtriage.application",)) and names & set(OPENERS)
                if module.startswith("mailtriage.trackers") or opens:
                    found.append(f"{where}:{node.lineno} from {module} import {', '.join(sorted(names))}")
            elif isinstance(node, ast.Import):
                found += [f"{where}:{node.lineno} import {alias.name}" for alias in node.names
                          if alias.name.startswith(OPENER_MODULES)]
    return found


def test_the_command_line_calls_the_service_never_the_project_or_a_tracker():
    # The command line once ran the six mail operations, `list` and `sources` on service.opened
    # (the Project: project.run, project.sources.resolve, project.pgp.decrypt = False) and the
    # tracker CLI opened its tracker itself (application.open_tracker(application.load_project(…))):
    # what the service's locks and settings decide then held in the app only. Add a Service method.
    assert behind_the_service("cli") == []


def test_the_service_scan_sees_each_way_around_it(tmp_path):
    a_module(tmp_path, "cli",
        "import mailtriage.application as application\nfrom mailtriage.trackers.registry import open_tracker\n"
        "from mailtriage.core.projectconfig import ConfigError\n\n"
        "def f(args, service, self):\n    project = service.opened\n    self.service.project.run()\n"
        "    application.open_tracker(application.load_project(args.project))\n    return args.project, row.opened\n")
    assert sorted(behind_the_service("cli", root=tmp_path)) == [
        "cli/x.py:2 from mailtriage.trackers.registry import open_tracker", "cli/x.py:6 service.opened",
        "cli/x.py:7 self.service.project", "cli/x.py:8 application.load_project", "cli/x.py:8 application.open_tracker"]
