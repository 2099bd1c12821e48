"""Where bertfeat lives online, in one place: its repository, its issue tracker and its documentation's pages.

The docs are Markdown files in the repository's ``docs/`` folder, which neither the wheel nor the sdist holds: a
help text or docstring that says "see docs/ray.md" points a pip-installed user at nothing. So what users read names
a page by its address at the installed version's tag (the docs of another version describe another program).
pyproject.toml's ``[project.urls]`` and the R package's DESCRIPTION (``URL``, ``BugReports``) name the same addresses;
tests/test_packaging.py checks that they agree and that every page named exists. The README (the package index's
page, where a relative link leads nowhere) and R's help pages, which cannot read this module, write the addresses
out: at a new version, their tag changes with ``__version__`` (tests/test_packaging.py names each one left behind).
"""

from __future__ import annotations

import re

from bertfeat._version import __version__

REPOSITORY = "https://github.com/bertfeat/bertfeat"
ISSUES = REPOSITORY + "/issues"
DOCUMENTATION = REPOSITORY + "/tree/main/docs"  # the newest docs, for the package index's page

# a path to a page of the docs as the source names it: docs/ray.md, not some/docs/ray.md nor an address's .../docs/
_DOCS_PAGE = re.compile(r"(?<![\w./-])docs/([\w-]+\.md)\b")


def docs_url(page: str) -> str:
    """The address of ``page`` (``"ray.md"``) in the docs of this version of bertfeat (its tag, ``v<version>``)."""
    return f"{REPOSITORY}/blob/v{__version__}/docs/{page}"


def link_docs(text: str | None) -> str | None:
    """``text`` with each ``docs/<page>.md`` it names replaced by that page's address (:func:`docs_url`).

    For help texts and docstrings written with the path the repository's own readers follow. None (a docstring
    under ``python -OO``) stays None.
    """
    if text is None:
        return None
    return _DOCS_PAGE.sub(lambda m: docs_url(m.group(1)), text)


def with_doc_links(obj):
    """A decorator: the class or function with the docs its docstring names as addresses (:func:`link_docs`)."""
    obj.__doc__ = link_docs(obj.__doc__)
    return obj
