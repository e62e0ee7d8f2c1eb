"""The dry run's screen over table rows: the lower-priority pods' columns against a recount.

Upstream SelectVictimsOnNode (default_preemption.go) first removes every pod of lower priority than the preemptor;
:class:`LowerPriorityColumns` keeps those pods' number and summed requests per row across cycles and refreshes the
rows whose NodeInfo generation changed. The property test adds and removes pods between syncs and requires the
columns to equal a recount for every threshold. The screen itself is held to the generic dry run by the property
tests of ``test_resource_only.py`` (``test_fast_dry_run_equals_the_generic_one``,
``test_find_candidates_over_table_rows_equals_the_generic_path``).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.plugins.preemption_screen import LowerPriorityCache
from tests.scheduler.resource_objects import GPU, resource_node, resource_pod

_step = st.tuples(
    st.sampled_from(["add", "remove"]),
    st.integers(0, 2),  # node
    st.integers(0, 4),  # priority
    st.sampled_from([100, 900]),
    st.sampled_from([0, 1]),
)


@settings(max_examples=150, deadline=None)
@given(batches=st.lists(st.lists(_step, max_size=4), max_size=6))
def test_lower_priority_columns_follow_the_nodes(batches: list[list[tuple[Any, ...]]]) -> None:
    nodes = [resource_node(f"n{i}") for i in range(3)]
    table = NodeTable(nodes)
    cache = LowerPriorityCache()
    count = 0
    for batch in batches:  # a batch: what changes between two scheduling cycles
        for op, n, priority, cpu, gpus in batch:
            node = nodes[n]
            if op == "add":
                node.add_pod(resource_pod(count, priority, cpu, gpus))
                count += 1
            elif node.pods:
                node.remove_pod(node.pods[0])
        table.sync()
        for threshold in (1, 3):
            cols = cache.columns(table, threshold)
            for row, node in enumerate(nodes):
                low = [p for p in node.pods if p.priority < threshold]
                assert cols.count[row] == len(low)
                for name in ("cpu", "memory", GPU):
                    assert cols.amount(name)[row] == sum(p.requests.get(name) for p in low)
