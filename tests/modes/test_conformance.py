"""The conformance flows, each run against the real endpoint over loopback in its role.

MAS-MODES-EMAIL-MASTER: every flow in conformance/flows/master passes.
MAS-MODES-EMAIL-SLAVE: every flow in conformance/flows/slave passes.
"""

from __future__ import annotations


import pytest

from tests.modes.conformance_data import CONFORMANCE, load_yaml
from tests.modes.flowrunner import FlowRunner

FLOWS = CONFORMANCE / "flows"


def load_flows() -> list:
    params = []
    for path in sorted(FLOWS.glob("*/*.yaml")):
        flow = load_yaml(path)
        assert flow["role"] == path.parent.name, f"{path}: role {flow['role']} in the {path.parent.name} folder"
        flow.setdefault("name", path.stem)
        params.append(pytest.param(flow, id=f"{path.parent.name}/{path.stem}"))
    return params


@pytest.mark.parametrize("flow", load_flows())
def test_flow(flow, make_harness):
    config = flow.get("config", {})
    harness = make_harness(flow["role"], types=config.get("types"), send=config.get("send"), http=config.get("http"))
    FlowRunner(harness, flow).run()
