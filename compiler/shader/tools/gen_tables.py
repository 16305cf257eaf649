#!/usr/bin/env python3
"""Generates compiler/shader/src/tables.rs by probing LLVM 14 `llvm-mc` (the oracle).

For every encoding family and every opcode value it disassembles a few probe words whose
fields hold distinct, recognisable values, then maps the printed operands back onto fields.
The result is opcode facts only (names, operand order, register widths, constant classes and
modifier support), per target (gfx1010, gfx1013, gfx1030). No LLVM code is involved.

Run from the repository root:  python3 compiler/shader/tools/gen_tables.py
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import oracle  # noqa: E402

W = oracle.words_to_bytes
CPUS = ["gfx1010", "gfx1013", "gfx1030"]
CPU_BIT = {"gfx1010": 1, "gfx1013": 2, "gfx1030": 4}

REG_RE = re.compile(r"^([sv])(\d+)$|^([sv])\[(\d+):(\d+)\]$")


def reg(tok):
    m = REG_RE.match(tok)
    if not m:
        return None
    if m.group(1):
        return (m.group(1), int(m.group(2)), 1)
    lo, hi = int(m.group(4)), int(m.group(5))
    return (m.group(3), lo, hi - lo + 1)


def split_ops(text):
    """'name a, b, c mods' -> (name, [a, b, c], 'mods')."""
    text = text.replace("/*invalid immediate*/", "/*invalid_immediate*/")
    name, _, rest = text.partition(" ")
    if not rest:
        return name, [], ""
    parts = rest.split(", ")
    last = parts[-1]
    # modifiers follow the last operand after a space (operands never contain spaces,
    # except hwreg(...) which we keep intact)
    if last.startswith("hwreg("):
        mods = ""
    else:
        toks = last.split(" ")
        parts[-1] = toks[0]
        mods = " ".join(toks[1:])
    return name, parts, mods


def probe(cases_by_key, cpu, wave64=False):
    keys = list(cases_by_key)
    outs = oracle.run([cases_by_key[k] for k in keys], cpu, wave64)
    return dict(zip(keys, outs))


# Constant class: printed form of inline 1/(2*pi) and literal 0x12345678.
CLASSES = {
    ("0.15915494", "0x12345678"): "C32",
    ("0.15915494309189532", "0x12345678"): "C64",
    ("0.15915494", "0x5678"): "F16",
    ("0x3118", "0x5678"): "I16",
    ("0x3118", "0x12345678"): "I16P",
}


def first_text(o):
    return o[0] if o else None


def src_token(text, idx):
    if text is None:
        return None
    _, ops, _ = split_ops(text)
    return ops[idx] if idx < len(ops) else None


def const_class(inl, lit, pos):
    a = src_token(inl, pos)
    b = src_token(lit, pos)
    if a is None or b is None:
        return "NONE"
    a = a.strip("|-")
    if a == "/*invalid_immediate*/":
        return "INV"
    if reg(a) and reg(a)[0] == "v":
        return "VGPR"
    return CLASSES.get((a, b), "C32")


class Entry:
    def __init__(self, fam, op, name, slots, flags, classes):
        self.fam, self.op, self.name, self.slots, self.flags, self.classes = (
            fam, op, name, slots, flags, classes)
        self.cpus = 0

    fixed = (0, 0)
    sdwa_fixed = (0, 0)
    dpp_fixed = (0, 0)

    def key(self):
        return (self.name, tuple(self.slots), tuple(sorted(self.flags)), tuple(self.classes),
                self.fixed, self.sdwa_fixed, self.dpp_fixed)


def map_tokens(ops, fieldvals, fam):
    """Maps printed operand tokens onto (field, width) slots."""
    slots = []
    for t in ops:
        r = reg(t)
        found = None
        if r:
            for fname, fvv in fieldvals.items():
                if fname.startswith("_"):
                    continue
                rf, num = fvv
                if r[0] == rf and r[1] == num:
                    found = (fname, r[2])
                    break
            if found is None and r[0] == "s" and r[1] == 0:
                found = ("SDST3B", r[2])
        else:
            if t in ("vcc_lo", "vcc"):
                found = ("VCC", 1 if t == "vcc_lo" else 2)
            elif t in ("exec_lo", "exec"):
                found = ("EXEC", 1)
            elif t in fieldvals.get("_lit", ()):
                found = ("LIT", 1)
            elif t.startswith("0x") or t.isdigit():
                found = ("IMM", 0)
            elif t.startswith("hwreg("):
                found = ("HWREG", 0)
            elif t.startswith("attr"):
                found = ("ATTR", 0)
            elif t == "m0":
                found = ("M0", 1)
            elif t == "off":
                found = ("OFF", 0)
            else:
                found = ("TOK:" + t, 0)
        if found is None:
            found = ("UNK:" + t, 0)
        slots.append(found)
    return slots


# ---------------------------------------------------------------- families
def fam_scalar():
    """SOP1, SOP2, SOPK, SOPC, SOPP: returns {fam: {op: {variant: bytes}}}."""
    fams = {}
    lit = 0x12345678

    def add(fam, op, var, words):
        fams.setdefault(fam, {}).setdefault(op, {})[var] = W(words)

    for op in range(256):
        base = 0xBE800000 | (op << 8)
        add("SOP1", op, "a", [base | (4 << 16) | 8])
        add("SOP1", op, "b", [base | (4 << 16) | 0])
        add("SOP1", op, "c", [base | 8])
        add("SOP1", op, "inl0", [base | (4 << 16) | 0xF8])
        add("SOP1", op, "lit0", [base | (4 << 16) | 0xFF, lit])
    for op in range(0x60):
        base = 0x80000000 | (op << 23)
        add("SOP2", op, "a", [base | (4 << 16) | (12 << 8) | 8])
        add("SOP2", op, "inl0", [base | (4 << 16) | (12 << 8) | 0xF8])
        add("SOP2", op, "lit0", [base | (4 << 16) | (12 << 8) | 0xFF, lit])
        add("SOP2", op, "inl1", [base | (4 << 16) | (0xF8 << 8) | 8])
        add("SOP2", op, "lit1", [base | (4 << 16) | (0xFF << 8) | 8, lit])
    for op in range(29):
        base = 0xB0000000 | (op << 23)
        add("SOPK", op, "a", [base | (4 << 16) | 0x1234])
        add("SOPK", op, "l", [base | (4 << 16) | 0x1234, lit])
    for op in range(128):
        base = 0xBF000000 | (op << 16)
        if (base >> 23) & 0x1FF in (0x17D, 0x17F):
            continue
        add("SOPC", op, "a", [base | (12 << 8) | 8])
        add("SOPC", op, "inl0", [base | (12 << 8) | 0xF8])
        add("SOPC", op, "lit0", [base | (12 << 8) | 0xFF, lit])
        add("SOPC", op, "inl1", [base | (0xF8 << 8) | 8])
        add("SOPC", op, "lit1", [base | (0xFF << 8) | 8, lit])
    for op in range(128):
        base = 0xBF800000 | (op << 16)
        add("SOPP", op, "a", [base | 0x1234])
        add("SOPP", op, "z", [base])
    return fams


SCALAR_FIELDS = {
    "SOP1": {"SDST": ("s", 4), "SSRC0": ("s", 8)},
    "SOP2": {"SDST": ("s", 4), "SSRC0": ("s", 8), "SSRC1": ("s", 12)},
    "SOPK": {"SDST": ("s", 4), "_lit": ("0x12345678",)},
    "SOPC": {"SSRC0": ("s", 8), "SSRC1": ("s", 12)},
    "SOPP": {},
}


def fam_smem():
    fams = {}
    for op in range(256):
        base = 0xF4000000 | (op << 18)
        d = fams.setdefault("SMEM", {}).setdefault(op, {})
        d["a"] = W([base | (4 << 6) | 4, 0x1234 | (0x7D << 25)])
        d["b"] = W([base | (4 << 6) | 4 | (1 << 16), 0x1234 | (0x7D << 25)])
        d["dl"] = W([base | (4 << 6) | 4 | (1 << 14), 0x1234 | (0x7D << 25)])
        d["z"] = W([base, 0x1234 | (0x7D << 25)])
    return fams


SMEM_FIELDS = {"SDATA": ("s", 4), "SBASE": ("s", 8)}


def vop_src_variants(words_fn, nsrc):
    """Variants of a VOP probe: all sources set, then trailing sources zeroed."""
    out = {}
    regs = [0x102, 0x103, 0x104][:nsrc]
    for k in range(nsrc + 1):
        srcs = regs[: nsrc - k] + [0] * k
        out["v%d" % k] = words_fn(srcs, {})
    return out


DPP_MODS = {"dppneg0": 20, "dppabs0": 21, "dppneg1": 22, "dppabs1": 23}
SDWA_MODS = {"sdwasext0": 19, "sdwaneg0": 20, "sdwaabs0": 21, "sdwasext1": 27, "sdwaneg1": 28,
             "sdwaabs1": 29}


def dpp_sdwa_mod_probes(d, b, sdwa_base):
    """One probe per DPP/SDWA source modifier bit: printed, ignored or rejected."""
    for k, bit in DPP_MODS.items():
        d[k] = W([b | 0xFA, 0xFF00E402 | (1 << bit)])
    for k, bit in SDWA_MODS.items():
        d[k] = W([b | 0xF9, sdwa_base | (1 << bit)])


def vop3_variants(d, mk, mods):
    """Per source-count variant k (k trailing sources zeroed): base, constants, modifiers."""
    lit = 0x12345678
    for k in range(4):
        n = 3 - k
        srcs = [0x102, 0x103, 0x104][:n] + [0] * k
        d["v%d" % k] = W(mk(srcs))
        for p in range(n):
            d["inl%d_%d" % (p, k)] = W(mk(srcs[:p] + [0xF8] + srcs[p + 1:]))
            d["lit%d_%d" % (p, k)] = W(mk(srcs[:p] + [0xFF] + srcs[p + 1:]) + [lit])
        if mods:
            m = (1 << n) - 1
            for p in range(n):
                d["abs%d_%d" % (p, k)] = W(mk(srcs, 1 << (8 + p)))
                d["neg%d_%d" % (p, k)] = W(mk(srcs, 0, 1 << (29 + p)))
            d["clamp%d" % k] = W(mk(srcs, 1 << 15))
            d["omod%d" % k] = W(mk(srcs, 0, 1 << 27))
            d["opsel%d" % k] = W(mk(srcs, (m | 8) << 11))


def fam_vop():
    fams = {}
    lit = 0x12345678
    for op in range(256):  # VOP1
        d = fams.setdefault("VOP1", {}).setdefault(op, {})
        b = 0x7E000000 | (op << 9) | (1 << 17)
        d["v0"] = W([b | 0x102])
        d["v1"] = W([b | 0])
        d["v2"] = W([0x7E000000 | (op << 9)])
        d["inl0"] = W([b | 0xF8])
        d["lit0"] = W([b | 0xFF, lit])
        d["sdwa"] = W([b | 0xF9, 0x00060602])
        d["dpp"] = W([b | 0xFA, 0xFF00E402])
        d["dpp8"] = W([b | 0xE9, 0x02])
        dpp_sdwa_mod_probes(d, b, 0x00060602)
    for op in range(64):  # VOP2
        if op == 63:
            continue
        d = fams.setdefault("VOP2", {}).setdefault(op, {})
        b = (op << 25) | (1 << 17) | (3 << 9)
        d["v0"] = W([b | 0x102, 0x11223344])
        d["inl0"] = W([b | 0xF8, 0x11223344])
        d["lit0"] = W([b | 0xFF, lit])
        d["sdwa"] = W([b | 0xF9, 0x06060602])
        d["dpp"] = W([b | 0xFA, 0xFF00E402])
        d["dpp8"] = W([b | 0xE9, 0x02])
        dpp_sdwa_mod_probes(d, b, 0x06060602)
    for op in range(256):  # VOPC
        d = fams.setdefault("VOPC", {}).setdefault(op, {})
        b = 0x7C000000 | (op << 17) | (3 << 9)
        d["v0"] = W([b | 0x102])
        d["inl0"] = W([b | 0xF8])
        d["lit0"] = W([b | 0xFF, lit])
        d["sdwa"] = W([b | 0xF9, 0x06060002])
        d["dpp"] = W([b | 0xFA, 0xFF00E402])
        d["dpp8"] = W([b | 0xE9, 0x02])
        dpp_sdwa_mod_probes(d, b, 0x06060002)
    for op in range(1024):  # VOP3
        d = fams.setdefault("VOP3", {}).setdefault(op, {})
        w0 = 0xD4000000 | (op << 16) | 1

        def mk(srcs, extra0=0, extra1=0, w0=w0):
            s = srcs + [0] * (3 - len(srcs))
            return [w0 | extra0, s[0] | (s[1] << 9) | (s[2] << 18) | extra1]

        vop3_variants(d, mk, True)
        d["zz"] = W([0xD4000000 | (op << 16), 0])
    for pfx, fname in ((0xCC000000, "VOP3P"), (0xD3800000, "VOP3P9")):
        for op in range(128):  # VOP3P (and the GFX9 VOP3P prefix llvm-mc also accepts)
            vop3p_probe(fams, fname, pfx, op)
    return fams


def vop3p_probe(fams, fname, pfx, op):
    if True:
        d = fams.setdefault(fname, {}).setdefault(op, {})
        w0 = pfx | (op << 16) | 1

        def mk(srcs, extra0=0, extra1=0, w0=w0):
            s = srcs + [0] * (3 - len(srcs))
            return [w0 | extra0 | (1 << 14), s[0] | (s[1] << 9) | (s[2] << 18) | extra1 | (3 << 27)]

        vop3_variants(d, mk, False)


def fam_mem():
    fams = {}
    for op in range(256):  # DS
        d = fams.setdefault("DS", {}).setdefault(op, {})
        b = 0xD8000000 | (op << 18)
        vals = [2, 3, 4, 1]  # addr, data0, data1, vdst
        for mask in range(16):
            v = [x if (mask >> i) & 1 == 0 else 0 for i, x in enumerate(vals)]
            d["m%02d" % mask] = W([b, v[0] | (v[1] << 8) | (v[2] << 16) | (v[3] << 24)])
            d["g%02d" % mask] = W([b | (1 << 17), v[0] | (v[1] << 8) | (v[2] << 16) | (v[3] << 24)])
        d["o"] = None
    for op in range(256):  # MUBUF (op bit 7 lives in dword 0 bit 25)
        d = fams.setdefault("MUBUF", {}).setdefault(op, {})
        b = 0xE0000000 | ((op & 0x7F) << 18) | ((op >> 7) << 25) | (1 << 12)
        d["m00"] = W([b, 2 | (5 << 8) | (2 << 16) | (3 << 24)])
        d["m01"] = W([b & ~(1 << 12), 0 | (5 << 8) | (2 << 16) | (3 << 24)])
        d["m02"] = W([b & ~(1 << 12), 0 | (0 << 8) | (2 << 16) | (3 << 24)])
        d["m03"] = W([b | (1 << 14), 2 | (5 << 8) | (2 << 16) | (3 << 24)])
    for op in range(128):  # FLAT, 3 segments
        for seg in range(3):
            d = fams.setdefault("FLAT%d" % seg, {}).setdefault(op, {})
            b = 0xDC000000 | (op << 18) | (seg << 14)
            d["m00"] = W([b, 2 | (3 << 8) | (0x7D << 16) | (1 << 24)])
            d["m01"] = W([b, 2 | (3 << 8) | (0x7D << 16) | (0 << 24)])
            d["m02"] = W([b, 2 | (0 << 8) | (0x7D << 16) | (1 << 24)])
            d["m03"] = W([b, 2 | (0 << 8) | (0x7D << 16) | (0 << 24)])
            d["m04"] = W([b | (1 << 16), 2 | (3 << 8) | (0x7D << 16) | (1 << 24)])
    for op in range(16):  # MTBUF (op bit 3 lives in dword 1 bit 21)
        d = fams.setdefault("MTBUF", {}).setdefault(op, {})
        b = 0xE8000000 | ((op & 7) << 16) | (1 << 12) | (1 << 19)
        hi = (op >> 3) << 21
        d["m00"] = W([b, 2 | (5 << 8) | (2 << 16) | (3 << 24) | hi])
    for f in fams.values():
        for o in f.values():
            o.pop("o", None)
    return fams


def mimg_word0(op, dim=0, nsa=0, extra=0xF << 8):
    return 0xF0000000 | ((op & 0x7F) << 18) | (op >> 7) | extra | (dim << 3) | (nsa << 1)


def nsa_probe_dmask(text):
    """(dmask field bits, tfe) for NSA probes: a data width unlike the default variant's."""
    if "gather4" in text:
        return (0xF << 8, 1)
    if "cmpswap" in text:
        return (0xF << 8, 0)
    if "atomic" in text:
        return (0x3 << 8, 0)
    return (0xF << 8, 0)


