"""llvm-mc oracle helper: disassemble many independent cases in one llvm-mc run.

Each case is wrapped in an atomic block `[..]` (llvm-mc skips the whole block on an invalid
encoding) and followed by a marker instruction, so the output splits back into cases.
"""
import subprocess

MARKER_BYTES = [0xA5, 0x5A, 0x63, 0xB0]  # s_movk_i32 s99, 0x5aa5
MARKER_TEXT = "\ts_movk_i32 s99, 0x5aa5"


def words_to_bytes(words):
    out = []
    for w in words:
        out += [w & 0xFF, (w >> 8) & 0xFF, (w >> 16) & 0xFF, (w >> 24) & 0xFF]
    return out


CRASHED = ["<llvm-mc crashed>"]


def run(cases, mcpu="gfx1030", wave64=False, chunk=4000):
    import hashlib
    import os
    import pickle
    h = hashlib.sha256(repr((mcpu, wave64, cases)).encode()).hexdigest()
    path = os.path.join("/tmp/aps5-probe-cache", h + ".pkl")
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    res = _run_all(cases, mcpu, wave64, chunk)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(res, f)
    return res


def _run_all(cases, mcpu, wave64, chunk):
    """cases: list of byte lists. Returns list of list of output lines (without leading tab).

    A case on which llvm-mc itself dies (LLVM 14 asserts on a few encodings) gets CRASHED."""
    res = []
    i = 0
    while i < len(cases):
        part = _run(cases[i:i + chunk], mcpu, wave64)
        res += part
        i += len(part)
        if i < len(cases) and len(part) < min(chunk, len(cases) - (i - len(part))):
            res.append(CRASHED)
            i += 1
    return res


def _run(cases, mcpu, wave64):
    lines = []
    for c in cases:
        lines.append("[" + ",".join("0x%02x" % b for b in c) + "]")
        lines.append("[" + ",".join("0x%02x" % b for b in MARKER_BYTES) + "]")
    attr = "-wavefrontsize32,+wavefrontsize64" if wave64 else "+wavefrontsize32,-wavefrontsize64"
    p = subprocess.run(["llvm-mc", "-arch=amdgcn", "-mcpu=" + mcpu, "-mattr=" + attr, "-disassemble"],
                       input="\n".join(lines) + "\n", capture_output=True, text=True)
    out = p.stdout.split("\n")
    assert out[0].strip() == ".text", out[:3]
    res = []
    cur = []
    for l in out[1:]:
        if l == MARKER_TEXT:
            res.append(cur)
            cur = []
        elif l != "":
            cur.append(l[1:] if l.startswith("\t") else l)
    return res
