#!/usr/bin/env python3
"""gen_replay.py - the shipped replay set and the prompt examples, generated
from kernels/handwritten/manifest-*.json so that they never drift apart.

    gen_replay.py [--check] [--opt LLM_FUSE_OPT]

Writes
  kernels/replay/<fingerprint>.<arch>.v1.1.json   one per subgraph and arch
  llm_client/prompts/examples.json                the examples index

A replay entry answers attempt 1 of a subgraph on one arch with the
hand-written kernel, by reference (reply_file, relative to the replay
folder, plus its SHA-256: the replay provider refuses a file that changed
since). Arches: the manifest's chips, plus sm_90a for a kernel built for
sm_90 when the manifest has no sm_90a-specific kernel of that subgraph (an
sm_90 kernel is valid on sm_90a, the pass's default arch).

Classes are not in the manifests; they follow from the kernel's name
(rmsnorm/layernorm/softmax/rowsum/rowmax/add_rmsnorm: reduction, add_* and
bias_gelu: elementwise, causal_attention: attention-like, anything else:
contraction), which is how the outliner classes those
subgraphs. --opt LLM_FUSE_OPT checks that against the outliner's report.

--check writes nothing and exits 1 when a generated file would differ (or
is missing, or a generated file exists that would not be generated).
Python 3 standard library only.
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HANDWRITTEN = os.path.join(ROOT, "kernels", "handwritten")
PROMPTS = os.path.join(ROOT, "llm_client", "prompts")
sys.path.insert(0, HANDWRITTEN)
from check_manifest import split_top  # noqa: E402
MAJOR = "v1"


def klass_of(kernel):
    if re.match(r"(rmsnorm|layernorm|softmax|rowsum|rowmax|add_rmsnorm)", kernel):
        return "reduction"
    if re.match(r"(add_|bias_gelu)", kernel):
        return "elementwise"
    if kernel.startswith("causal_attention"):
        return "attention-like"
    return "contraction"


def dtype_of(signature):
    results = signature.split("->", 1)[1].strip()
    if results.startswith("("):
        results = results[1:-1]
    first = split_top(results)[0]
    m = re.match(r"tensor<(.*)>$", first)
    return m.group(1).split("x")[-1] if m else first


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def dumps(obj):
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


def generate():
    entries = []
    for name in sorted(os.listdir(HANDWRITTEN)):
        if name.startswith("manifest-") and name.endswith(".json"):
            with open(os.path.join(HANDWRITTEN, name)) as f:
                entries.extend(json.load(f))
    files = {}
    examples = []
    suffixed = {(e["fingerprint"], c) for e in entries for c in e["chips"]}
    for e in entries:
        path = os.path.join(HANDWRITTEN, e["file"])
        digest = sha256(path)
        klass = klass_of(e["kernel"])
        examples.append({
            "subgraph": e["subgraph"], "fingerprint": e["fingerprint"],
            "class": klass, "dtype": dtype_of(e["signature"]),
            "signature": e["signature"], "kernel": e["kernel"],
            "chips": e["chips"], "file": "../../kernels/handwritten/" + e["file"],
            "bytes": os.path.getsize(path), "sha256": digest,
        })
        arches = list(e["chips"])
        if "sm_90" in arches and (e["fingerprint"], "sm_90a") not in suffixed:
            arches.append("sm_90a")
        for arch in arches:
            fname = "%s.%s.%s.1.json" % (e["fingerprint"], arch, MAJOR)
            files[os.path.join(HERE, fname)] = dumps({
                "schema": "llm-fuse-replay/1", "fingerprint": e["fingerprint"],
                "arch": arch, "prompt": MAJOR, "attempt": 1,
                "provider": "handwritten", "model": "handwritten",
                "subgraph": e["subgraph"], "class": klass,
                "reply_file": "../handwritten/" + e["file"],
                "reply_sha256": digest,
            })
    examples.sort(key=lambda x: (x["class"], x["subgraph"], x["file"]))
    files[os.path.join(PROMPTS, "examples.json")] = dumps(
        {"schema": "llm-fuse-prompt-examples/1", "examples": examples})
    return files, entries


def check_classes(opt, entries):
    bad = 0
    examples_dir = os.path.join(ROOT, "examples")
    seen = {}
    for e in entries:
        path = os.path.join(examples_dir, e["example"] + ".mlir")
        if path not in seen:
            with tempfile.TemporaryDirectory() as tmp:
                rep = os.path.join(tmp, "r.json")
                subprocess.run([opt, "--llm-fuse-outline=remarks=false report=" + rep, path],
                               check=True, capture_output=True)
                with open(rep) as f:
                    seen[path] = {g["fingerprint"]: g["class"] for g in json.load(f)["subgraphs"]}
        got = seen[path].get(e["fingerprint"])
        if got != klass_of(e["kernel"]):
            print("class mismatch for %s: outliner says %s, name rule %s"
                  % (e["subgraph"], got, klass_of(e["kernel"])))
            bad = 1
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--opt")
    args = ap.parse_args()
    files, entries = generate()
    status = check_classes(args.opt, entries) if args.opt else 0
    stale = [os.path.join(HERE, n) for n in os.listdir(HERE)
             if n.endswith(".json") and ".%s." % MAJOR in n
             and os.path.join(HERE, n) not in files]
    if args.check:
        for path, text in sorted(files.items()):
            try:
                with open(path) as f:
                    same = f.read() == text
            except FileNotFoundError:
                same = False
            if not same:
                print("out of date: %s" % os.path.relpath(path, ROOT))
                status = 1
        for path in stale:
            print("not generated any more: %s" % os.path.relpath(path, ROOT))
            status = 1
        if status == 0:
            print("gen_replay: %d files up to date" % len(files))
        return status
    for path in stale:
        os.remove(path)
    for path, text in sorted(files.items()):
        with open(path, "w") as f:
            f.write(text)
    print("gen_replay: wrote %d files (%d replay entries)" % (len(files), len(files) - 1))
    return status


if __name__ == "__main__":
    sys.exit(main())
