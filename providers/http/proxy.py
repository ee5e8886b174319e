"""Which proxy the environment gives a URL, read with the standard library.

``HTTP_PROXY`` / ``HTTPS_PROXY`` (any case) and ``NO_PROXY`` mean what they mean
to ``urllib`` and to aiohttp's ``trust_env``, with two differences that protect
keys: a loopback target (localhost, 127.0.0.0/8, ::1) is never proxied, and the
route says when the hop to the proxy is plain http carrying a plain-http request,
so the transport can refuse to send a credential where anyone on the way reads it.
Like aiohttp, an ``https://`` proxy is not used (the request goes direct), and the
proxy's login comes from its URL's user info, else from ``~/.netrc`` (``NETRC``), and
stays in the proxy URL, where aiohttp's documented ``proxy=`` takes it.
"""

from __future__ import annotations

import netrc
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple
from urllib.request import getproxies, proxy_bypass

from orchestrator.secrets import has_url_credentials, is_credential_header, is_loopback

if TYPE_CHECKING:
    from yarl import URL

__all__ = ["DIRECT", "ProxyRefused", "ProxyRoutes", "Route", "env_route"]


class Route(NamedTuple):
    """How one URL is reached: through ``proxy`` (None: direct; its login, if any, as
    user info); ``clear`` when a credential sent this way would cross a plain-http
    proxy hop."""

    proxy: URL | None
    clear: bool


DIRECT = Route(None, False)


def env_route(url: str) -> Route:
    """The environment's route for ``url``, decided now (the caller caches it per URL)."""
    from yarl import URL

    target = URL(url)
    host = target.host
    if not host or is_loopback(host) or proxy_bypass(host):
        return DIRECT
    given = getproxies().get(target.scheme)
    if not given:
        return DIRECT
    proxy = URL(given)
    if proxy.scheme != "http":  # aiohttp speaks to http proxies only
        return DIRECT
    if proxy.user is None and proxy.password is None and proxy.host:
        login = _netrc_login(proxy.host)
        if login is not None:
            proxy = proxy.with_user(login[0]).with_password(login[1])
    clear = target.scheme == "http" and not is_loopback(proxy.host or "")
    return Route(proxy, clear)


def _netrc_login(host: str) -> tuple[str, str] | None:
    """The proxy's login from the netrc file (``NETRC`` or ``~/.netrc``), if it has one."""
    try:
        entry = netrc.netrc(os.environ.get("NETRC") or None).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return None
    if entry is None:
        return None
    login, account, password = entry
    return (login or account or "", password or "")


class ProxyRefused(Exception):
    """A request carrying credentials would cross a plain-http proxy hop to an http target;
    transports raise it as a refused ``TransportError`` (retrying cannot help)."""


class ProxyRoutes:
    """The environment's proxy route per URL (decided once per URL, at most 1,024 kept),
    for a transport built while a proxy variable is set (aiohttp's and reqwest's)."""

    __slots__ = ("_routes",)

    def __init__(self) -> None:
        self._routes: dict[str, Route] = {}

    def route(self, url: str) -> Route:
        """The route for ``url`` (:func:`env_route`, cached)."""
        routes = self._routes
        route = routes.get(url)
        if route is None:
            if len(routes) > 1024:
                routes.clear()
            route = routes[url] = env_route(url)
        return route

    def checked(self, url: str, headers: Mapping[str, str]) -> Route:
        """The route for ``url``; :class:`ProxyRefused` when the request carries credentials
        and would cross a plain-http proxy hop to an http target."""
        route = self.route(url)
        if route.clear and (
            has_url_credentials(url) or any(is_credential_header(h) for h in headers)
        ):
            raise ProxyRefused(
                f"refused to send credentials to an http:// URL through the plain-http proxy "
                f"{route.proxy.host if route.proxy else ''} (from HTTP_PROXY/ALL_PROXY), where "
                "anyone on the way can read them: use an https:// URL, an https or loopback "
                "proxy, or add the host to NO_PROXY"
            )
        return route
