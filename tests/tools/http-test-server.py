#!/usr/bin/env python3
"""A small HTTP/1.1 server for the http sink's tests: records every request (method,
path, headers, body, arrival time, answer) as one JSON line, and misbehaves on demand.
What to do is in the path, so that tests running side by side cannot disturb each other:

  /fail/<n>/<status>/<rest>      the first n requests for this path answer <status>, then 200
  /always/<status>/<rest>        always <status> (body: "refused <rest>")
  /failpage/<n>/<status>/<rest>  as /fail/, with an HTML error page of several lines as body
  /echo/<status>/<rest>          always <status>, the body quoting the request's headers (as
                                 servers that echo what they refused do)
  /throttle/<n>/<secs>/<rest>    the first n answer 429 with Retry-After: <secs>, then 200
  /sleep/<ms>/<n>/<rest>         the first n sleep <ms> before answering 200
  /hold/<v>/<ms>/<rest>          the first request whose <rest> starts with segment <v>
                                 sleeps <ms> (one slow record among many paths)
  /garbage/<n>/<rest>            the first n get bytes that are not HTTP, then 200
  anything else                  200 {"ok":true}

  http-test-server.py --log requests.jsonl --port-file port [--port 0]
                      [--tls-cert cert.pem --tls-key key.pem]   # HTTPS
"""
import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
seen = {}  # path -> requests so far
log_file = None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the sink expects

    def log_message(self, *args):
        pass

    def answer(self):
        t = time.time()
        length = int(self.headers.get("Content-Length", "0") or 0)
        body = self.rfile.read(length) if length else b""
        with lock:
            n = seen.get(self.path, 0)
            seen[self.path] = n + 1
        parts = self.path.lstrip("/").split("/")
        status, extra, delay, garbage = 200, {}, 0.0, False
        try:
            if parts[0] in ("fail", "failpage") and n < int(parts[1]):
                status = int(parts[2])
            elif parts[0] in ("always", "echo"):
                status = int(parts[1])
            elif parts[0] == "throttle" and n < int(parts[1]):
                status, extra = 429, {"Retry-After": parts[2]}
            elif parts[0] == "garbage" and n < int(parts[1]):
                garbage = True
            elif parts[0] == "sleep" and n < int(parts[2]):
                delay = int(parts[1]) / 1000.0
            elif parts[0] == "hold" and parts[3] == parts[1]:
                with lock:
                    first = ("hold", parts[1]) not in seen
                    seen[("hold", parts[1])] = 1
                if first:
                    delay = int(parts[2]) / 1000.0
        except (IndexError, ValueError):
            status = 400
        if delay:
            time.sleep(delay)
        payload = b'{"ok":true}' if status < 300 else ("refused " + self.path).encode()
        if status >= 300 and parts[0] == "echo":
            payload = ("refused; you sent " + "; ".join(k + ": " + v for k, v in self.headers.items())).encode()
        if status >= 300 and parts[0] == "failpage":
            payload = b"<html>\r\n<head><title>503 Service Unavailable</title></head>\r\n<body>busy\n\tcome back later</body>\r\n</html>\r\n"
        # Logged before the answer goes out, so a client that has its answer always finds
        # its request in the log.
        line = json.dumps({"t": t, "method": self.command, "path": self.path,
                           "headers": {k.lower(): v for k, v in self.headers.items()},
                           "body": body.decode("utf-8", "replace"), "status": status,
                           "attempt": n + 1, "client_port": self.client_address[1]})
        with lock:
            log_file.write(line + "\n")
            log_file.flush()
        if garbage:
            try:
                self.wfile.write(b"\x00\x17garbage, not an HTTP answer\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
            return
        try:
            self.send_response(status)
            for k, v in extra.items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer


def main():
    global log_file
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    a = ap.parse_args()
    log_file = open(a.log, "a", encoding="utf-8")
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 1024
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    if a.tls_cert:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls_cert, a.tls_key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.replace(a.port_file + ".tmp", a.port_file)  # readers never see half a number
    srv.serve_forever()


if __name__ == "__main__":
    main()
