#!/usr/bin/env python3
"""with_server.py CONFIG LOG -- CMD...: runs CMD while the scripted model
server (llm_client/tests/kernel_server.py CONFIG LOG) listens on loopback;
"@PORT@" in CMD's arguments becomes its port. Exits with CMD's status; the
server ends when its stdin closes."""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
server = os.path.join(here, "..", "..", "..", "llm_client", "tests",
                      "kernel_server.py")
sep = sys.argv.index("--")
config, log = sys.argv[1:sep]
cmd = sys.argv[sep + 1:]
srv = subprocess.Popen([sys.executable, server, config, log],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE)
port = srv.stdout.readline().decode().strip()
if not port.isdigit():
    srv.kill()
    sys.exit("with_server.py: the server did not start")
rc = subprocess.call([a.replace("@PORT@", port) for a in cmd])
srv.stdin.close()
srv.wait(timeout=10)
sys.exit(rc)
