#!/usr/bin/env python3
"""fake_openai_server.py - a loopback OpenAI-style chat server for fault tests.

Listens on 127.0.0.1 at a port the kernel picks, prints that port on the
first line of stdout, then serves until stdin reaches EOF (so it dies with
the test that started it) or it is killed.

POST .../chat/completions picks a scenario from the request's model:
"scenario:<name>" or "scenario:<name>#<anything>". Counters are kept per
full model string, so a test can use a fresh "#<n>" suffix to start at hit 1.
GET /stats returns, per model string: hits, the Authorization headers seen,
the most requests in flight at once, whether the client hung up on a reply
("aborted") and the last request body.

The scenarios named sse-* answer with an event stream (text/event-stream,
chunked or ended by closing the connection) whatever the request asked;
the others answer JSON, as a server that ignores "stream" does.

Python standard library only.
"""
import http.server
import json
import os
import random
import socket
import struct
import sys
import threading
import time

KERNEL = (
    "Here is the fused kernel.\n"
    "\n"
    "```mlir\n"
    "gpu.module @kernels {\n"
    "  gpu.func @fused(%arg0: memref<16xf32>) kernel {\n"
    "    gpu.return\n"
    "  }\n"
    "}\n"
    "```\n"
    "\n"
    "It uses one block per row.\n"
)

TWO_MODULES = (
    "First try:\n```mlir\ngpu.module @a {\n}\n```\n"
    "Better:\n```mlir\ngpu.module @b {\n}\n```\n"
)

NO_KERNEL = "I am sorry, but I cannot write a kernel for this subgraph."

# What the event-stream scenarios deliver, in pieces of a few characters;
# the tests compare the client's content with it byte for byte.
STREAM_TEXT = (
    "```mlir\ngpu.module @streamed {\n}\n```\n"
    "caf\u00e9 \u2192 \U0001F600 \"q\" \\ end\n"
)
STREAM_USAGE = {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}

LOCK = threading.Lock()
STATS = {}


def stats_for(key):
    entry = STATS.get(key)
    if entry is None:
        entry = STATS[key] = {
            "hits": 0,
            "auth": [],
            "inflight": 0,
            "max_inflight": 0,
            "aborted": False,
            "last_request": None,
        }
    return entry


def completion(model, content, usage=True, finish="stop"):
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
            }
        ],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": 11,
            "completion_tokens": 22,
            "total_tokens": 33,
        }
    return body


def stream_chunk(model, delta=None, finish=None, usage=None, empty=False):
    """One chat.completion.chunk; "usage": null except in the usage chunk,
    which has empty choices, as OpenAI sends with include_usage."""
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [] if empty else [
            {"index": 0, "delta": delta or {}, "finish_reason": finish}],
        "usage": usage,
    }
    return body


def stream_chunks(model, text=STREAM_TEXT, finish="stop", usage=True,
                  piece=9):
    """The chunks of a whole completion: a role chunk, the text in pieces,
    a finish chunk, and (optionally) a usage-only chunk."""
    chunks = [stream_chunk(model, {"role": "assistant", "content": ""})]
    for i in range(0, len(text), piece):
        chunks.append(stream_chunk(model, {"content": text[i:i + piece]}))
    if finish:
        chunks.append(stream_chunk(model, {}, finish=finish))
    if usage:
        chunks.append(stream_chunk(model, usage=STREAM_USAGE, empty=True))
    return chunks


def sse_event(obj, eol=b"\n"):
    # ensure_ascii=False: multi-byte UTF-8 goes on the wire as is.
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + eol * 2