def mimg_entries(cpu):
    # Phase 1: which sampler field value each opcode accepts (25 = s[100:103], or 0 = none).
    # Atomics take dmask 0x1 (0x3 for cmpswap); ray tracing needs unorm+r128 set.
    variants = [(25, 0x1 << 8), (0, 0x1 << 8), (0, 0x3 << 8), (0, 0x9F << 8), (25, 0xF << 8), (0, 0xF << 8)]
    base_cases = []
    for op in range(256):
        for ss, extra in variants:
            base_cases.append(W([mimg_word0(op, 0, 0, extra), 8 | (16 << 8) | (1 << 16) | (ss << 21)]))
    base_res = oracle.run(base_cases, cpu)
    chosen = {}
    for op in range(256):
        for n, (ss, extra) in enumerate(variants):
            o = base_res[op * len(variants) + n]
            if o:
                if "cmpswap" in o[0]:
                    extra = 0x3 << 8
                elif "atomic" in o[0]:
                    extra = 0x1 << 8
                chosen[op] = (ss, o[0], extra)
                break
    cases = {}

    def w1_of(ss, vdata=16, vaddr=8):
        return vaddr | (vdata << 8) | (1 << 16) | (ss << 21)

    nsa_bytes = [0x0C0B0A09, 0x100F0E0D, 0x14131211]
    for op, (ss, _, ex) in chosen.items():
        for dim in range(8):
            for a16 in range(2):
                x1 = w1_of(ss) | (a16 << 30)
                cases[(op, "d%d%d" % (dim, a16))] = W([mimg_word0(op, dim, 0, ex), x1])
                # forced bail (address register overflow) for the default variant
                cases[(op, "fb%d%d" % (dim, a16))] = W([mimg_word0(op, dim, 0, ex), w1_of(ss, 100, 255) | (a16 << 30)])
                for k in range(1, 4):
                    # data width chosen to differ from the default variant's, so a bail shows
                    nx, ntfe = nsa_probe_dmask(chosen[op][1])
                    if chosen[op][1].startswith("image_bvh"):
                        nx, ntfe = ex, 0
                    cases[(op, "n%d%d%d" % (dim, a16, k))] = W(
                        [mimg_word0(op, dim, k, nx) | (ntfe << 16), x1] + nsa_bytes[:k])
        # forced bail: wanted data width 5 overflows v255 while the default width still fits
        for vd in (252, 253, 254, 255):
            cases[(op, "fbv%d" % vd)] = W([mimg_word0(op, 0, 0, (ex & ~0xF00) | (0xF << 8)) | (1 << 16),
                                          w1_of(ss, vd)])
        for dm in range(16):
            for d16 in range(2):
                for tfe in range(2):
                    cases[(op, "sw%d_%d_%d" % (dm, d16, tfe))] = W(
                        [mimg_word0(op, 0, 0, dm << 8) | (tfe << 16), w1_of(ss) | (d16 << 31)])
        # which data widths can be widened to, per address form
        for dim in range(8):
            for a16 in range(2):
                for dm in (1, 3, 7, 0xF):
                    for d16 in range(2):
                        for tfe in range(2):
                            cases[(op, "cv%d%d_%d_%d_%d" % (dim, a16, dm, d16, tfe))] = W(
                                [mimg_word0(op, dim, 0, (ex & ~0xF00) | (dm << 8)) | (tfe << 16),
                                 w1_of(ss) | (a16 << 30) | (d16 << 31)])
        for bit in (7, 12, 13, 15, 16, 17, 25, 62, 63):
            w0 = mimg_word0(op, 0, 0, ex)
            x1 = w1_of(ss)
            if bit < 32:
                w0 ^= 1 << bit
            else:
                x1 ^= 1 << (bit - 32)
            cases[(op, "fl%d" % bit)] = W([w0, x1])
    keys = list(cases)
    res = dict(zip(keys, oracle.run([cases[k] for k in keys], cpu)))

    # Phase 2: force a bail on every NSA variant by making the wanted data width overflow v255
    # while the default width still fits (vdata = 256 - default width).
    cases2 = {}
    for op, (ss, base, ex) in chosen.items():
        for dim in range(8):
            for a16 in range(2):
                for k in range(1, 4):
                    for vd in (252, 253, 254, 255):
                        cases2[(op, "nb%d%d%d_%d" % (dim, a16, k, vd))] = W(
                            [mimg_word0(op, dim, k, (ex & ~0xF00) | (0xF << 8)) | (1 << 16),
                             w1_of(ss, vd) | (a16 << 30)] + nsa_bytes[:k])
    keys2 = list(cases2)
    res.update(zip(keys2, oracle.run([cases2[k] for k in keys2], cpu)))

    def vdata_w(o):
        if not o:
            return None
        _, ops, _ = split_ops(o[0])
        r = reg(ops[0]) if ops else None
        return r[2] if r else None

    def vaddr_info(o):
        """(width or count, is_nsa) of the address operand."""
        if not o:
            return None
        m = re.search(r", \[(v\d+(?:, v\d+)*)\]", o[0])
        if m:
            return (m.group(1).count(",") + 1, True)
        _, ops, _ = split_ops(o[0])
        r = reg(ops[1]) if len(ops) > 1 else None
        return (r[2], False) if r else None

    out = {}
    for op, (ss, base, ex) in chosen.items():
        name, ops, mods = split_ops(base)
        gather = "gather4" in name
        bvh = name.startswith("image_bvh")

        def dexp(dm, d16, tfe):
            d = 4 if gather else max(bin(dm).count("1"), 1)
            if d16:
                d = (d + 1) // 2
            return d + tfe

        slots = []
        for t in ops:
            r = reg(t)
            if t.startswith("["):
                slots.append(("VADDR", 0))
            elif r and r[0] == "v" and r[1] == 16:
                slots.append(("VDATA", r[2]))
            elif r and r[0] == "v" and r[1] == 8:
                slots.append(("VADDR", r[2]))
            elif r and r[0] == "s" and r[1] == 4:
                slots.append(("SRSRC", r[2]))
            elif r and r[0] == "s" and r[1] == 100:
                slots.append(("SSAMP", 4))
            else:
                slots.append(("UNK:" + t, 0))
        nx, ntfe = nsa_probe_dmask(base)
        if bvh:
            nx, ntfe = ex, 0
        exd = 4 if bvh else dexp((nx >> 8) & 0xF, 0, ntfe)
        anon = []
        for dim in range(8):
            for a16 in range(2):
                v = vaddr_info(res[(op, "d%d%d" % (dim, a16))])
                anon.append(v[0] if v else 0)
        # default variants: non-NSA
        dd = [0, 0, 0, 0]
        ad = [0, 0, 0, 0]
        for vd in (252, 253, 254, 255):
            o = res[(op, "fbv%d" % vd)]
            v = vaddr_info(o)
            if o and v and dd[0] == 0:
                dd[0], ad[0] = vdata_w(o), v[0]
        nsa = []
        for dim in range(8):
            for a16 in range(2):
                row = []
                for k in range(1, 4):
                    o = res[(op, "n%d%d%d" % (dim, a16, k))]
                    v = vaddr_info(o)
                    if not (o and v and v[1]):
                        row.append(0)
                        continue
                    bail = vdata_w(o) != exd
                    row.append(v[0] | (0x80 if bail else 0))
                    for vd in (252, 253, 254, 255):
                        ob = res[(op, "nb%d%d%d_%d" % (dim, a16, k, vd))]
                        vb = vaddr_info(ob)
                        if ob and vb and vb[1] and dd[k] == 0 and vdata_w(ob) is not None:
                            dd[k], ad[k] = vdata_w(ob), vb[0]
                nsa.append(row)
        dset = 0
        sw_ok = 0
        for dm in range(16):
            for d16 in range(2):
                for tfe in range(2):
                    o = res[(op, "sw%d_%d_%d" % (dm, d16, tfe))]
                    if not o:
                        continue
                    sw_ok |= 1 << (dm | (d16 << 4) | (tfe << 5))
                    if vdata_w(o) == dexp(dm, d16, tfe):
                        dset |= 1 << dexp(dm, d16, tfe)
        rej = 0
        req = 0
        base_bits = mimg_word0(op, 0, 0, ex) | (w1_of(ss) << 32)
        for bit in (7, 12, 13, 15, 16, 17, 25, 62, 63):
            if not res[(op, "fl%d" % bit)]:
                if (base_bits >> bit) & 1:
                    req |= 1 << bit
                else:
                    rej |= 1 << bit
        if bvh:
            req |= 0xF00  # ray tracing takes dmask 0xf
        davail = []
        for dim in range(8):
            for a16 in range(2):
                m = 0
                for dm in (1, 3, 7, 0xF):
                    for d16 in range(2):
                        for tfe in range(2):
                            o = res[(op, "cv%d%d_%d_%d_%d" % (dim, a16, dm, d16, tfe))]
                            if o and vdata_w(o) == dexp(dm, d16, tfe):
                                m |= 1 << dexp(dm, d16, tfe)
                davail.append(m)
        dmask_printed = "dmask:" in base
        out[op] = (name, slots, anon, nsa, dmask_printed, "dim:" in base, dset, dd, ad, sw_ok, rej, bvh,
                   req, davail)
    return out


