"""MkDocs hooks for the docs site (mkdocs.yml ``hooks:``).

The generated, committed ``diagrams/`` folder sits at the repository root, where
``handoff-fsm diagrams`` writes it and its drift test reads it. The site serves it
unchanged under ``diagrams/``: a page at the docs root links ``diagrams/statechart.svg``,
and ``diagrams/REVIEW.md`` (the design review) and the transition tables become pages
of the site. Nothing is copied into ``docs/``, so there is one copy to keep current.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
SERVED = ("diagrams",)


def on_files(files: Files, config: Any, **kwargs: Any) -> Files:
    """Add every file under each served folder, at the same path, to the site's files."""
    for folder in SERVED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file():
                files.append(
                    File(
                        path.relative_to(ROOT).as_posix(),
                        src_dir=str(ROOT),
                        dest_dir=config["site_dir"],
                        use_directory_urls=config["use_directory_urls"],
                    )
                )
    return files


def on_serve(server: Any, config: Any, builder: Any, **kwargs: Any) -> Any:
    """``mkdocs serve`` rebuilds when ``handoff-fsm diagrams`` rewrites a served folder."""
    for folder in SERVED:
        server.watch(str(ROOT / folder))
    return server
