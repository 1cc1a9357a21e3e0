#!/usr/bin/env python3
"""forge.py - what an attacker with write access to a cache store can do to
an entry file without the signing key (for the poisoning tests).

    forge.py IN OUT edit FROM TO    replace the first FROM with TO (in the
                                    file's JSON text), recompute the
                                    checksum, keep the signature member
    forge.py IN OUT unsign          drop the signature member (the checksum
                                    does not cover it)
    forge.py IN OUT drop MEMBER     drop an optional member ("cubin",
                                    "ptx"), recompute the checksum, keep the
                                    signature

The checksum is the entry format's: SHA-256 of the file's bytes up to
',"checksum"' followed by '}' (tools/llm-fuse-cache/README.md). Anyone can
recompute it; that is the point of these tests.
"""
import hashlib
import sys

src, dst, op = sys.argv[1:4]
text = open(src, encoding="utf-8").read().rstrip("\n")
head, sep, tail = text.partition(',"checksum":')
assert sep, "no checksum member"
sig = ""
at = tail.find(',"signature":')
if at >= 0:
    sig = tail[at:-1]
if op == "edit":
    frm, to = sys.argv[4:6]
    assert frm in head, "%r not in the entry" % frm
    head = head.replace(frm, to, 1)
elif op == "unsign":
    sig = ""
elif op == "drop":
    member = ',"%s":"' % sys.argv[4]
    at = head.find(member)
    assert at >= 0, "no member " + sys.argv[4]
    end = head.index('"', at + len(member))
    head = head[:at] + head[end + 1:]
else:
    sys.exit("forge.py: unknown operation " + op)
checksum = hashlib.sha256((head + "}").encode("utf-8")).hexdigest()
with open(dst, "w", encoding="utf-8") as f:
    f.write(head + ',"checksum":"sha256:' + checksum + '"' + sig + "}\n")
