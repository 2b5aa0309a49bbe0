#!/usr/bin/env python3
"""A fast HTTP/1.1 keep-alive server for the http sink benchmark: answers every request
200 with a tiny body, optionally after --delay-ms (a slow API), and counts. GET /stats
returns {"count":N,"first":t,"last":t} (arrival times of the first and last counted
request) and is not counted. One asyncio protocol per connection, no per-request
allocation beyond the parse.

  fast_server.py --port-file F [--port 0] [--delay-ms 0]
"""
import argparse
import asyncio
import json
import os
import time

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}"
stats = {"count": 0, "first": 0.0, "last": 0.0}
delay = 0.0


class Conn(asyncio.Protocol):
    def connection_made(self, transport):
        self.t = transport
        self.buf = b""

    def data_received(self, data):
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end]
            length = 0
            low = head.lower()
            p = low.find(b"content-length:")
            if p >= 0:
                q = low.find(b"\r\n", p)
                length = int(head[p + 15:q if q >= 0 else len(head)])
            total = end + 4 + length
            if len(self.buf) < total:
                return
            self.buf = self.buf[total:]
            if head.startswith(b"GET /stats"):
                body = json.dumps(stats).encode()
                self.t.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                continue
            now = time.time()
            if stats["count"] == 0:
                stats["first"] = now
            stats["count"] += 1
            stats["last"] = now
            if delay:
                asyncio.get_running_loop().call_later(delay, self.answer)
            else:
                self.t.write(RESPONSE)

    def answer(self):
        if not self.t.is_closing():
            self.t.write(RESPONSE)


async def main():
    global delay
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--delay-ms", type=float, default=0)
    a = ap.parse_args()
    delay = a.delay_ms / 1000.0
    srv = await asyncio.get_running_loop().create_server(Conn, "127.0.0.1", a.port, backlog=1024)
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(srv.sockets[0].getsockname()[1]))
    os.replace(a.port_file + ".tmp", a.port_file)
    await srv.serve_forever()


asyncio.run(main())
