"""The two engines that run :class:`~handoff_fsm.chart.HandoffChart`: ``compiled`` (a table
generated from the chart, the default) and ``statechart`` (python-statemachine's interpreter).
"""