def emit_mimg(out):
    per = {cpu: mimg_entries(cpu) for cpu in CPUS}
    rows = {}
    for cpu in CPUS:
        for op, e in per[cpu].items():
            key = (op, repr(e))
            if key in rows:
                rows[key][1] |= CPU_BIT[cpu]
            else:
                rows[key] = [e, CPU_BIT[cpu]]
    out.append("/// MIMG opcode descriptors: (opcode, variants). Address and data-width facts in `MIMG_INFO`.")
    out.append("pub static MIMG: &[(u16, &[OpDesc])] = &[")
    byop = {}
    for (op, _), (e, cpus) in sorted(rows.items()):
        byop.setdefault(op, []).append((e, cpus))
    for op, lst in sorted(byop.items()):
        vs = []
        for e, cpus in lst:
            name, slots, dm, dim = e[0], e[1], e[4], e[5]
            sl = ", ".join("Slot { f: %s, w: %d }" % (fld_ident(f), w) for f, w in slots)
            vs.append('OpDesc { name: "%s", cpus: %d, slots: &[%s], cc: [CNone, CNone, CNone], flags: 0x%x, extra: "", zmask: 0, fixed: (0, 0), sdwa_fixed: (0, 0), dpp_fixed: (0, 0), fmask: 0x%x, regcheck: true }' % (
                name, cpus, sl, (1 if dm else 0) | (2 if dim else 0), fld_mask(slots)))
        out.append("    (%d, &[%s])," % (op, ", ".join(vs)))
    out.append("];")
    out.append("")
    out.append("/// MIMG decoding facts per opcode and targets (see `MimgInfo`).")
    out.append("pub static MIMG_INFO: &[MimgInfo] = &[")
    for (op, _), (e, cpus) in sorted(rows.items()):
        _, _, anon, nsa, _, _, dset, dd, ad, sw_ok, rej, bvh, req, davail = e
        out.append("    MimgInfo { op: %d, cpus: %d, addr: [%s], nsa: [%s], dset: 0x%x, davail: [%s], dflt_data: [%s], dflt_addr: [%s], sw_ok: 0x%x, reject: 0x%x, require: 0x%x, bvh: %s }," % (
            op, cpus, ", ".join(map(str, anon)),
            ", ".join("[%s]" % ", ".join(map(str, r)) for r in nsa),
            dset, ", ".join("0x%x" % x for x in davail), ", ".join(map(str, dd)), ", ".join(map(str, ad)),
            sw_ok, rej, req, "true" if bvh else "false"))
    out.append("];")
    out.append("")


