"""What the project's one-file HTML pages share: their policy, their frame, their step controls.

Rule kept here: a page is one file that fetches nothing. Its style sheets, its data (JSON
in a ``<script type="application/json">``, safe whatever its strings hold) and its
script are inline, and its Content-Security-Policy (:data:`POLICY`) forbids every
request, so it opens from an e-mail or a CI artifact as it does here. The frame (header
with the step controls, main part, footer with its legend), the shared style sheet
(``page.css``) and the shared script (``stepper.js``: elements, a chart's marks, the
step controls, the address) are made here once, for the inspector
(:mod:`~handoff_fsm.render.inspector`) and the diff page
(:mod:`~handoff_fsm.render.diffpage`) alike; each page brings only its own parts.
"""

from __future__ import annotations

import html
import json
from importlib.resources import files
from typing import Any, Final

from handoff_fsm.render.style import css_variables

POLICY: Final = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)
"""The page may run its own inline script and style and fetch nothing, not even by mistake."""
SHARED_STYLE: Final = "page.css"
SHARED_SCRIPT: Final = "stepper.js"

STEP_CONTROLS: Final = """<div class="controls">
<button id="first" type="button" title="first step (Home)">⇤</button>
<button id="prev" type="button" title="previous step (←)">←</button>
<input id="slider" type="range" min="0" max="0" value="0" aria-label="step">
<button id="next" type="button" title="next step (→)">→</button>
<button id="last" type="button" title="last step (End)">⇥</button>
<span id="position"></span>
</div>"""
"""The buttons, slider and position every stepping page has (``stepper.js`` wires them)."""


def asset(name: str) -> str:
    """A style sheet or script shipped beside this module (package data)."""
    return files("handoff_fsm.render").joinpath(name).read_text(encoding="utf-8")


def json_script(value: Any) -> str:
    """JSON that can sit inside a ``<script>`` element whatever its strings hold."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def swatch(kind: str, words: str) -> str:
    """A legend entry of the footer: a swatch of class ``kind`` (``page.css``) and its words."""
    return f'<span><span class="swatch {kind}"></span>{html.escape(words)}</span>'


def one_file_page(
    *,
    title: str,
    generator: str,
    style: str,
    script: str,
    header: str,
    main: str,
    footer: str,
    data_id: str,
    data: Any,
    extra: str = "",
) -> str:
    """The page: ``title`` (text, escaped here), ``generator`` (the command that wrote it),
    its own style sheet and script (asset names, after the shared ones), the inner HTML of
    its header, main part and footer, its data as JSON under ``data_id``, and ``extra``
    (templates, say) before the data."""
    name = html.escape(title)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{POLICY}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="{html.escape(generator)}">
<title>{name} · {html.escape(generator)}</title>
<style>
{css_variables(":root")}
{asset(SHARED_STYLE)}
{asset(style)}
</style>
</head>
<body>
<header>
{header}
</header>
<main>
{main}
</main>
<footer>
{footer}
</footer>
{extra}
<script type="application/json" id="{data_id}">{json_script(data)}</script>
<script>
{asset(SHARED_SCRIPT)}
{asset(script)}
</script>
</body>
</html>
"""
