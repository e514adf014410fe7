"""The HTTP server (``gemrag serve``): a FastAPI app over one memory per namespace.

Modules, one concept each: :mod:`.app` (the app factory and routes), :mod:`.schemas` (request/response bodies),
:mod:`.serialize` (library results as those bodies), :mod:`.web` (the web page at ``/``), :mod:`.namespaces`
(namespace names and the memories behind them), :mod:`.jobs` (background index jobs with progress),
:mod:`.auth` (API keys and which namespaces each may use), :mod:`.errors` (gemrag errors as HTTP statuses).
Needs the ``serve`` extra (``pip install 'gemrag[serve]'``).
"""

from gemrag.server.app import create_app
from gemrag.server.auth import KeyRing, load_key_file

__all__ = ["KeyRing", "create_app", "load_key_file"]
