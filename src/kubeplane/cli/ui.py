"""``kubeplane ui``: the web UI on its own, against any cluster's API (``--kubeconfig``) or over simulation
output directories only (``--runs DIR``); docs/ui.md.

The same :class:`~kubeplane.ui.UIApp` that ``kubeplane up`` mounts in its API server, served over HTTPS on
127.0.0.1 (``--address`` says otherwise) with a self-signed certificate kept in ``--data-dir``. With
``--kubeconfig`` its API is :class:`~kubeplane.ui.remote.RemoteAPI`: every request goes to that kubeconfig's
server with the logged-in user's token (the kubeconfig gives the server and its CA, never the identity). With
``--runs`` alone there is no API: a random token is printed with the URL (as Jupyter does) and is the only one
the login page accepts (:class:`~kubeplane.ui.runsonly.NoAPI`).

Invariants: no kubeconfig is read unless ``--kubeconfig`` names it (not ``$KUBECONFIG``, not ~/.kube/config:
a UI must not quietly drive a cluster the user did not point it at); every bad flag is one line on stderr and
exit code 1.
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import sys
from pathlib import Path
from typing import Annotated

import typer

DEFAULT_PORT = 8443


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def ui(
    kubeconfig: Annotated[
        Path | None,
        typer.Option("--kubeconfig", help="The cluster whose API the UI shows (only this file is ever read)."),
    ] = None,
    context: Annotated[
        str | None, typer.Option("--context", help="The kubeconfig's context (default: its current-context).")
    ] = None,
    runs: Annotated[
        Path | None, typer.Option("--runs", help="A directory of `kubeplane sim` output to browse.")
    ] = None,
    address: Annotated[
        str, typer.Option("--address", help="IP address to listen on (default loopback only).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port; 0 picks a free one.")] = DEFAULT_PORT,
    data_dir: Annotated[
        Path, typer.Option("--data-dir", help="State directory: the UI's self-signed serving certificate.")
    ] = Path(".kubeplane") / "ui",
    scheduler_config: Annotated[
        Path | None,
        typer.Option("--scheduler-config", help="KubeSchedulerConfiguration the pod view explains with."),
    ] = None,
) -> None:
    """Serve the web UI on its own: a cluster's API (--kubeconfig), simulation runs (--runs), or both."""
    from kubeplane.apiserver.tls import ensure_serving_certs
    from kubeplane.client.errors import ClientError
    from kubeplane.client.kubeconfig import load_kubeconfig
    from kubeplane.ui import UIApp
    from kubeplane.ui.loopback import ASGIApp
    from kubeplane.ui.remote import RemoteAPI, Upstream
    from kubeplane.ui.runsonly import NoAPI, new_token
    from kubeplane.ui.standalone import ServeError, Standalone, listen, serve

    if kubeconfig is None and runs is None:
        _fail("give --kubeconfig FILE (a cluster's API), --runs DIR (simulation runs), or both")
    if context is not None and kubeconfig is None:
        _fail("--context needs --kubeconfig")
    if not 0 <= port <= 65535:
        _fail(f"--port must be between 0 and 65535, not {port}")
    try:
        loopback = ipaddress.ip_address(address).is_loopback
    except ValueError:
        _fail(f"--address must be an IP address, not {address!r}")
        raise  # unreachable: _fail exits
    if runs is not None and not runs.is_dir():
        _fail(f"--runs {runs}: not a directory")
    sched_config = None
    if scheduler_config is not None:
        from kubeplane.scheduler.config import ConfigError, load_config

        try:
            sched_config = load_config(scheduler_config)
        except ConfigError as exc:
            _fail(f"invalid scheduler configuration {scheduler_config}: " + "; ".join(exc.errors))
    login_token: str | None = None
    lines: list[str] = []
    if kubeconfig is not None:
        if not kubeconfig.is_file():
            _fail(f"kubeconfig {kubeconfig} does not exist")
        try:
            config = load_kubeconfig(kubeconfig, context=context)
        except (ClientError, OSError) as exc:
            _fail(str(exc))
            raise  # unreachable: _fail exits
        api: ASGIApp = RemoteAPI(Upstream(config.server, ca_data=config.ca_data, insecure=config.insecure))
        lines.append(f"API: {config.server} (log in with a bearer token of that cluster: the kubeconfig's, or a")
        lines.append("     ServiceAccount's from `kubectl create token NAME`)")
        if config.client_cert_data:
            lines.append("note: the kubeconfig's client certificate is not used; each user acts with their own token")
    else:
        login_token = new_token()
        api = NoAPI(login_token)
        lines.append(f"log in with the token: {login_token}")
        lines.append("(no --kubeconfig: only the simulation runs are served)")
    if not loopback:
        lines.append(f"warning: listening on {address}, beyond this machine")
    from kubeplane.cli.explain_parts import ui_parts

    app = Standalone(UIApp(api, scheduler_config=sched_config, runs_dir=runs, explain_parts=ui_parts(sched_config)))
    try:
        sock = listen(address, port)
    except ServeError as exc:
        _fail(str(exc))
        raise  # unreachable: _fail exits
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    certs = ensure_serving_certs(data_dir)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)

    def ready(url: str) -> None:
        typer.echo(f"web UI: {url}", err=True)
        for line in lines:
            typer.echo(line, err=True)

    # uvicorn handles SIGINT/SIGTERM itself (graceful shutdown) and re-raises the signal when done; this
    # handler receives that re-raise so the process exits 0 (as `kubeplane apiserver`).
    signal.signal(signal.SIGTERM, lambda _sig, _frame: None)
    try:
        import uvloop

        uvloop.run(serve(app, sock, certfile=certs.cert, keyfile=certs.key, on_ready=ready))
    except KeyboardInterrupt:
        pass