def mtbuf_formats(cpu):
    cases = []
    for f in range(128):
        w0 = 0xE8000000 | (f << 19)
        cases.append(W([w0, 0x80000000]))
    names = []
    for o in oracle.run(cases, cpu):
        t = o[0] if o else ""
        m = re.search(r"format:(\[[A-Z0-9_]+\])", t)
        names.append(m.group(1) if m else ("" if "format:" in t or not t else "default"))
    return names


MEM_FIELDS = {
    "DS": {"VADDR": ("v", 2), "VDATA0": ("v", 3), "VDATA1": ("v", 4), "VDST": ("v", 1)},
    "MUBUF": {"VDATA": ("v", 5), "VADDR": ("v", 2), "SRSRC": ("s", 8), "SOFF": ("s", 3)},
    "MTBUF": {"VDATA": ("v", 5), "VADDR": ("v", 2), "SRSRC": ("s", 8), "SOFF": ("s", 3)},
    "FLAT": {"VADDR": ("v", 2), "VDATA": ("v", 3), "VDST": ("v", 1)},
}


VOP_FIELDS = {
    "VOP1": {"VDST": ("v", 1), "SRC0": ("v", 2)},
    "VOP2": {"VDST": ("v", 1), "SRC0": ("v", 2), "VSRC1": ("v", 3), "_lit": ("0x11223344",)},
    "VOPC": {"SRC0": ("v", 2), "VSRC1": ("v", 3)},
    "VOP3": {"VDST": ("v", 1), "SRC0": ("v", 2), "SRC1": ("v", 3), "SRC2": ("v", 4)},
    "VOP3P": {"VDST": ("v", 1), "SRC0": ("v", 2), "SRC1": ("v", 3), "SRC2": ("v", 4)},
    "VOP3P9": {"VDST": ("v", 1), "SRC0": ("v", 2), "SRC1": ("v", 3), "SRC2": ("v", 4)},
}


