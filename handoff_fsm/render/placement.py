"""Where each part of the statechart goes in its DOT: Graphviz's invisible constraints.

Rule kept here: nothing placed here is drawn. This module only says where the
:class:`~handoff_fsm.render.dot` writer's states go (invisible edges, ``rank=same``
groups, and the nodes transitions attach to), never what a state or transition looks
like, so the side-by-side layout and the stacked one (see :mod:`~handoff_fsm.render.dot`)
place the same chart, drawn the same way.
"""

from __future__ import annotations

import itertools
from typing import Any

from handoff_fsm.structure.describe import ChartModel, Edge, EdgeKind, StateKind, StateNode


def cluster_name(state_id: str) -> str:
    """The Graphviz cluster that draws a compound or parallel state."""
    return f"cluster_{state_id}"


def order_node(state_id: str) -> str:
    """The invisible node atop a parallel state that orders its regions (side by side,
    or the first one below it when stacked)."""
    return f"__order_{state_id}__"


def initial_node(state_id: str) -> str:
    """The initial marker (a dot) atop a compound state's first state."""
    return f"__initial_{state_id}__"


def via(edge: Edge) -> str:
    """The node that holds a transition's label (see :mod:`~handoff_fsm.render.dot`)."""
    return f"__via_{edge.index}__"


class Placement:
    """Where ``model``'s states go: regions side by side, or ``stacked`` one under the
    other (see :mod:`~handoff_fsm.render.dot`'s layout)."""

    def __init__(self, model: ChartModel, *, stacked: bool) -> None:
        self.model = model
        self.stacked = stacked

    def phases(self) -> list[StateNode]:
        """The top-level states drawn as clusters, in document order."""
        return [self.model.state(s) for s in self.model.top_level if self.model.state(s).is_cluster]

    def regions(self, phase: StateNode) -> list[StateNode]:
        children = self.model.children(phase.id)
        return (
            [c for c in children if c.is_cluster] if phase.kind is StateKind.PARALLEL else [phase]
        )

    def bottom(self, region: StateNode) -> str:
        """The leaf drawn lowest in a region column: its first final state, else its last."""
        leaves = [c for c in self.model.children(region.id) if not c.is_cluster]
        finals = [leaf for leaf in leaves if leaf.final]
        return (finals[0] if finals else leaves[-1]).id

    def _ends(self, region: StateNode) -> list[str]:
        """The leaves a region column ends at: its lowest, and every other one no
        transition leaves (a final state such as ``untouched``)."""
        left = {
            edge.source
            for edge in self.model.edges
            if edge.kind is not EdgeKind.REJECTION and edge.target != edge.source
        }
        bottom = self.bottom(region)
        leaves = [c.id for c in self.model.children(region.id) if not c.is_cluster]
        return [bottom, *(leaf for leaf in leaves if leaf not in left and leaf != bottom)]

    def _start(self, region: StateNode) -> str:
        """The node atop a region column: its initial marker, else its first state."""
        if any(c.initial for c in self.model.children(region.id)):
            return initial_node(region.id)
        return self.top(region)

    def top(self, state: StateNode) -> str:
        """The node at the top of a cluster: its region-ordering node, or its first state."""
        return order_node(state.id) if state.kind is StateKind.PARALLEL else self.anchor_in(state)

    def arrange(self, g: Any) -> None:
        """Regions side by side, phases stacked, ``complete`` beside the last phase (when
        stacked: regions stacked too, ``complete`` below the last phase).

        Every constraint is an invisible edge or a ``rank=same`` group, so the
        picture shows only the chart; they only tell Graphviz where things go.
        """
        if self.stacked:
            self._arrange_stacked(g)
            return
        phases = self.phases()
        for upper, lower in itertools.pairwise(phases):
            # The lower phase starts below every region of the upper one.
            target = self._joint(upper, lower)
            for region in self.regions(upper):
                g.edge(self.bottom(region), target, style="invis")
        if not phases:
            return
        last = phases[-1]
        bottoms = [self.bottom(region) for region in self.regions(last)]
        # Final top-level states sit on the last phase's bottom rank, to its right; other
        # top-level states (a976b2bf's decoding) stack above them through their edges.
        finals = [
            s
            for s in self.model.top_level
            if not self.model.state(s).is_cluster and self.model.state(s).final
        ]
        self._row(g, [*bottoms, *finals])

    def _joint(self, upper: StateNode, lower: StateNode) -> str:
        """Where the phase ``lower`` starts below ``upper``: at the label of the transition
        between them when there is one, else at its top."""
        joints = [
            via(edge)
            for edge in self.model.edges
            if (edge.source, edge.target) == (upper.id, lower.id)
        ]
        return joints[0] if joints else self.top(lower)

    def _arrange_stacked(self, g: Any) -> None:
        """Each parallel state's regions one under the other, in document order, the
        phases below one another, final top-level states below the last phase."""
        for state in self.model.states:
            if state.kind is StateKind.PARALLEL:
                # The first region hangs below the node atop the state, each next one
                # below every leaf the one above it ends at.
                above = [order_node(state.id)]
                for region in self.regions(state):
                    for node in above:
                        g.edge(node, self._start(region), style="invis")
                    above = self._ends(region)
        phases = self.phases()
        for upper, lower in itertools.pairwise(phases):
            # The lower phase starts below the upper one's last (lowest) region.
            target = self._joint(upper, lower)
            for end in self._ends(self.regions(upper)[-1]):
                g.edge(end, target, style="invis")
        if not phases:
            return
        # Final top-level states below the last phase; the others (a976b2bf's decoding)
        # beside the phases, where their transitions lead.
        bottom = self.anchor_out(phases[-1])
        for state_id in self.model.top_level:
            state = self.model.state(state_id)
            if state.final and not state.is_cluster:
                g.edge(bottom, state_id, style="invis")

    @staticmethod
    def _row(g: Any, nodes: list[str]) -> None:
        """``nodes`` on one rank, left to right in this order."""
        with g.subgraph() as row:
            row.attr(rank="same")
            for node in nodes:
                row.node(node)
        for left, right in itertools.pairwise(nodes):
            g.edge(left, right, style="invis")

    def anchor_in(self, state: StateNode) -> str:
        """An atomic state inside ``state`` to attach cluster edges to (its initial path)."""
        while state.is_cluster:
            children = self.model.children(state.id)
            state = next((c for c in children if c.initial), children[0])
        return state.id

    def descent(self, phase: StateNode) -> str:
        """Where a transition down to the next phase leaves ``phase``: the bottom of its
        leftmost region side by side, of its lowest one stacked."""
        regions = self.regions(phase)
        return self.bottom(regions[-1] if self.stacked else regions[0])

    def anchor_out(self, state: StateNode) -> str:
        """Where a transition leaving a cluster starts: the bottom of its last region.

        The last region's column is the one beside ``complete`` (see :meth:`arrange`);
        stacked, it is the lowest region, above ``complete``.
        """
        return state.id if not state.is_cluster else self.bottom(self.regions(state)[-1])
