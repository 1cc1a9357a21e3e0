#!/usr/bin/env python3
"""store.py: runs a command while a remote kernel-cache store listens on
loopback, for the remote cache's lit tests.

Usage:
  store.py nginx ROOT LOGDIR -- CMD...
  store.py hostile MODE LOGFILE -- CMD...
  store.py down -- CMD...

In CMD's arguments "@PORT@" becomes the store's port and "@URL@" its URL
(http://127.0.0.1:PORT); CMD also gets LF_STORE_URL=<that URL> in its
environment. store.py exits with CMD's status (128+N if a signal N ended
it) and always stops the store before it exits; it exits 1 if the store
could not be started, 2 on a usage error.

nginx ROOT LOGDIR
  A real nginx (from PATH, else /usr/sbin/nginx) as a WebDAV store of
  directory ROOT (created if missing): GET/HEAD answer 200 or 404, PUT
  answers 201 (created) or 204 (replaced) and writes the body to a temp file
  it then renames into place, so racing PUTs leave one whole body.
  Everything nginx writes lies in a fresh directory LOGDIR/nginx.XXXX
  (nginx.conf, nginx.pid, error.log, temp files), except LOGDIR/access.log,
  to which each request appends one line:
      METHOD URI STATUS BODY_BYTES_SENT REQUEST_LENGTH REQUEST_TIME
  (store.py's own readiness probe is not logged; nginx 1.22 counts some
  header bytes in BODY_BYTES_SENT of a keep-alive PUT's empty answer, so
  check that field on GET lines only). nginx runs as one process
  in the foreground (master_process off), so as root it does not switch to
  an unprivileged user that could not write ROOT; nothing under /etc/nginx,
  /var/log/nginx or /var/lib/nginx is read or written.

hostile MODE LOGFILE
  A Python HTTP/1.1 server whose every answer MODE decides; it appends one
  line per request, "METHOD PATH STATUS", to LOGFILE once the request is
  read and its answer decided (before the answer is sent, so a request the
  client gave up on is logged too). PUT bodies are read and discarded and
  answered 201 unless MODE says otherwise. MODE is one of:
    garbage       GET: 200, application/json, "this is not a cache entry\\n"
    json-garbage  GET: 200, '{"schema":"llm-fuse-cache-entry/1","forged":true}'
    redirect      every method: 302 to http://127.0.0.1:PORT/elsewhere<PATH>
                  (this server again: a client that follows it is logged)
    huge          GET: 200, Content-Length 100 MiB, 1 MiB chunks of 'a'
    huge-chunked  the same, chunked (no Content-Length to refuse it by)
    cut           GET: 200, Content-Length 1000, 100 bytes, then hang-up
    slow          every request: 404 after 30 s (the client should give up)
    error         every method: 500 with a short body
    notfound      GET/HEAD: 404, PUT: 201 (a store that forgets)
    files:DIR     a trivial store of DIR: GET/HEAD of the file at PATH
                  (200/404), PUT writes it (folders created; 201 new, 204
                  replaced); paths that leave DIR are answered 404 (400 for
                  a PUT)
  HEAD gets GET's status and headers without the body.

down
  No store: CMD gets a port that nothing listens on (store.py holds it
  bound but not listening, so connections are refused and no one else can
  take it meanwhile).
"""
import http.client
import http.server
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

PROBE_AGENT = "store.py-ready-probe"


def usage(msg):
    sys.stderr.write("store.py: %s\n" % msg)
    sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
    sys.exit(2)


def on_sigterm(signum, frame):
    # Unwind through the finally clauses that stop the store.
    raise SystemExit(128 + signum)


def run_cmd(cmd, port):
    url = "http://127.0.0.1:%d" % port
    argv = [a.replace("@PORT@", str(port)).replace("@URL@", url)
            for a in cmd]
    env = dict(os.environ)
    env["LF_STORE_URL"] = url
    rc = subprocess.call(argv, env=env)
    return 128 - rc if rc < 0 else rc


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


# ---------------------------------------------------------------- nginx

def nginx_binary():
    found = shutil.which("nginx")
    if found:
        return found
    if os.access("/usr/sbin/nginx", os.X_OK):
        return "/usr/sbin/nginx"
    sys.stderr.write("store.py: no nginx on PATH nor /usr/sbin/nginx\n")
    sys.exit(1)


def conf_path(p):
    # nginx would read '$' in root as a variable; quotes and backslashes
    # would need escaping. The build tree's paths have none of them.
    for c in '"\\$;{}\n':
        if c in p:
            sys.stderr.write("store.py: nginx cannot be given the path %r\n"
                             % p)
            sys.exit(1)
    return '"%s"' % p