def fields_for(fam):
    if fam == "SMEM":
        return dict(SMEM_FIELDS)
    if fam.startswith("FLAT"):
        return dict(MEM_FIELDS["FLAT"])
    if fam in MEM_FIELDS:
        return dict(MEM_FIELDS[fam])
    return dict(SCALAR_FIELDS.get(fam) or VOP_FIELDS.get(fam) or {})


def sdst_alias(fam, f):
    # the VDST field also prints as an SGPR (v_readlane, VOPC e64 sdst)
    if "VDST" in f:
        f = dict(f)
        f["VDST_S"] = ("s", f["VDST"][1])
    return f


def analyse(fam, op, outs, outs64):
    """Builds an Entry from probe outputs, or None when llvm-mc rejects every probe."""
    base = None
    basekey = None
    for k in ["a", "v0", "v1", "v2", "v3", "b", "c", "z", "l"] + ["m%02d" % i for i in range(16)] + ["g%02d" % i for i in range(16)] + ["zz"]:
        if k in outs and outs[k]:
            base = outs[k][0]
            basekey = k
            break
    if base is None:
        return None
    name, ops, mods = split_ops(base)
    fv = sdst_alias(fam, fields_for(fam))
    if fam == "SMEM":
        fv = {"SDATA": ("s", 4), "SBASE": ("s", 8)}
    slots = map_tokens(ops, fv, fam)
    # widths that change with wave size mark lane masks
    flags = set()
    if outs64 is not None and basekey in outs64 and outs64[basekey]:
        _, ops64, _ = split_ops(outs64[basekey][0])
        s64 = map_tokens(ops64, fv, fam)
        if len(s64) == len(slots):
            for i, (a, b) in enumerate(zip(slots, s64)):
                if a[1] == 1 and b[1] == 2:
                    slots[i] = (a[0], 0xFF)  # lane mask: 1 in wave32, 2 in wave64
    flags.add("base_" + basekey)
    zmask = 0
    if fam == "DS" and basekey[0] in "mg" and basekey[1:].isdigit():
        zmask = int(basekey[1:])
        if basekey[0] == "g":
            zmask |= 0x10  # needs gds
    elif fam == "VOP1" and basekey == "v1":
        zmask = 1
    elif fam == "VOP1" and basekey == "v2":
        zmask = 3
    if fam in ("MUBUF",) and basekey == "m03" or fam.startswith("FLAT") and basekey == "m04":
        zmask |= 0x20  # glc required
    if fam == "VOP3" and basekey == "zz":
        zmask = 0x40  # every field zero
    flags.add("zmask:%d" % zmask)
    if mods:
        flags.add("mods:" + mods)
    if fam == "SOPP":
        z = first_text(outs.get("z"))
        a = first_text(outs.get("a"))
        kind = "none"
        if a is not None and " " in a.strip():
            arg = a.split(" ", 1)[1]
            zarg = z.split(" ", 1)[1] if z and " " in z else ""
            if arg.startswith("0x"):
                kind = "hex0" if zarg == "0x0" else "hex"
            elif arg.isdigit():
                kind = "opt" if z is not None and " " not in z else "dec"
            else:
                kind = "special"
        elif (a or z or "").endswith(" "):
            kind = "trail"
        flags.add("mods:" + kind)
    if fam == "SMEM":
        for k, f in (("b", "smem_glc:yes"), ("dl", "smem_dlc:yes")):
            o = first_text(outs.get(k))
            if o is not None and o != base:
                flags.add(f)

    # constant classes for each source
    classes = []
    for pos, fld in enumerate(["SRC0", "SRC1", "SRC2"] if fam in ("VOP3", "VOP3P", "VOP3P9") else
                              ["SSRC0", "SSRC1"] if fam in ("SOP2", "SOPC") else
                              ["SSRC0"] if fam == "SOP1" else ["SRC0"]):
        idx = next((i for i, s in enumerate(slots) if s[0] == fld), None)
        if idx is None:
            classes.append("NONE")
            continue
        sfx = "_" + basekey[1:] if fam in ("VOP3", "VOP3P", "VOP3P9") else ""
        inl = first_text(outs.get("inl%d%s" % (pos, sfx)))
        lit = first_text(outs.get("lit%d%s" % (pos, sfx)))
        classes.append(const_class(inl, lit, idx))
    # modifier support (VOP3): printed, ignored or rejected
    if fam == "VOP3" and basekey != "zz":
        vk = basekey[1:]
        for p in range(3 - int(vk)):
            for m in ["abs", "neg"]:
                o = outs.get("%s%d_%s" % (m, p, vk))
                if not o:
                    flags.add("%s%d:reject" % (m, p))
                elif o[0] != base:
                    flags.add("%s%d:yes" % (m, p))
                    if m == "neg" and "sext(" in o[0]:
                        flags.add("sext%d:yes" % p)
        for m in ["clamp", "omod", "opsel"]:
            o = outs.get(m + vk)
            if not o:
                flags.add(m + ":reject")
            elif o[0] == base:
                flags.add(m + ":ignore")
            else:
                flags.add(m + ":yes")
    if fam in ("VOP1", "VOP2", "VOPC"):
        for m in ["sdwa", "dpp", "dpp8"]:
            if outs.get(m):
                flags.add(m + ":yes")
        for k in list(DPP_MODS) + list(SDWA_MODS):
            base_k = "dpp" if k.startswith("dpp") else "sdwa"
            o = first_text(outs.get(k))
            if o is not None and o != first_text(outs.get(base_k)):
                flags.add(k + ":yes")
                if k.startswith("dppneg") and "sext(" in o:
                    flags.add("dppsext%s:yes" % k[-1])
    return Entry(fam, op, name, slots, flags, classes)


