"""The Bokeh server of ``ctsne explore``: 127.0.0.1 only, every request needs the token.

The token is a random string in the URL printed at start (as Jupyter does). The first
request that carries it as ``?token=`` gets it back as an HttpOnly, SameSite=Strict
cookie, which the page's own requests (BokehJS from ``/static``, the websocket) then
carry. A request with neither gets 403: the check is the first rule of the tornado
router, so it covers every handler Bokeh installs, the websocket included. BokehJS is
served by this server from the Bokeh package (never a CDN), so the page works offline.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import socket
import threading
from collections.abc import Callable
from http.cookies import SimpleCookie
from urllib.parse import parse_qs, urlsplit

__all__ = ["ExploreServer", "free_port", "message_cap"]

APP_PATH = "/explore"
# The largest websocket message the server reads. What the page sends is small (widget
# values, box and lasso outlines) except a selection: the indices of up to ``max_points``
# drawn points, about 7 bytes each as JSON. Tornado buffers a whole message before
# Bokeh sees it, so a cap of 1 GiB let one message from the page take that much memory.
MESSAGE_FLOOR = 8 << 20      # bytes: every selection of the default 200,000 points fits
MESSAGE_PER_POINT = 16       # bytes per drawn point: twice a selected index's JSON


def message_cap(max_points: int) -> int:
    """The websocket message cap for a page that draws up to ``max_points`` points.

    Parameters
    ----------
    max_points : int
        The most points the page draws (a selection sends their indices).

    Returns
    -------
    int
        Bytes: room for a selection of all of them, at least :data:`MESSAGE_FLOOR`.
    """
    return max(MESSAGE_FLOOR, MESSAGE_PER_POINT * int(max_points) + (1 << 20))


def free_port(address: str = "127.0.0.1") -> int:
    """A port that is free on ``address`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def _token_of(request, cookie_name: str) -> str | None:
    query = parse_qs(urlsplit(request.uri).query)
    if "token" in query:
        return query["token"][0]
    header = request.headers.get("Cookie")
    if header:
        jar = SimpleCookie()
        try:
            jar.load(header)
        except Exception:  # a malformed cookie header is no token
            return None
        if cookie_name in jar:
            return jar[cookie_name].value
    return None


class ExploreServer:
    """A Bokeh server for one document factory, running in its own thread.

    Parameters
    ----------
    make_document : callable(doc)
        Fills a new Bokeh document (one per browser tab).
    port : int, optional
        Default: a free port.
    token : str, optional
        Default: ``secrets.token_urlsafe(24)``.
    max_message_size : int, optional
        Largest websocket message read from a page, in bytes (default: what
        :func:`message_cap` allows for 200,000 drawn points); a larger one closes the
        connection.
    """

    def __init__(self, make_document: Callable, port: int | None = None,
                 token: str | None = None, max_message_size: int | None = None):
        self.address = "127.0.0.1"
        self.port = int(port) if port else free_port(self.address)
        self.token = token or secrets.token_urlsafe(24)
        self.cookie_name = f"ctsne_token_{self.port}"  # cookies do not tell ports apart
        self._make_document = make_document
        self.max_message_size = int(max_message_size or message_cap(200_000))
        if self.max_message_size <= 0:
            raise ValueError(f"max_message_size must be positive, got {max_message_size}")
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, name="ctsne-explore-server",
                                        daemon=True)

    @property
    def url(self) -> str:
        """The page's address, token included."""
        return f"http://{self.address}:{self.port}{APP_PATH}?token={self.token}"

    def start(self) -> ExploreServer:
        self._thread.start()
        self._ready.wait(60)
        if self._error is not None:
            raise OSError(f"cannot serve on {self.address}:{self.port}: {self._error}")
        return self

    def stop(self) -> None:
        """Stop serving (idempotent)."""
        loop = getattr(self, "_loop", None)
        if loop is not None and self._thread.is_alive():
            loop.add_callback(self._shutdown)
            self._thread.join(10)

    def _shutdown(self) -> None:
        self._server.stop()
        self._loop.stop()

    def _token_ok(self, request) -> bool:
        given = _token_of(request, self.cookie_name)
        return given is not None and hmac.compare_digest(given, self.token)

    def _serve(self) -> None:
        try:
            asyncio.set_event_loop(asyncio.new_event_loop())
            from tornado.ioloop import IOLoop

            self._loop = IOLoop.current()
            self._server = self._build()
            self._server.start()
        except BaseException as exc:  # reported by start() in the caller's thread
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.start()
        self._loop.close(all_fds=True)

    def _build(self):
        from bokeh.application import Application
        from bokeh.application.handlers.function import FunctionHandler
        from bokeh.resources import Resources
        from bokeh.server.server import Server
        from bokeh.server.views.static_handler import StaticHandler
        from tornado.routing import Matcher, Rule
        from tornado.web import ErrorHandler, OutputTransform

        outer = self

        class NoToken(Matcher):
            """Matches (and so answers 403 to) every request without the right token."""

            def match(self, request):
                return None if outer._token_ok(request) else {}

        class SetCookie(OutputTransform):
            """Hands the token from the URL back as a cookie for the page's own requests."""

            def __init__(self, request):
                self._set = "token" in parse_qs(urlsplit(request.uri).query) and \
                    outer._token_ok(request)

            def transform_first_chunk(self, status_code, headers, chunk, finishing):
                if self._set:
                    headers.add("Set-Cookie", f"{outer.cookie_name}={outer.token}; Path=/; "
                                "HttpOnly; SameSite=Strict")
                return status_code, headers, chunk

        server = Server({APP_PATH: Application(FunctionHandler(self._make_document))},
                        address=self.address, port=self.port, io_loop=self._loop,
                        allow_websocket_origin=[f"{self.address}:{self.port}",
                                                f"localhost:{self.port}"],
                        websocket_max_message_size=self.max_message_size)
        app = server._tornado
        router = app.default_router
        router.rules.insert(0, router.process_rule(
            Rule(NoToken(), ErrorHandler, {"status_code": 403})))
        app.transforms.append(SetCookie)
        # BokehJS from this server, whatever BOKEH_RESOURCES says (the machine may be
        # offline, and nothing may come from a CDN)
        app.resources = lambda absolute_url=None: Resources(
            mode="server", root_url="/", path_versioner=StaticHandler.append_version)
        return server
