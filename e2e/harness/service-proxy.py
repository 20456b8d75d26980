#!/usr/bin/env python3
"""What a Kubernetes Service does for kube-scheduler's extender calls, for e2e on hosts with
no kube-proxy: a reverse proxy on one address in front of several replicas that sends each
request to the next *ready* backend in turn (round-robin per request, stricter than
kube-proxy's per-connection choice). Readiness is each backend's GET /readyz, polled every
--poll seconds, as the kubelet's readiness probe feeds the Service's endpoints; a backend
that is not ready, or is down, gets no traffic. With no ready backend the proxy answers 503,
as a Service without endpoints refuses the connection.

    service-proxy.py --listen 127.0.0.1:PORT --backend 127.0.0.1:P1 --backend 127.0.0.1:P2

Each change of the ready set is logged ("ready: [...]") and every request is logged with the
backend that answered it, so a suite can read which replica served what.
"""

import argparse
import http.client
import http.server
import itertools
import sys
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--backend", action="append", required=True)
    ap.add_argument("--poll", type=float, default=0.5)
    args = ap.parse_args()

    lock = threading.Lock()
    ready = []
    turn = itertools.count()

    def log(msg):
        print(f"{time.time():.3f} {msg}", flush=True)

    def probe():
        last = None
        while True:
            now = []
            for b in args.backend:
                host, port = b.rsplit(":", 1)
                try:
                    c = http.client.HTTPConnection(host, int(port), timeout=1)
                    c.request("GET", "/readyz")
                    if c.getresponse().status == 200:
                        now.append(b)
                    c.close()
                except OSError:
                    pass
            with lock:
                ready[:] = now
            if now != last:
                log(f"ready: {now}")
                last = now
            time.sleep(args.poll)

    def pick():
        with lock:
            if not ready:
                return None
            return ready[next(turn) % len(ready)]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def forward(self):
            body = None
            n = int(self.headers.get("Content-Length") or 0)
            if n:
                body = self.rfile.read(n)
            backend = pick()
            if backend is None:
                self.reply(503, b"no ready endpoints\n")
                log(f"{self.command} {self.path} -> none")
                return
            host, port = backend.rsplit(":", 1)
            try:
                c = http.client.HTTPConnection(host, int(port), timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "host")}
                c.request(self.command, self.path, body=body, headers=headers)
                r = c.getresponse()
                data = r.read()
                c.close()
            except OSError as e:
                self.reply(502, f"backend {backend}: {e}\n".encode())
                log(f"{self.command} {self.path} -> {backend} failed: {e}")
                return
            self.send_response(r.status)
            for k, v in r.getheaders():
                if k.lower() not in ("connection", "content-length", "transfer-encoding"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            log(f"{self.command} {self.path} -> {backend} {r.status}")

        def reply(self, status, data):
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = forward
        do_POST = forward

        def log_message(self, *a):
            pass

    threading.Thread(target=probe, daemon=True).start()
    host, port = args.listen.rsplit(":", 1)
    srv = http.server.ThreadingHTTPServer((host, int(port)), Handler)
    srv.daemon_threads = True
    log(f"listening on {args.listen}, backends {args.backend}")
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
