# Forges the two signed entries of signed-entries.test: the RMSNorm one's
# kernel is changed and its checksum recomputed (the documented rule), its
# signature kept; the softmax one gets the RMSNorm one's signature.
import hashlib
import json
import os
import sys

d = sys.argv[1]
rms = os.path.join(d, "a2f889338764c952-rmsnorm_bf16_4096.json")
smx = os.path.join(d, "aefcb9cebc9b9a98-softmax_bf16_8192.json")


def checksum(e):
    sizes = ",".join("%s=%s" % (k, "*" if v is None else v)
                     for k, v in e["sizes"].items())
    text = "%s\n%s\n%s\n%s\n%s\n" % (e["schema"], e["pattern"],
                                     ",".join(e["archs"]), sizes, e["class"])
    if e.get("precision"):
        text += "precision=%s\n" % e["precision"]
    text += e["template"]
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


e = json.load(open(rms))
e["template"] = e["template"].replace("arith.addf", "arith.subf", 1)
assert e["checksum"] != checksum(e)
e["checksum"] = checksum(e)
json.dump(e, open(rms, "w"))
s = json.load(open(smx))
s["signature"] = e["signature"]
json.dump(s, open(smx, "w"))
