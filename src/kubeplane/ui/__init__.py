"""The web UI, served by the API server at ``/ui/`` (issue 24; docs/ui.md, docs/architecture.md).

The UI is an ASGI application mounted in front of the API server's (:class:`~kubeplane.ui.app.UIApp`). It never
reads the registry: every object it shows or changes goes through the Kubernetes API, in-process, with the
bearer token the user logged in with, so the API's authentication (and later its authorization) applies to
every UI action exactly as to kubectl's. Its pages are plain HTML, CSS and ES modules served as files
(``static/``, package data): no build step, no external request.
"""

from .app import UIApp, mount

__all__ = ["UIApp", "mount"]