def nginx_conf(prefix, root, logdir, port):
    q = lambda *parts: conf_path(os.path.join(*parts))
    return f"""# Written by store.py for one test run.
daemon off;
master_process off;
worker_processes 1;
pid {q(prefix, "nginx.pid")};
error_log {q(prefix, "error.log")} info;

events {{
    worker_connections 256;
}}

http {{
    log_format lf_store '$request_method $uri $status $body_bytes_sent '
                        '$request_length $request_time';
    map $http_user_agent $lf_store_log {{
        "{PROBE_AGENT}" 0;
        default 1;
    }}
    access_log {q(logdir, "access.log")} lf_store if=$lf_store_log;

    client_body_temp_path {q(prefix, "client_body_temp")};
    proxy_temp_path {q(prefix, "proxy_temp")};
    fastcgi_temp_path {q(prefix, "fastcgi_temp")};
    uwsgi_temp_path {q(prefix, "uwsgi_temp")};
    scgi_temp_path {q(prefix, "scgi_temp")};

    client_body_buffer_size 1m;
    keepalive_requests 100000;
    keepalive_timeout 60s;
    types {{
        application/json json;
    }}
    default_type application/octet-stream;

    server {{
        listen 127.0.0.1:{port};
        server_name localhost;

        location / {{
            root {conf_path(root)};
            dav_methods PUT DELETE MKCOL COPY MOVE;
            create_full_put_path on;
            dav_access user:rw group:r all:r;
            client_max_body_size 128m;
            autoindex off;
        }}
    }}
}}
"""


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def stop_nginx(proc):
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGQUIT)
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def nginx_ready(proc, port, deadline):
    """True once nginx answers a HEAD; False if it exited first."""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            c.request("HEAD", "/", headers={"User-Agent": PROBE_AGENT})
            c.getresponse().read()
            c.close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def mode_nginx(args, cmd):
    if len(args) != 2:
        usage("nginx takes ROOT LOGDIR")
    root, logdir = (os.path.abspath(a) for a in args)
    os.makedirs(root, exist_ok=True)
    os.makedirs(logdir, exist_ok=True)
    nginx = nginx_binary()
    prefix = tempfile.mkdtemp(prefix="nginx.", dir=logdir)
    conf = os.path.join(prefix, "nginx.conf")
    errlog = os.path.join(prefix, "error.log")
    outlog = os.path.join(prefix, "nginx.out")
    proc = None
    try:
        for attempt in range(20):
            port = free_port()
            with open(conf, "w") as f:
                f.write(nginx_conf(prefix, root, logdir, port))
            with open(outlog, "ab") as out:
                proc = subprocess.Popen(
                    [nginx, "-p", prefix + "/", "-c", conf, "-e", errlog],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=out)
            if nginx_ready(proc, port, time.monotonic() + 10):
                break
            if proc.poll() is None:
                stop_nginx(proc)
                sys.stderr.write("store.py: nginx did not answer within"
                                 " 10 s\n")
                sys.stderr.write(read_text(outlog) + read_text(errlog))
                return 1
            text = read_text(outlog) + read_text(errlog)
            if "Address already in use" in text and attempt < 19:
                # Someone took the port between our probe and nginx's bind.
                open(errlog, "w").close()
                open(outlog, "w").close()
                continue
            sys.stderr.write("store.py: nginx exited with status %d\n"
                             % proc.returncode)
            sys.stderr.write(text)
            return 1
        return run_cmd(cmd, port)
    finally:
        stop_nginx(proc)


# -------------------------------------------------------------- hostile

MiB = 1 << 20


