"""HTTP POSTs over kept-alive connections, one per worker thread (the standard library's http.client).

Why not a bigger client: http.client keeps a connection open across requests (no TLS handshake per
text, which would add its latency to every request and so cut the quota's throughput), is safe when
each thread owns its connection, and logs nothing, so the API key in the query string never reaches
a log. A connection that failed is closed and the next request opens a new one. An https address
goes through the proxy that $https_proxy names (a CONNECT tunnel, as urllib would; $no_proxy
respected).
"""

from __future__ import annotations

import http.client
import ssl
import threading
import urllib.parse
import urllib.request

# what a try can fail with on the way (refused, reset, dropped, timed out, a broken reply): retried
NETWORK_ERRORS = (OSError, http.client.HTTPException)


class Transport:
    def __init__(self, url: str, timeout: float):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"Perspective address {url!r}: give an http:// or https:// URL ($PERSPECTIVE_API_URL)")
        self.scheme, self.host, self.port = parts.scheme, parts.hostname, parts.port
        self.path = parts.path or "/"
        self.timeout = timeout
        self.local = threading.local()
        self.lock = threading.Lock()
        self.open: list[http.client.HTTPConnection] = []
        self.generation = 0  # close() starts a new one: connections of an older one are not reused

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self.local, "conn", None)
        if conn is None or getattr(self.local, "generation", None) != self.generation:
            proxy = urllib.request.getproxies().get("https") if self.scheme == "https" else None
            if proxy and not urllib.request.proxy_bypass(self.host):
                via = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
                conn = http.client.HTTPSConnection(via.hostname, via.port or 8080, timeout=self.timeout,
                                                   context=ssl.create_default_context())
                conn.set_tunnel(self.host, self.port)
            elif self.scheme == "https":
                conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout,
                                                   context=ssl.create_default_context())
            else:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self.local.conn, self.local.generation = conn, self.generation
            with self.lock:
                self.open.append(conn)
        return conn

    def post(self, query: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """(status, headers with lower-case names, body) of POST path?query; a NETWORK_ERRORS
        exception when the connection fails (the connection is then dropped)."""
        conn = self._connection()
        try:
            conn.request("POST", f"{self.path}?{query}", body=body,
                         headers={"Content-Type": "application/json", "Content-Length": str(len(body))})
            resp = conn.getresponse()
            data = resp.read()
            headers = {k.lower(): v for k, v in resp.getheaders()}
            if resp.will_close:
                conn.close()
            return resp.status, headers, data
        except BaseException:
            self._drop(conn)
            raise

    def _drop(self, conn) -> None:
        conn.close()
        self.local.conn = None
        with self.lock:
            if conn in self.open:
                self.open.remove(conn)

    def close(self) -> None:
        with self.lock:
            conns, self.open = self.open, []
            self.generation += 1
        for conn in conns:
            conn.close()
