#!/usr/bin/env python3
"""kernel_server.py - a scripted chat-completions server for the acquire tests
and the benchmark. Python 3 standard library only; loopback only.

    kernel_server.py CONFIG.json LOG.jsonl

Listens on 127.0.0.1 at a port the kernel picks, prints the port on stdout,
and serves POST /v1/chat/completions until stdin closes. CONFIG holds

    {"rules": [{"match": "sg_aaaa", "delay": 0.2, "replies": ["broken", "good"],
                "usage": [1000, 200]}, ...]}

A request belongs to the first rule whose "match" occurs in its first user
message (the subgraph's name is there); "*" matches anything. The n-th
request of a rule (0-based) gets replies[min(n, len - 1)]:

    good           a fenced gpu.module naming the subgraph
    broken         a fenced gpu.module holding the token BROKEN (the tests'
                   build callback rejects it with an error naming E_MARKER_42)
    good-if-error  good when the last user message carries E_MARKER_42 (the
                   repair prompt delivered the build error), else broken
    none           prose without a gpu.module
    two            two gpu.modules
    echo-auth      a good kernel with the request's Authorization header
                   value in a comment (a hostile server echoing the key)
    file:PATH      the kernel in file PATH, fenced, with prose around it
    raw:PATH       the file PATH as it is (a recorded reply)
    echo-auth-file:PATH  the same with the Authorization header value in
                   a comment before it
    http401 / http500 / http429   that status with an OpenAI-style error body
    ms:X           a good kernel with the comment "FAKE_MS X" (the tests' fake
                   verifier accepts it and times it at X ms)
    wrong          a good kernel with the comment "WRONG" (the fake verifier
                   rejects it as a mismatch)
    unjudged       a good kernel the fake verifier cannot judge
    tuned:A,B,C    a good kernel declaring BLOCK = A, B, C with the comment
                   "FAKE_MS {{BLOCK / 32}}" (one variant per value)

"usage": [prompt, completion] tokens to report (omitted when absent).
Every request is appended to LOG as one JSON line: rule, n, the messages,
whether an Authorization header came (never its value), start/end times
and the number of requests in flight when it arrived.
"""
import http.server
import json
import sys
import threading
import time

CONFIG = json.load(open(sys.argv[1]))
LOG = open(sys.argv[2], "a")
LOCK = threading.Lock()
COUNTS = {}
STATE = {"inflight": 0}


def kernel(name, extra=""):
    return ("Here is the kernel.\n\n```mlir\ngpu.module @k {\n"
            "  gpu.func @%s() kernel attributes {known_block_size = "
            "array<i32: 1, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {\n"
            "%s    gpu.return\n  }\n}\n```\n" % (name, extra))


def reply_text(kind, name, messages, auth):
    last_user = [m["content"] for m in messages if m.get("role") == "user"][-1]
    if kind == "good-if-error":
        kind = "good" if "E_MARKER_42" in last_user else "broken"
    if kind == "good":
        return kernel(name)
    if kind == "broken":
        return kernel(name, "    // BROKEN\n")
    if kind.startswith("ms:"):
        return kernel(name, "    // FAKE_MS %s\n" % kind[3:])
    if kind == "wrong":
        return kernel(name, "    // WRONG\n")
    if kind == "unjudged":
        return kernel(name, "    // UNJUDGED\n")
    if kind.startswith("tuned:"):
        return kernel(name, "    // llm-fuse.tune BLOCK = %s\n"
                      "    // FAKE_MS {{BLOCK / 32}}\n" % kind[6:])
    if kind == "none":
        return "I cannot write this kernel, sorry."
    if kind == "two":
        return kernel(name) + kernel(name)
    if kind == "echo-auth":
        return kernel(name, "    // you sent: %s\n" % auth)
    if kind.startswith("raw:"):
        return open(kind[4:]).read()
    if kind.startswith("file:") or kind.startswith("echo-auth-file:"):
        text = open(kind.split(":", 1)[1]).read()
        if kind.startswith("echo-auth"):
            text = "// you sent: %s\n%s" % (auth, text)
        return "Here is a kernel.\n\n```mlir\n%s```\nDone.\n" % text
    raise ValueError(kind)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: without this, Nagle and the
    # client's delayed ACK hold the body 40 ms on a kept-alive connection
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def send(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        t0 = time.time()
        with LOCK:
            STATE["inflight"] += 1
            inflight = STATE["inflight"]
        try:
            n = int(self.headers.get("Content-Length", "0"))
            req = json.loads(self.rfile.read(n))
            messages = req.get("messages", [])
            first_user = next((m["content"] for m in messages
                               if m.get("role") == "user"), "")
            rule = next((r for r in CONFIG["rules"]
                         if r["match"] == "*" or r["match"] in first_user), None)
            if rule is None:
                self.send(400, {"error": {"message": "no rule matches"}})
                return
            with LOCK:
                count = COUNTS.get(rule["match"], 0)
                COUNTS[rule["match"]] = count + 1
            time.sleep(rule.get("delay", 0))
            replies = rule["replies"]
            kind = replies[min(count, len(replies) - 1)]
            name = rule.get("name", rule["match"])
            auth = self.headers.get("Authorization", "")
            if kind.startswith("http"):
                code = int(kind[4:])
                self.send(code, {"error": {"message": "scripted failure %d" % code,
                                           "type": "test", "code": "scripted"}})
            else:
                body = {"id": "x", "object": "chat.completion",
                        "model": req.get("model", ""),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant",
                                                 "content": reply_text(kind, name, messages, auth)}}]}
                if "usage" in rule:
                    body["usage"] = {"prompt_tokens": rule["usage"][0],
                                     "completion_tokens": rule["usage"][1]}
                self.send(200, body)
            with LOCK:
                LOG.write(json.dumps({"rule": rule["match"], "n": count, "kind": kind,
                                      "messages": messages,
                                      "auth_present": bool(auth),
                                      "t_start": t0, "t_end": time.time(),
                                      "inflight": inflight}) + "\n")
                LOG.flush()
        finally:
            with LOCK:
                STATE["inflight"] -= 1


class Server(http.server.ThreadingHTTPServer):
    # The default listen backlog (5) drops the SYNs of a burst of 8+
    # connections, which then arrive a second late.
    request_queue_size = 128


def main():
    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], flush=True)
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
