#!/usr/bin/env python3
"""acquire_cli_test.py - llm-fuse-acquire end to end.

    acquire_cli_test.py LLM_FUSE_ACQUIRE

1. the shipped replay set answers every hand-written subgraph offline;
2. provider none asks nobody; openai offline fails clearly per subgraph;
3. the API-key canary: a run against a loopback server that echoes the
   Authorization header into its replies, with record, cache, report,
   kernels and trace logging on; the key must appear in none of the files
   or streams;
4. the recording replays offline to the same kernels.
Python 3 standard library only.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = sys.argv[1]
KEY = "sk-canary-cli-3f9d1e7a5b2c4680"
failures = 0


def check(cond, what):
    global failures
    print("%s %s" % ("PASS" if cond else "FAIL", what))
    if not cond:
        failures += 1


def run(args, env_extra=None, **kw):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LLM_FUSE_") and k != "OPENAI_API_KEY"}
    env.update(env_extra or {})
    return subprocess.run([TOOL] + args, capture_output=True, text=True,
                          env=env, timeout=60, **kw)


def tasks_file(tmp, entries, arch):
    path = os.path.join(tmp, "tasks-%s.json" % arch)
    with open(path, "w") as f:
        json.dump({"tasks": [{"name": e["subgraph"], "fingerprint": e["fingerprint"],
                              "class": e["class"], "signature": e["signature"],
                              "ir": "func.func private @%s() { return }" % e["subgraph"],
                              "arch": arch} for e in entries]}, f)
    return path


def main():
    with open(os.path.join(ROOT, "llm_client", "prompts", "examples.json")) as f:
        examples = json.load(f)["examples"]
    seen, entries = set(), []
    for e in examples:
        if e["fingerprint"] not in seen:
            seen.add(e["fingerprint"])
            entries.append(e)
    with tempfile.TemporaryDirectory() as tmp:
        # 1. The shipped set, offline, on the pass's default arch.
        tasks = tasks_file(tmp, entries, "sm_90a")
        r = run(["--offline", "--build", "none", "--report",
                 os.path.join(tmp, "shipped.json"), tasks])
        rep = json.load(open(os.path.join(tmp, "shipped.json")))
        oks = [g for g in rep["subgraphs"] if g["outcome"] == "ok"]
        check(r.returncode == 0 and len(oks) == len(entries) >= 18,
              "shipped replay set: %d/%d subgraphs offline" % (len(oks), len(entries)))
        check(all(g["provider"] == "handwritten" for g in oks), "replayed from the hand-written set")

        # 2. provider none; openai offline.
        r = run(["--provider", "none", tasks])
        check(r.returncode == 1 and r.stdout.count(" skipped ") == len(entries), "provider none skips all")
        r = run(["--provider", "openai", "--offline", "--build", "none",
                 "--endpoint", "http://127.0.0.1:9/v1", tasks])
        check(r.returncode == 1 and r.stdout.count("offline: not in the cache") == len(entries),
              "openai offline: a clear error per subgraph")

        # 3. The canary.
        mine = entries[:3]
        cfg = os.path.join(tmp, "server.json")
        with open(cfg, "w") as f:
            json.dump({"rules": [{"match": mine[0]["subgraph"], "replies": ["echo-auth"]},
                                 {"match": "*", "replies": ["good"], "usage": [10, 5]}]}, f)
        log = os.path.join(tmp, "server.jsonl")
        server = subprocess.Popen([sys.executable, os.path.join(HERE, "kernel_server.py"), cfg, log],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        port = int(server.stdout.readline())
        rec, cache, kdir = (os.path.join(tmp, d) for d in ("record", "cache", "kernels"))
        report = os.path.join(tmp, "canary.json")
        tasks3 = tasks_file(tmp, mine, "sm_90")
        r = run(["--provider", "openai", "--endpoint", "http://127.0.0.1:%d/v1" % port,
                 "--model", "canary-model", "--build", "none", "--record", rec,
                 "--cache-dir", cache, "--report", report, "--with-kernels",
                 "--kernels-dir", kdir, tasks3],
                env_extra={"OPENAI_API_KEY": KEY, "LLM_FUSE_LOG": "trace"})
        server.stdin.close()
        server.wait(timeout=10)
        check(r.returncode == 0, "canary run succeeds (rc %d)" % r.returncode)
        sent = [json.loads(l) for l in open(log)]
        check(len(sent) == 3 and all(x["auth_present"] for x in sent),
              "the key was sent to the server")
        leaks = []
        for d in (rec, cache, kdir):
            for dirpath, _, files in os.walk(d):
                for name in files:
                    p = os.path.join(dirpath, name)
                    if KEY.encode() in open(p, "rb").read():
                        leaks.append(p)
        if KEY in open(report).read():
            leaks.append(report)
        if KEY in r.stdout:
            leaks.append("stdout")
        if KEY in r.stderr:
            leaks.append("stderr")
        nfiles = sum(len(f) for d in (rec, cache, kdir) for _, _, f in os.walk(d))
        check(not leaks and nfiles >= 9,
              "the key appears in none of %d files, report, stdout, stderr %s"
              % (nfiles, leaks))
        check("[REDACTED]" in open(report).read(), "the echoed key was redacted")
        check("acquire:" in r.stderr and "asking openai" in r.stderr, "progress lines logged")

        # 4. The recording replays offline to the same kernels.
        report2 = os.path.join(tmp, "replayed.json")
        r = run(["--provider", "replay", "--replay-dir", rec, "--replay-strict",
                 "--model", "canary-model", "--offline", "--build", "none",
                 "--report", report2, "--with-kernels", tasks3])
        a = {g["name"]: g.get("kernel") for g in json.load(open(report))["subgraphs"]}
        b = {g["name"]: g.get("kernel") for g in json.load(open(report2))["subgraphs"]}
        check(r.returncode == 0 and a == b and all(a.values()),
              "record then replay: the same %d kernels" % len(a))
    print("%d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