class Hostile(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hostile-store"
    sys_version = ""
    mode = None      # set by mode_hostile
    files = None     # files:DIR's directory, absolute
    log_path = None
    log_lock = threading.Lock()

    def log_message(self, fmt, *args):
        pass

    def note(self, status):
        with self.log_lock:
            with open(self.log_path, "a") as f:
                f.write("%s %s %d\n" % (self.command, self.path, status))
                f.flush()

    def drain_body(self):
        """Reads the request body (Content-Length or chunked) and returns
        it."""
        te = self.headers.get("Transfer-Encoding", "")
        if "chunked" in te.lower():
            parts = []
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    raise ConnectionResetError("body cut short")
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n",
                                                              b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline(65537)
        n = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(n) if n else b""
        if len(data) != n:
            raise ConnectionResetError("body cut short")
        return data

    def answer(self, status, body=b"", ctype="text/plain", extra=()):
        self.note(status)
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def huge(self, chunked):
        self.note(200)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(100 * MiB))
        self.end_headers()
        if self.command == "HEAD":
            return
        block = b"a" * MiB
        try:
            for _ in range(100):
                if chunked:
                    self.wfile.write(b"%x\r\n" % MiB + block + b"\r\n")
                else:
                    self.wfile.write(block)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def cut(self):
        self.note(200)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "1000")
        self.end_headers()
        if self.command != "HEAD":
            head = b'{"schema":"llm-fuse-cache-entry/1","kernels":['
            self.wfile.write((head + b" " * 100)[:100])
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def file_path(self):
        """The file under files:DIR that the request names, or None if the
        path leaves DIR."""
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        parts = [p for p in path.split("/") if p]
        if not parts or any(p in (".", "..") or "\0" in p or "\\" in p
                            for p in parts):
            return None
        full = os.path.join(self.files, *parts)
        real = os.path.realpath(full)
        if not real.startswith(self.files + os.sep):
            return None
        return full

    def files_get(self):
        p = self.file_path()
        if p is None or not os.path.isfile(p):
            return self.answer(404, b"not found\n")
        with open(p, "rb") as f:
            data = f.read()
        self.answer(200, data, "application/json")

    def files_put(self, body):
        p = self.file_path()
        if p is None:
            return self.answer(400, b"bad path\n")
        existed = os.path.isfile(p)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(p), prefix=".put.")
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        os.replace(tmp, p)
        self.answer(204 if existed else 201)

    def handle_any(self):
        mode = self.mode
        body = b""
        if self.command == "PUT":
            try:
                body = self.drain_body()
            except (ValueError, ConnectionResetError):
                self.close_connection = True
                return
        if mode == "redirect":
            port = self.server.server_address[1]
            loc = "http://127.0.0.1:%d/elsewhere%s" % (port, self.path)
            return self.answer(302, extra=[("Location", loc)])
        if mode == "error":
            return self.answer(500, b"internal error\n")
        if mode == "slow":
            self.note(404)
            time.sleep(30)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode.startswith("files:"):
            if self.command == "PUT":
                return self.files_put(body)
            return self.files_get()
        if self.command == "PUT":
            return self.answer(201)
        if mode == "garbage":
            return self.answer(200, b"this is not a cache entry\n",
                               "application/json")
        if mode == "json-garbage":
            return self.answer(
                200, b'{"schema":"llm-fuse-cache-entry/1","forged":true}\n',
                "application/json")
        if mode == "huge":
            return self.huge(chunked=False)
        if mode == "huge-chunked":
            return self.huge(chunked=True)
        if mode == "cut":
            return self.cut()
        if mode == "notfound":
            return self.answer(404, b"not found\n")
        raise AssertionError(mode)

    do_GET = do_HEAD = do_PUT = handle_any


MODES = ("garbage", "json-garbage", "redirect", "huge", "huge-chunked",
         "cut", "slow", "error", "notfound")


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False

    def handle_error(self, request, client_address):
        # A client that hangs up is no news; and store.py's stderr is often
        # the stderr of the CMD a test checks.
        pass


def mode_hostile(args, cmd):
    if len(args) != 2:
        usage("hostile takes MODE LOGFILE")
    mode, logfile = args
    if mode.startswith("files:"):
        d = mode[len("files:"):]
        if not d:
            usage("files: needs a directory")
        os.makedirs(d, exist_ok=True)
        Hostile.files = os.path.realpath(d)
    elif mode not in MODES:
        usage("unknown hostile mode %r" % mode)
    Hostile.mode = mode
    Hostile.log_path = os.path.abspath(logfile)
    open(Hostile.log_path, "a").close()
    srv = Server(("127.0.0.1", 0), Hostile)
    t = threading.Thread(target=srv.serve_forever, kwargs={
        "poll_interval": 0.1}, daemon=True)
    t.start()
    try:
        return run_cmd(cmd, srv.server_address[1])
    finally:
        srv.shutdown()
        srv.server_close()


# ----------------------------------------------------------------- down

def mode_down(args, cmd):
    if args:
        usage("down takes no arguments")
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))   # bound, never listening: refused
        return run_cmd(cmd, s.getsockname()[1])
    finally:
        s.close()


def main(argv):
    if "--" not in argv:
        usage("missing -- CMD")
    sep = argv.index("--")
    head, cmd = argv[1:sep], argv[sep + 1:]
    if not head or not cmd:
        usage("missing mode or CMD")
    signal.signal(signal.SIGTERM, on_sigterm)
    modes = {"nginx": mode_nginx, "hostile": mode_hostile, "down": mode_down}
    if head[0] not in modes:
        usage("unknown mode %r" % head[0])
    return modes[head[0]](head[1:], cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
