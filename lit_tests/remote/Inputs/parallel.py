#!/usr/bin/env python3
"""parallel.py [--rounds R] N -- CMD...: starts N copies of CMD at once
("{i}" in its arguments becomes the copy's index, 0..N-1), waits for all,
and does that R times (default 1). Exits 0 when every copy of every round
exited 0, else 1 naming the failures. For the many-writers tests."""
import subprocess
import sys

args = sys.argv[1:]
rounds = 1
if args[:1] == ["--rounds"]:
    rounds = int(args[1])
    args = args[2:]
sep = args.index("--")
n = int(args[0])
cmd = args[sep + 1:]
failed = []
for r in range(rounds):
    procs = [subprocess.Popen([a.replace("{i}", str(i)) for a in cmd])
             for i in range(n)]
    for i, p in enumerate(procs):
        if p.wait() != 0:
            failed.append("round %d copy %d: exit %d" % (r, i, p.returncode))
for f in failed:
    print("parallel.py: " + f, file=sys.stderr)
sys.exit(1 if failed else 0)