def main():
    families = {}
    families.update(fam_scalar())
    families.update(fam_smem())
    families.update(fam_vop())
    families.update(fam_mem())
    entries = {}  # (fam, op) -> list of Entry (per distinct key)
    for cpu in CPUS:
        cases = {}
        for fam, ops in families.items():
            for op, vs in ops.items():
                for v, b in vs.items():
                    cases[(fam, op, v)] = b
        print("probing", cpu, len(cases), file=sys.stderr)
        res = probe(cases, cpu)
        res64 = probe(cases, cpu, True)
        found = []
        for fam, ops in families.items():
            for op in ops:
                outs = {v: res[(fam, op, v)] for v in ops[op]}
                outs64 = {v: res64[(fam, op, v)] for v in ops[op]} if res64 else None
                e = analyse(fam, op, outs, outs64)
                if e is None:
                    continue
                found.append((fam, op, e, outs))
        # Bits whose single flip makes llvm-mc reject the base encoding are fixed for that opcode.
        flips = {}
        for fam, op, e, outs in found:
            basekey = next(f[5:] for f in e.flags if f.startswith("base_"))
            b = families[fam][op][basekey]
            wide = fam in ("SMEM", "VOP3", "VOP3P", "VOP3P9", "DS", "MUBUF", "MTBUF") or fam.startswith("FLAT")
            for bit in range(64 if wide else 32):
                c = list(b)
                c[bit // 8] ^= 1 << (bit % 8)
                flips[(fam, op, "f", bit)] = c
            for kind in ("sdwa", "dpp"):
                if outs.get(kind):
                    b2 = families[fam][op][kind]
                    for bit in range(32, 64):
                        c = list(b2)
                        c[bit // 8] ^= 1 << (bit % 8)
                        flips[(fam, op, kind, bit)] = c
        fres = probe(flips, cpu)
        for fam, op, e, outs in found:
            basekey = next(f[5:] for f in e.flags if f.startswith("base_"))
            b = families[fam][op][basekey]
            bits = int.from_bytes(bytes(b[:8]).ljust(8, b"\0"), "little")
            mask = 0
            for bit in range(64):
                k = (fam, op, "f", bit)
                if k in fres and (not fres[k] or fres[k] == oracle.CRASHED):
                    mask |= 1 << bit
            # Fields whose valid values are not closed under single-bit flips of the probe value
            # (FLAT saddr, SMEM soffset) are checked by value in the decoder instead.
            if fam.startswith("FLAT"):
                mask &= ~(0x7F << 48)
            if fam == "SMEM":
                mask &= ~(0x7F << 57)
            e.fixed = (mask, bits & mask)
            for kind in ("sdwa", "dpp"):
                if outs.get(kind):
                    b2 = families[fam][op][kind]
                    w1 = int.from_bytes(bytes(b2[4:8]), "little")
                    m = 0
                    for bit in range(32, 64):
                        if not fres[(fam, op, kind, bit)] or fres[(fam, op, kind, bit)] == oracle.CRASHED:
                            m |= 1 << (bit - 32)
                    if kind == "sdwa":
                        # sel / dst_unused fields are range-checked by the decoder.
                        m &= ~((0x7 << 8) | (0x3 << 11) | (0x7 << 16))
                        if fam != "VOP1":
                            m &= ~(0x7 << 24)  # VOP1 has no src1: its src1_sel must stay 0
                        if fam == "VOPC":
                            m &= ~(0xFF << 8)  # sdst + sd: any scalar destination
                        e.sdwa_fixed = (m, w1 & m)
                    else:
                        e.dpp_fixed = (m, w1 & m)
            lst = entries.setdefault((fam, op), [])
            for x in lst:
                if x.key() == e.key():
                    x.cpus |= CPU_BIT[cpu]
                    break
            else:
                e.cpus = CPU_BIT[cpu]
                lst.append(e)
    emit(entries)
    with open("/tmp/gen_debug.txt", "w") as f:
        for (fam, op), lst in sorted(entries.items()):
            for e in lst:
                f.write("%s %d cpus=%d %s %s %s %s\n" % (fam, op, e.cpus, e.name, e.slots, e.classes, sorted(e.flags)))


def emit(entries):
    out = []
    out.append("// @generated by compiler/shader/tools/gen_tables.py from LLVM 14 llvm-mc probes.")
    out.append("// Do not edit by hand; re-run the generator instead.")
    out.append("use crate::table::{Cc::*, Fld::*, MimgInfo, OpDesc, Slot};")
    out.append("")
    fams = sorted({f for f, _ in entries})
    for fam in fams:
        rows = sorted((op, lst) for (f, op), lst in entries.items() if f == fam)
        out.append("/// %s opcode descriptors: (opcode, variants)." % fam)
        out.append("pub static %s: &[(u16, &[OpDesc])] = &[" % fam)
        for op, lst in rows:
            vs = []
            for e in lst:
                slots = ", ".join("Slot { f: %s, w: %d }" % (fld_ident(f), w) for f, w in e.slots)
                bits = 0
                extra = ""
                zmask = 0
                for x in e.flags:
                    if x.startswith("zmask:"):
                        zmask = int(x[6:])
                    elif x in FLAG_BITS:
                        bits |= FLAG_BITS[x]
                    elif x.startswith("mods:"):
                        extra = x[5:]
                vs.append('OpDesc { name: "%s", cpus: %d, slots: &[%s], cc: [%s], flags: 0x%x, extra: "%s", zmask: %d, fixed: (0x%x, 0x%x), sdwa_fixed: (0x%x, 0x%x), dpp_fixed: (0x%x, 0x%x), fmask: 0x%x, regcheck: %s }' % ((
                    e.name, e.cpus, slots,
                    ", ".join((e.classes + ["NONE"] * 3)[:3]).replace("NONE", "CNone"),
                    bits, extra, zmask) + e.fixed + e.sdwa_fixed + e.dpp_fixed
                    + (fld_mask(e.slots), "true" if needs_regcheck(e.slots) else "false")))
            out.append("    (%d, &[%s])," % (op, ", ".join(vs)))
        out.append("];")
        out.append("")
    emit_mimg(out)
    for cpu in ["gfx1010", "gfx1030"]:
        names = mtbuf_formats(cpu)
        out.append("/// MTBUF `format:` names on %s (\"\" = printed as a number, \"default\" = omitted)." % cpu)
        out.append("pub static MTBUF_FORMATS_%s: [&str; 128] = [%s];" % (
            cpu.upper(), ", ".join('"%s"' % n for n in names)))
        out.append("")
    path = os.path.join(os.path.dirname(__file__), "..", "src", "tables.rs")
    with open(path, "w") as f:
        f.write("\n".join(out))
    print("wrote", path, file=sys.stderr)


FLAG_BITS = {
    "abs0:yes": 1 << 0, "abs1:yes": 1 << 1, "abs2:yes": 1 << 2,
    "abs0:reject": 1 << 3, "abs1:reject": 1 << 4, "abs2:reject": 1 << 5,
    "neg0:yes": 1 << 6, "neg1:yes": 1 << 7, "neg2:yes": 1 << 8,
    "neg0:reject": 1 << 9, "neg1:reject": 1 << 10, "neg2:reject": 1 << 11,
    "clamp:yes": 1 << 12, "clamp:reject": 1 << 13, "omod:yes": 1 << 14, "omod:reject": 1 << 15,
    "opsel:yes": 1 << 16, "opsel:reject": 1 << 17, "sdwa:yes": 1 << 18, "dpp:yes": 1 << 19,
    "dpp8:yes": 1 << 20,
    "sext0:yes": 1 << 21, "sext1:yes": 1 << 22, "sext2:yes": 1 << 23,
    "smem_glc:yes": 1 << 24, "smem_dlc:yes": 1 << 25,
    "dppneg0:yes": 1 << 26, "dppabs0:yes": 1 << 27, "dppneg1:yes": 1 << 28, "dppabs1:yes": 1 << 29,
    "dppsext0:yes": 1 << 30, "dppsext1:yes": 1 << 31,
    "sdwasext0:yes": 1 << 32, "sdwaneg0:yes": 1 << 33, "sdwaabs0:yes": 1 << 34,
    "sdwasext1:yes": 1 << 35, "sdwaneg1:yes": 1 << 36, "sdwaabs1:yes": 1 << 37,
}


FLD_ORDER = "Sdst Ssrc0 Ssrc1 Vdst VdstS Src0 Src1 Src2 Vsrc1 Sdst3b Vcc Exec Lit Imm Hwreg Attr M0 Off Sdata Sbase Vaddr Vdata0 Vdata1 Vdata Srsrc Soff Ssamp Unknown".split()


def fld_mask(slots):
    """Bit per operand field present (Rust `Fld` discriminant order)."""
    m = 0
    for f, _ in slots:
        m |= 1 << FLD_ORDER.index(fld_ident(f))
    return m


def needs_regcheck(slots):
    """Operands whose encodings can fall outside their register file."""
    risky = {"VdstS", "Sdst3b", "Soff", "Srsrc", "Ssamp", "Sbase", "Sdata", "Vdata", "Vaddr"}
    return any(w != 1 or fld_ident(f) in risky for f, w in slots)


def fld_ident(f):
    if f.startswith("TOK:") or f.startswith("UNK:"):
        return "Unknown"
    return {
        "SDST": "Sdst", "SSRC0": "Ssrc0", "SSRC1": "Ssrc1", "VDST": "Vdst", "VDST_S": "VdstS",
        "SRC0": "Src0", "SRC1": "Src1", "SRC2": "Src2", "VSRC1": "Vsrc1", "SDST3B": "Sdst3b",
        "VCC": "Vcc", "EXEC": "Exec", "LIT": "Lit", "IMM": "Imm", "HWREG": "Hwreg", "ATTR": "Attr",
        "M0": "M0", "OFF": "Off", "SDATA": "Sdata", "SBASE": "Sbase",
        "VADDR": "Vaddr", "VDATA0": "Vdata0", "VDATA1": "Vdata1", "VDATA": "Vdata",
        "SRSRC": "Srsrc", "SOFF": "Soff", "SSAMP": "Ssamp",
    }[f]


if __name__ == "__main__":
    main()
