"""The memory view (``gemrag view``): one self-contained offline HTML page showing the graph a strategy published
in a memory, coloured by the strategy's themes (GEM's eigenthemes), with a retrieval's path highlighted.

Modules: :mod:`gemrag.view.data` (what to draw, read through the store API; the themes come from the strategy's
optional ``themes``, GEM's dominant eigentheme per chunk being :mod:`gemrag.strategies.gem.themes`, paper III.B.1),
:mod:`gemrag.view.render` (the HTML page; template, script and style are package data beside it).
"""

from gemrag.view.data import RetrievalPath, ViewData, retrieval_path, view_data
from gemrag.view.render import render_html, write_html

__all__ = ["RetrievalPath", "ViewData", "render_html", "retrieval_path", "view_data", "write_html"]