def openai_error(message, etype, code=None):
    return {"error": {"message": message, "type": etype, "param": None,
                      "code": code}}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-openai/1"

    def log_message(self, fmt, *args):
        if os.environ.get("FAKE_OPENAI_VERBOSE"):
            sys.stderr.write("fake-openai: " + (fmt % args) + "\n")

    # -- responses ---------------------------------------------------------
    def send_json(self, code, obj, headers=()):
        body = json.dumps(obj).encode()
        self.send_raw(code, body, headers)

    def send_raw(self, code, body, headers=(), ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def ok(self, content=KERNEL, usage=True):
        self.send_json(200, completion(self.model, content, usage))

    # -- event streams -----------------------------------------------------
    def sse_start(self, chunked=True):
        """Sends the headers of an event stream: chunked, or ended by
        closing the connection."""
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.chunked = chunked
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.flush()

    def sse_send(self, data):
        if self.chunked:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        else:
            self.wfile.write(data)
        self.wfile.flush()

    def sse_end(self):
        if self.chunked:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def sse_whole(self, chunked=True, **kwargs):
        """A complete, healthy stream, one event per write."""
        self.sse_start(chunked)
        for chunk in stream_chunks(self.model, **kwargs):
            self.sse_send(sse_event(chunk))
        self.sse_send(b"data: [DONE]\n\n")
        self.sse_end()

    # -- scenarios ---------------------------------------------------------
    def sc_ok(self, hit, entry):
        self.ok()

    def sc_ok_nousage(self, hit, entry):
        self.ok(usage=False)

    def sc_no_kernel(self, hit, entry):
        self.ok(NO_KERNEL)

    def sc_two_modules(self, hit, entry):
        self.ok(TWO_MODULES)

    def sc_content_null(self, hit, entry):
        body = completion(self.model, None, finish="length")
        self.send_json(200, body)

    def rate_limited(self, headers):
        self.send_json(429, openai_error(
            "Rate limit reached for requests", "requests",
            "rate_limit_exceeded"), headers)

    def sc_429_retry_after(self, hit, entry):
        if hit == 1:
            return self.rate_limited([("Retry-After", "1")])
        self.ok()

    def sc_429_retry_after_ms(self, hit, entry):
        # Both headers, as Azure sends them: the -ms one must win.
        if hit == 1:
            return self.rate_limited([("retry-after-ms", "300"),
                                      ("Retry-After", "5")])
        self.ok()

    def sc_429_retry_after_big(self, hit, entry):
        if hit == 1:
            return self.rate_limited([("Retry-After", "3600")])
        self.ok()

    def sc_429_backoff(self, hit, entry):
        if hit <= 2:
            return self.rate_limited([])
        self.ok()

    def sc_503x3(self, hit, entry):
        if hit <= 3:
            return self.send_json(503, openai_error(
                "The server is overloaded or not ready yet.", "server_error"))
        self.ok()

    def sc_503_always(self, hit, entry):
        self.send_json(503, openai_error("The engine is currently overloaded",
                                         "server_error"))

    def sc_502_html(self, hit, entry):
        if hit == 1:
            return self.send_raw(
                502, b"<html><body><h1>502 Bad Gateway</h1>\r\n</body></html>",
                ctype="text/html")
        self.ok()

    def sc_401(self, hit, entry):
        # Echoes the whole key, worse than OpenAI does, to test scrubbing.
        auth = self.headers.get("Authorization") or ""
        key = auth[len("Bearer "):] if auth.startswith("Bearer ") else auth
        self.send_json(401, openai_error(
            "Incorrect API key provided: %s. You can find your API key at "
            "https://platform.openai.com/account/api-keys." % key,
            "invalid_request_error", "invalid_api_key"))

    def sc_400(self, hit, entry):
        self.send_json(400, openai_error(
            "Invalid value for 'messages': expected an array.",
            "invalid_request_error"))

    def sc_vllm_400(self, hit, entry):
        self.send_json(400, {
            "object": "error",
            "message": "This model's maximum context length is 4096 tokens.",
            "type": "BadRequestError", "param": None, "code": 400})

    def sc_ollama_404(self, hit, entry):
        self.send_json(404, {"error": "model \"qwen\" not found, try "
                                      "pulling it first"})

    def sc_insufficient_quota(self, hit, entry):
        self.send_json(429, openai_error(
            "You exceeded your current quota, please check your plan and "
            "billing details.", "insufficient_quota", "insufficient_quota"),
            [("Retry-After", "0")])

    def sc_slow_drip(self, hit, entry):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "4000")
        self.end_headers()
        self.wfile.flush()
        for _ in range(4000):
            self.wfile.write(b" ")
            self.wfile.flush()
            time.sleep(0.25)

    def sc_reset(self, hit, entry):
        if hit == 1:
            # No response at all: the socket is closed with an RST.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.server.reset_requests.add(self.connection)
            self.close_connection = True
            return
        self.ok()

    def sc_truncated_json(self, hit, entry):
        body = b'{"id": "chatcmpl-fake", "choices": [{"index": 0, ' \
               b'"message": {"role": "assistant", "content": "```mlir\\ngpu.mod'
        self.send_raw(200, body)

    def sc_oversize(self, hit, entry):
        self.ok("x" * (1 << 20))

    def sc_oversize_stream(self, hit, entry):
        # No Content-Length: 16 MiB in 64 KiB pieces over ~13 s, unless the
        # client hangs up first.
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        self.wfile.write(b'{"choices": [{"message": {"content": "')
        piece = b"y" * (64 << 10)
        for _ in range(256):
            self.wfile.write(piece)
            self.wfile.flush()
            time.sleep(0.05)

    def sc_redirect_http(self, hit, entry):
        port = self.server.server_address[1]
        self.send_response(307)
        self.send_header("Location",
                         "http://127.0.0.1:%d/v1/chat/completions" % port)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def sc_delay_2s(self, hit, entry):
        time.sleep(2)
        self.ok()

    def sc_sse_ok(self, hit, entry):
        self.sse_whole()

    def sc_sse_keepalive(self, hit, entry):
        # A model that thinks for 3 s before its first token, sending an
        # SSE comment every 0.5 s meanwhile.
        self.sse_start()
        for _ in range(6):
            self.sse_send(b": keep-alive\n\n")
            time.sleep(0.5)
        for chunk in stream_chunks(self.model):
            self.sse_send(sse_event(chunk))
        self.sse_send(b"data: [DONE]\n\n")
        self.sse_end()

    def sc_sse_silent(self, hit, entry):
        # First hit: headers and a role chunk, then 4 s of nothing at all.
        if hit == 1:
            self.sse_start()
            self.sse_send(sse_event(stream_chunk(
                self.model, {"role": "assistant", "content": ""})))
            time.sleep(4)
            self.sse_send(b"data: [DONE]\n\n")
            self.sse_end()
            return
        self.sse_whole()

    def sc_sse_late_headers(self, hit, entry):
        # Thinks 2 s before even the headers, then streams.
        time.sleep(2)
        self.sse_whole()

    def sc_json_slow_body(self, hit, entry):
        # JSON headers at once, the body 2 s later.
        body = json.dumps(completion(self.model, KERNEL)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.flush()
        time.sleep(2)
        self.wfile.write(body)
        self.wfile.flush()

    def sc_sse_split(self, hit, entry):
        # CRLF line ends, an event field, an id, "data:" without its space,
        # one event in two data lines with a comment between them; sent in
        # 1-7 byte writes, cut inside "data:", inside each multi-byte UTF-8
        # character and between a CR and its LF; ended by closing.
        eol = b"\r\n"
        body = b""
        for i, chunk in enumerate(stream_chunks(self.model)):
            line = json.dumps(chunk, ensure_ascii=False).encode()
            if i == 1:
                body += b"event: message" + eol + b"id: 1" + eol
                body += b"data:" + line + eol + eol
            elif i == 2:
                k = line.index(b'"delta"')
                body += b"data: " + line[:k] + eol
                body += b": a comment inside an event" + eol
                body += b"data: " + line[k:] + eol + eol
            else:
                body += b"data: " + line + eol + eol
        body += b"data: [DONE]" + eol + eol
        cuts = {body.index(b"data:") + 2, body.index(b"\r\n\r\n") + 1}
        for ch in ("\u00e9", "\u2192", "\U0001F600"):
            encoded = ch.encode()
            at = body.index(encoded)
            cuts.update(range(at + 1, at + len(encoded)))
        rng = random.Random(20240611)
        pos, pieces = 0, []
        while pos < len(body):
            end = min(len(body), pos + rng.randint(1, 7))
            inside = [c for c in sorted(cuts) if pos < c < end]
            if inside:
                end = inside[0]
            pieces.append(body[pos:end])
            pos = end
        self.sse_start(chunked=False)
        for piece in pieces:
            self.sse_send(piece)
            time.sleep(0.002)

    def sc_sse_no_done_finish(self, hit, entry):
        # A finish_reason, then the connection closes without [DONE].
        self.sse_start(chunked=False)
        for chunk in stream_chunks(self.model, usage=False):
            self.sse_send(sse_event(chunk))

    def sc_sse_no_done(self, hit, entry):
        # First hit: some content, then the connection closes with neither
        # a finish_reason nor [DONE].
        if hit == 1:
            self.sse_start(chunked=False)
            for chunk in stream_chunks(self.model, text="PARTIAL-ATTEMPT ",
                                       finish=None, usage=False):
                self.sse_send(sse_event(chunk))
            return
        self.sse_whole()

    def sc_sse_error(self, hit, entry):
        # First hit: content, then an error event that quotes the key.
        if hit == 1:
            auth = self.headers.get("Authorization") or ""
            key = auth[len("Bearer "):] if auth.startswith("Bearer ") else auth
            self.sse_start()
            for chunk in stream_chunks(self.model, text="PARTIAL-ATTEMPT ",
                                       finish=None, usage=False):
                self.sse_send(sse_event(chunk))
            self.sse_send(sse_event(openai_error(
                "The server had an error while processing your request "
                "(key %s)." % key, "server_error")))
            self.sse_end()
            return
        self.sse_whole()

    def sc_sse_big(self, hit, entry):
        # 64 deltas of 1 KiB each.
        self.sse_start()
        for _ in range(64):
            self.sse_send(sse_event(stream_chunk(self.model,
                                                 {"content": "z" * 1024})))
        self.sse_send(sse_event(stream_chunk(self.model, {}, finish="stop")))
        self.sse_send(b"data: [DONE]\n\n")
        self.sse_end()

    # -- dispatch ----------------------------------------------------------
    def do_GET(self):
        if self.path.rstrip("/") == "/stats":
            with LOCK:
                data = json.dumps(STATS)
            return self.send_raw(200, data.encode())
        self.send_json(404, openai_error("no such path", "not_found"))

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self.path.endswith("/chat/completions"):
            return self.send_json(404, openai_error(
                "no such path: %s" % self.path, "invalid_request_error"))
        try:
            request = json.loads(raw)
        except ValueError:
            return self.send_json(400, openai_error(
                "request body is not JSON", "invalid_request_error"))
        self.model = str(request.get("model", ""))
        name = "ok"
        if self.model.startswith("scenario:"):
            name = self.model[len("scenario:"):].split("#", 1)[0]
        handler = getattr(self, "sc_" + name.replace("-", "_"), None)
        with LOCK:
            entry = stats_for(self.model)
            entry["hits"] += 1
            hit = entry["hits"]
            entry["auth"].append(self.headers.get("Authorization"))
            entry["inflight"] += 1
            entry["max_inflight"] = max(entry["max_inflight"],
                                        entry["inflight"])
            entry["last_request"] = request
        try:
            if handler is None:
                self.send_json(404, openai_error(
                    "unknown scenario '%s'" % name, "invalid_request_error",
                    "model_not_found"))
            else:
                handler(hit, entry)
        except (BrokenPipeError, ConnectionResetError):
            with LOCK:
                entry["aborted"] = True
            self.close_connection = True
        finally:
            with LOCK:
                entry["inflight"] -= 1


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64  # many clients connect at once

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reset_requests = set()

    def shutdown_request(self, request):
        if request in self.reset_requests:
            # Close without the FIN that shutdown() would send: with
            # SO_LINGER 0 the peer sees a reset.
            self.reset_requests.discard(request)
            request.close()
            return
        super().shutdown_request(request)

    def handle_error(self, request, client_address):
        if os.environ.get("FAKE_OPENAI_VERBOSE"):
            super().handle_error(request, client_address)


def main():
    server = Server(("127.0.0.1", 0), Handler)
    sys.stdout.write("%d\n" % server.server_address[1])
    sys.stdout.flush()

    def exit_on_eof():
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=exit_on_eof, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
