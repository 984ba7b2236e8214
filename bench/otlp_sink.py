"""A local OTLP/HTTP receiver for measuring traces switched on (docs/performance.md, "Traces"): it answers every
POST /v1/traces with an empty ExportTraceServiceResponse and counts the requests and bytes, decoding nothing,
so that what the bench measures is the service's side of exporting.

    .venv/bin/python bench/otlp_sink.py [--port 4318] &
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 .venv/bin/python bench/cpu.py --baseline DIR ...

Ctrl-C (or SIGTERM) prints the counts and stops it.
"""

import argparse
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COUNTS = {"requests": 0, "bytes": 0}


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        size = int(self.headers.get("content-length", "0"))
        self.rfile.read(size)
        COUNTS["requests"] += 1
        COUNTS["bytes"] += size
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=4318)
    args = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Sink)
    server.daemon_threads = True

    def stop(*_: Any) -> None:
        print(f"otlp sink: {COUNTS['requests']} exports, {COUNTS['bytes']} bytes", flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.serve_forever()


if __name__ == "__main__":
    main()
