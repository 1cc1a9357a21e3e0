#!/usr/bin/env python3
"""make_config.py CASE OUT_DIR - writes the scripted model's configuration
(llm_client/tests/kernel_server.py) for one case of bench/loop/run-device.sh
into OUT_DIR/config.json, with kernel paths relative to the repository root
(the server runs there). Prints the pass options the case needs.

Cases:
  gemm          gemm_epilogue: a naive kernel, then (asked for speed) the
                hand-written tiled one, then a faster-looking but wrong one
  block         the MiniGPT block's 6 subgraphs, each answered with its
                hand-written kernel after 2 s, for the first request and two
                refinements (18 candidates)
  corpus-bad    the bad-kernel corpus: each of its 3 subgraphs is answered
                with every wrong kernel of the corpus in turn (repairs)
  corpus-refine each subgraph first gets its good kernel, then every wrong
                kernel as a "faster" refinement
  real-MODEL    bench/loop/models/MODEL.mlir answered with the replies a
                real model wrote (bench/loop/real/MODEL/NN.reply.txt, in
                order), then HTTP 401: the loop verifies and times every
                reply and ends; the server's log holds the next request
                (with its measured times) for the model to answer
"""
import glob
import json
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HW = "kernels/handwritten"
CORPUS = "lit_tests/verify/Inputs/corpus"
CORPUS_SG = {"ew": "sg_c7fcdcdc96f8a66c", "rowsum": "sg_67ac6fa6710a008e",
             "mm": "sg_c247487195ecbb63"}
BLOCK_SG = ["sg_c77eec1dbd2dbb32", "sg_4b6d101fd59f7da9", "sg_775f56ec869d4b28",
            "sg_1c6bf422e56f7cc7", "sg_208fdd59011a4518", "sg_36d4248ce34e0c94"]


def header(path, key):
    m = re.search(r"^// %s: ?(.*)$" % key, open(os.path.join(ROOT, path)).read(),
                  re.M)
    return m.group(1).strip() if m else ""


def corpus(sub):
    files = sorted(glob.glob(os.path.join(ROOT, CORPUS, sub + "-*.mlir")))
    rel = [os.path.relpath(f, ROOT) for f in files]
    good = [f for f in rel if header(f, "EXPECT") == "accept" and
            not header(f, "ARGS")]
    bad = [f for f in rel if header(f, "EXPECT") != "accept"]
    return good, bad


def main():
    case, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    rules, opts = [], ""
    if case == "gemm":
        tiled = HW + "/sg_5beaf48efb3a6ac0.mlir"
        wrong = os.path.join(out, "gemm_tiled_wrong.mlir")
        text = open(os.path.join(ROOT, tiled)).read()
        # the epilogue's 0.5 becomes 50: fast, and wrong everywhere
        open(wrong, "w").write(text.replace("dense<5.000000e-01>",
                                            "dense<5.000000e+01>"))
        rules.append({"match": "*", "replies": [
            "file:bench/loop/kernels/gemm_naive.mlir", "file:" + tiled,
            "file:" + wrong]})
        opts = "max-refinements=2"
    elif case == "block":
        for sg in BLOCK_SG:
            rules.append({"match": "the kernel `@%s`" % sg, "delay": 2.0,
                          "replies": ["file:%s/%s.mlir" % (HW, sg)]})
        opts = "max-refinements=2"
    elif case in ("corpus-bad", "corpus-refine"):
        most = 0
        for sub, sg in sorted(CORPUS_SG.items()):
            good, bad = corpus(sub)
            seq = bad if case == "corpus-bad" else good[:1] + bad
            rules.append({"match": "the kernel `@%s`" % sg,
                          "replies": ["file:" + f for f in seq]})
            most = max(most, len(bad))
        opts = ("max-attempts=%d max-refinements=0" % most
                if case == "corpus-bad" else
                "max-attempts=1 max-refinements=%d" % most)
    elif case.startswith("real-"):
        d = os.path.join("bench/loop/real", case[5:])
        replies = sorted(f for f in os.listdir(os.path.join(ROOT, d))
                         if f.endswith(".reply.txt"))
        rules.append({"match": "*", "replies": [
            "raw:%s/%s" % (d, f) for f in replies] + ["http401"]})
        opts = "max-refinements=%d" % len(replies)
    else:
        sys.exit("unknown case " + case)
    json.dump({"rules": rules}, open(os.path.join(out, "config.json"), "w"),
              indent=1)
    print(opts)


if __name__ == "__main__":
    main()
