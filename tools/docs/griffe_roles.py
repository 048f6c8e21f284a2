"""A griffe extension for the API reference: Sphinx roles in docstrings become links.

The docstrings cross-reference with Sphinx roles (:class:`~handoff_fsm.policy.SessionPolicy`,
:func:`.describe_chart`). MkDocs reads docstrings as Markdown, which would show the role
as text. This rewrites each role as an *optional* mkdocs-autorefs reference: a link where
the API reference documents the target, plain code where it does not (no warning, so
``mkdocs build --strict`` stays meaningful for the references the pages write).

- ``~a.b.c`` shows ``c``; ``a.b.c`` shows ``a.b.c``; ``.c`` and a bare ``c`` are looked up
  in the module the docstring belongs to (Sphinx's own rules, simplified).
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const|type):`([^`]+)`")


def _module_path(obj: griffe.Object) -> str:
    return obj.path if obj.is_module else obj.module.path


def rewrite(text: str, module: str) -> str:
    """``text`` with every Sphinx role replaced by an optional autorefs reference."""

    def replace(match: re.Match[str]) -> str:
        target = match[1].strip()
        explicit = re.fullmatch(r"(.*?)\s*<(.+)>", target)  # :class:`title <a.b>`
        if explicit:
            title, target = explicit[1], explicit[2]
        else:
            title = target.lstrip("~.").rsplit(".", 1)[-1] if target.startswith("~") else target
            title = title.lstrip(".")
        target = target.lstrip("~")
        if target.startswith("."):
            target = module + target
        elif "." not in target:
            target = f"{module}.{target}"
        return (
            f'<autoref identifier="{html.escape(target)}" optional>'
            f"<code>{html.escape(title)}</code></autoref>"
        )

    return ROLE.sub(replace, text)


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles in every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value, _module_path(obj))
