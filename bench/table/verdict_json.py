"""verdict_json.py - reading llm-fuse-verify's JSON verdicts in the device
scripts' torch halves (skinny_torch.py, colred_torch.py, bmm_torch.py).
Python 3 standard library only."""


def find(o, key):
    """The first number under `key` anywhere in the JSON tree `o` (dicts
    searched before their values, lists in order); None if there is none."""
    if isinstance(o, dict):
        if key in o and isinstance(o[key], (int, float)):
            return o[key]
        for v in o.values():
            r = find(v, key)
            if r is not None:
                return r
    if isinstance(o, list):
        for v in o:
            r = find(v, key)
            if r is not None:
                return r
    return None
