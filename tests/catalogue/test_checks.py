"""One test per pre-launch check file, generated from diagnostics/checks/: its examples behave as declared,
its playbooks exist, its words are there; and the checks together cover what the pre-launch verdict must
name."""

from __future__ import annotations

import pytest

from sparktui.core.inventory import rules
from sparktui.core.remedy.playbook import load_all

CHECKS = tuple(r for r in rules.builtin() if r.advisory is None)  # advisories: test_advisories.py
BOOKS = set(load_all())
#: Checks whose remedy is a person's (a node that does not answer): no playbook can reach it.
#: The fabric's addresses and MTUs (issue 28) are set on the nodes' network devices, by a person; the NCCL_IB_*
#: a launch runs with are set per node by set-nccl-ib-per-node.
BY_HAND = {"node-unreachable", "rdma-no-shared-ipv4-gid", "rdma-mtu-differs"}
#: What the pre-launch check must name (issue 16), by check id.
NAMED = {
    "launch-world-size-exceeds-node-gpus",  # tp x pp larger than one node's GPUs, without Ray or --nnodes
    "ray-cluster-too-few-gpus",
    "drift-ray-version",
    "drift-python-version",
    "drift-engine-version",
    "drift-nccl",
    "image-missing",
    "model-missing",
    "model-arch-unknown-to-vllm",
    "model-type-unknown-to-transformers",
    "iface-nccl-socket-missing",
    "iface-gloo-socket-missing",
    "port-in-use",
    "shm-too-small",
    "launch-relies-on-executor-default",
    "rdma-hca-not-active",  # issue 28: the RDMA fabric
    "rdma-no-shared-ipv4-gid",
    "rdma-gid-index-pinned-wrong",
    "rdma-gid-index-empty",
    "rdma-mtu-differs",
    "rdma-none",
    "rdma-port-subnets-differ",
    "rdma-one-rail-of-two",
}


@pytest.mark.parametrize("rule", CHECKS, ids=[r.id for r in CHECKS])
def test_check_examples_and_playbooks(rule: rules.Rule) -> None:
    assert rules.check_examples(rule, BOOKS) == []


@pytest.mark.parametrize("rule", CHECKS, ids=[r.id for r in CHECKS])
def test_check_words(rule: rules.Rule) -> None:
    assert len(rule.what) > 30 and len(rule.why) > 30, rule.id
    assert rule.title.strip() == rule.title and not rule.title.endswith(".")
    if rule.verdict != "advice" and rule.id not in BY_HAND:
        assert rule.playbooks, f"{rule.id}: a check that blocks or slows names a remedy"


def test_the_named_checks_exist() -> None:
    assert {r.id for r in CHECKS} >= NAMED
