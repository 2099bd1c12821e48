"""bertfeat/links.py by value: which ``docs/<page>.md`` a help text or docstring names becomes that page's address
at this version's tag, and which text is left as it is. test_packaging.py checks every text users read against the
docs folder; these read the rewriting itself, one text at a time."""

from __future__ import annotations

import pytest

import bertfeat
from bertfeat import links

TAG = f"https://github.com/bertfeat/bertfeat/blob/v{bertfeat.__version__}/docs"


def test_docs_url_is_the_page_at_this_versions_tag():
    assert links.docs_url("ray.md") == f"{TAG}/ray.md"
    assert links.docs_url("cli-help.md") == f"{TAG}/cli-help.md"


@pytest.mark.parametrize("text, linked", [
    ("See docs/ray.md.", f"See {TAG}/ray.md."),
    ("(docs/defaults.md)", f"({TAG}/defaults.md)"),
    ("docs/cli-help.md's synopsis", f"{TAG}/cli-help.md's synopsis"),  # a page with a hyphen, at the text's start
    ("docs/cache.md#compaction", f"{TAG}/cache.md#compaction"),  # a section of the page kept after its address
    ("docs/ray.md and docs/spark.md", f"{TAG}/ray.md and {TAG}/spark.md"),  # every page named, each its own
    ("line one\ndocs/r.md", f"line one\n{TAG}/r.md"),
])
def test_a_docs_page_named_as_a_path_becomes_its_address(text, linked):
    assert links.link_docs(text) == linked


@pytest.mark.parametrize("text", [
    "some/docs/ray.md",  # another folder's docs
    "my-docs/ray.md",
    "./docs/ray.md",
    "~/.docs/ray.md",  # a hidden folder
    "mydocs/ray.md",
    f"{TAG}/ray.md",  # an address already: not linked twice
    "docs/ray.mdx",  # no Markdown page
    "docs/ray.txt",
    "docs/ray_md",
    "docs/img/plot.md",  # a page in a subfolder of docs is no page the docs folder holds
    "docs/.md",
    "no docs named here",
    "",
])
def test_text_naming_no_page_of_the_docs_folder_is_left_as_it_is(text):
    assert links.link_docs(text) == text


def test_no_docstring_stays_none():
    # python -OO strips docstrings: a decorated function's __doc__ is None, and stays None (not "None")
    assert links.link_docs(None) is None


def test_with_doc_links_rewrites_the_docstring_and_returns_the_same_object():
    def f():
        """Read docs/ray.md first."""

    class C:
        """See docs/cache.md."""

    def g():
        pass

    assert links.with_doc_links(f) is f and f.__doc__ == f"Read {TAG}/ray.md first."
    assert links.with_doc_links(C) is C and C.__doc__ == f"See {TAG}/cache.md."
    assert links.with_doc_links(g) is g and g.__doc__ is None
