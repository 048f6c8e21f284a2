"""``python -m handoff_fsm`` is the ``handoff-fsm`` command."""

from handoff_fsm.cli import main

raise SystemExit(main())
