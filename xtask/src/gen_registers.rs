//! `cargo xtask gen-registers`: writes `drivers/agc/src/generated.rs` from Mesa's register
//! database (`../shared/corpus/amd-registers/`: gfx103.json, pkt3.json, and the PKT3 opcode
//! table and register-space bases SOURCE.md restates from sid.h).
//!
//! This file depends only on `std` and `serde_json`: the freshness test of `aps5-agc`
//! includes it with `#[path]` and compares its output with the committed file.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

/// Where the generated file lives, relative to the repository root.
pub const OUTPUT: &str = "drivers/agc/src/generated.rs";

/// The chip whose registers the PS5 GPU has (RDNA2 = GFX10.3).
const CHIP: &str = "gfx103";

/// PKT3 opcodes GPU.md names that sid.h does not define (so the database cannot name them):
/// the PS5 anchors handle them. Kept to this short, marked list.
const EXTRA_OPCODES: &[(&str, u32, &str)] = &[
    (
        "LOAD_UCONFIG_REG_INDEX",
        0x64,
        "not in sid.h; GPU.md: register list from memory (UCONFIG)",
    ),
    (
        "WAIT_REG_MEM64",
        0x93,
        "not in sid.h; GPU.md: the 64-bit form of WAIT_REG_MEM",
    ),
];

struct Field {
    name: String,
    lo: u32,
    hi: u32,
    enum_ref: Option<String>,
}

fn load(path: &Path) -> Result<Value, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("parsing {}: {e}", path.display()))
}

fn str_of<'a>(v: &'a Value, key: &str, ctx: &str) -> Result<&'a str, String> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{ctx}: `{key}` is missing or not a string"))
}

fn int_of(v: &Value, ctx: &str) -> Result<u32, String> {
    v.as_u64()
        .and_then(|x| u32::try_from(x).ok())
        .ok_or_else(|| format!("{ctx}: not a 32-bit integer: {v}"))
}

fn fields_of(types: &Value, ty: &str, file: &str) -> Result<Vec<Field>, String> {
    let t = types
        .get(ty)
        .ok_or_else(|| format!("{file}: register type {ty} is referenced but not defined"))?;
    let list = t
        .get("fields")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{file}: type {ty} has no `fields` list"))?;
    let mut out = Vec::new();
    for f in list {
        let ctx = format!("{file}: type {ty}");
        let name = str_of(f, "name", &ctx)?.to_string();
        let bits = f
            .get("bits")
            .and_then(Value::as_array)
            .filter(|b| b.len() == 2)
            .ok_or_else(|| format!("{ctx} field {name}: `bits` is not [lo, hi]"))?;
        let (lo, hi) = (int_of(&bits[0], &ctx)?, int_of(&bits[1], &ctx)?);
        if lo > hi || hi > 31 {
            return Err(format!("{ctx} field {name}: bad bit range [{lo}, {hi}]"));
        }
        let enum_ref = f.get("enum_ref").and_then(Value::as_str).map(String::from);
        out.push(Field {
            name,
            lo,
            hi,
            enum_ref,
        });
    }
    Ok(out)
}

fn camel(name: &str) -> String {
    let mut out = String::new();
    for part in name.split('_').filter(|p| !p.is_empty()) {
        let mut c = part.chars();
        if let Some(first) = c.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(c.map(|x| x.to_ascii_lowercase()));
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'R');
    }
    out
}

const RESERVED: &[&str] = &[
    "as", "async", "await", "box", "break", "const", "continue", "crate", "do", "dyn", "else",
    "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let", "loop",
    "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref", "return", "self",
    "static", "struct", "super", "trait", "true", "try", "type", "typeof", "union", "unsafe",
    "unsized", "use", "virtual", "where", "while", "yield", "abstract", "become",
];

/// A field name as a snake-case Rust identifier (`TYPE` -> `type_`).
fn snake(name: &str) -> String {
    let mut s = name.to_ascii_lowercase();
    if RESERVED.contains(&s.as_str()) {
        s.push('_');
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s
}

/// An enum entry or register name as a constant identifier.
fn constant(name: &str) -> String {
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("_{name}")
    } else {
        name.to_string()
    }
}

/// The register-space bases from SOURCE.md's restatement of sid.h:
/// "`SI_SH_REG_OFFSET 0xB000` (`_END 0xC000`)". Byte addresses.
fn space_bases(source_md: &str) -> Result<BTreeMap<String, (u32, u32)>, String> {
    let mut out = BTreeMap::new();
    for line in source_md.lines() {
        let l = line.trim().trim_start_matches("- ");
        let Some(rest) = l.strip_prefix('`') else {
            continue;
        };
        let Some((def, tail)) = rest.split_once('`') else {
            continue;
        };
        let mut w = def.split_whitespace();
        let (Some(name), Some(val), None) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        if !name.ends_with("_REG_OFFSET") {
            continue;
        }
        let Some(end) = tail
            .split_once("`_END ")
            .and_then(|(_, e)| e.split_once('`'))
            .map(|(e, _)| e)
        else {
            continue;
        };
        let parse = |s: &str| u32::from_str_radix(s.trim_start_matches("0x"), 16);
        let (Ok(b), Ok(e)) = (parse(val), parse(end)) else {
            return Err(format!(
                "SOURCE.md: cannot read the register base line `{line}`"
            ));
        };
        out.insert(name.to_string(), (b, e));
    }
    for want in [
        "SI_CONFIG_REG_OFFSET",
        "SI_SH_REG_OFFSET",
        "SI_CONTEXT_REG_OFFSET",
        "CIK_UCONFIG_REG_OFFSET",
    ] {
        if !out.contains_key(want) {
            return Err(format!("SOURCE.md: register base {want} not found"));
        }
    }
    Ok(out)
}

/// The PKT3 opcode table of SOURCE.md ("| NAME | 0x.. | comment |"), sid.h's list.
fn opcodes(source_md: &str) -> Result<BTreeMap<u32, (String, String)>, String> {
    let mut out: BTreeMap<u32, (String, String)> = BTreeMap::new();
    let mut in_table = false;
    for line in source_md.lines() {
        if line.starts_with("| PKT3 opcode |") {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if !line.starts_with('|') {
            if !out.is_empty() {
                break;
            }
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() < 2 || cells[0].starts_with("---") {
            continue;
        }
        let v = u32::from_str_radix(cells[1].trim_start_matches("0x"), 16)
            .map_err(|_| format!("SOURCE.md: opcode row `{line}` has no hex value"))?;
        let comment = cells.get(2).copied().unwrap_or("").to_string();
        match out.get(&v) {
            // sid.h lists EVENT_WRITE_EOS twice with the same value.
            Some((n, _)) if n == cells[0] => {}
            Some((n, _)) => {
                return Err(format!(
                    "SOURCE.md: opcode {v:#x} is both {n} and {}",
                    cells[0]
                ));
            }
            None => {
                out.insert(v, (cells[0].to_string(), comment));
            }
        }
    }
    if out.len() < 50 {
        return Err(format!(
            "SOURCE.md: found only {} PKT3 opcodes; the table moved?",
            out.len()
        ));
    }
    Ok(out)
}

fn emit_struct(
    out: &mut String,
    rust: &str,
    db_name: &str,
    origin: &str,
    fields: &[Field],
) -> Result<(), String> {
    let _ = writeln!(out, "/// `{db_name}` ({origin}).");
    let _ = writeln!(out, "#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]");
    let _ = writeln!(out, "pub struct {rust} {{");
    let mut seen = BTreeSet::new();
    for f in fields {
        let id = snake(&f.name);
        if !seen.insert(id.clone()) {
            return Err(format!("{db_name}: two fields map to `{id}`"));
        }
        let e = f
            .enum_ref
            .as_ref()
            .map(|e| format!(", values in `enums::{e}`"))
            .unwrap_or_default();
        let _ = writeln!(out, "    /// `{}` bits [{}:{}]{e}.", f.name, f.hi, f.lo);
        let _ = writeln!(out, "    pub {id}: u32,");
    }
    let _ = writeln!(out, "}}");
    let _ = writeln!(out, "impl {rust} {{");
    let _ = writeln!(out, "    pub const FIELDS: &'static [FieldInfo] = &[");
    for f in fields {
        let e = match &f.enum_ref {
            Some(e) => format!("Some(\"{e}\")"),
            None => "None".into(),
        };
        let _ = writeln!(
            out,
            "        FieldInfo {{ name: \"{}\", shift: {}, width: {}, enum_name: {e} }},",
            f.name,
            f.lo,
            f.hi - f.lo + 1
        );
    }
    let _ = writeln!(out, "    ];");
    let _ = writeln!(out, "    #[inline]");
    let _ = writeln!(out, "    pub fn from_raw(raw: u32) -> Self {{");
    let _ = writeln!(out, "        Self {{");
    for f in fields {
        let mask = mask_of(f.hi - f.lo + 1);
        let _ = writeln!(
            out,
            "            {}: (raw >> {}) & {mask:#x},",
            snake(&f.name),
            f.lo
        );
    }
    let _ = writeln!(out, "        }}");
    let _ = writeln!(out, "    }}");
    let _ = writeln!(
        out,
        "    /// The register value; field values wider than their field are cut."
    );
    let _ = writeln!(out, "    #[inline]");
    let _ = writeln!(out, "    pub fn to_raw(&self) -> u32 {{");
    let _ = write!(out, "        0");
    for f in fields {
        let mask = mask_of(f.hi - f.lo + 1);
        let _ = write!(
            out,
            "\n            | ((self.{} & {mask:#x}) << {})",
            snake(&f.name),
            f.lo
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "    }}");
    let _ = writeln!(out, "}}");
    Ok(())
}

fn mask_of(width: u32) -> u32 {
    if width >= 32 {
        u32::MAX
    } else {
        (1u32 << width) - 1
    }
}

fn chips_has(m: &Value, chip: &str) -> bool {
    m.get("chips")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|x| x.as_str() == Some(chip)))
}

fn emit_enums(
    out: &mut String,
    enums: &Value,
    used: &BTreeSet<String>,
    file: &str,
    indent: &str,
) -> Result<(), String> {
    let _ = writeln!(out, "{indent}pub mod enums {{");
    let _ = writeln!(out, "{indent}    use crate::regdb::EnumEntry;");
    for e in used {
        let entries = enums
            .get(e)
            .and_then(|v| v.get("entries"))
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{file}: enum {e} is referenced but not defined"))?;
        let _ = writeln!(out, "{indent}    pub mod {e} {{");
        let _ = writeln!(out, "{indent}        use super::EnumEntry;");
        let mut pairs = Vec::new();
        for x in entries {
            let n = str_of(x, "name", &format!("{file} enum {e}"))?;
            let v = int_of(
                x.get("value").unwrap_or(&Value::Null),
                &format!("{file} enum {e}"),
            )?;
            let _ = writeln!(out, "{indent}        pub const {}: u32 = {v};", constant(n));
            pairs.push((n.to_string(), v));
        }
        let _ = writeln!(out, "{indent}        pub static ENTRIES: &[EnumEntry] = &[");
        for (n, v) in pairs {
            let _ = writeln!(
                out,
                "{indent}            EnumEntry {{ name: \"{n}\", value: {v} }},"
            );
        }
        let _ = writeln!(out, "{indent}        ];");
        let _ = writeln!(out, "{indent}    }}");
    }
    let _ = writeln!(out, "{indent}}}");
    Ok(())
}

/// Generates the whole file from the database folder.
pub fn generate(db: &Path) -> Result<String, String> {
    let regs = load(&db.join("gfx103.json"))?;
    let pkt3 = load(&db.join("pkt3.json"))?;
    let source_md = std::fs::read_to_string(db.join("SOURCE.md"))
        .map_err(|e| format!("reading {}: {e}", db.join("SOURCE.md").display()))?;
    let bases = space_bases(&source_md)?;
    let ops = opcodes(&source_md)?;

    let mut out = String::new();
    out.push_str(
        "//! Generated by `cargo xtask gen-registers` from Mesa's register database\n\
         //! (`../shared/corpus/amd-registers/`: gfx103.json for the GFX10.3 registers, pkt3.json\n\
         //! for packet dword layouts, SOURCE.md's restatement of sid.h for PKT3 opcodes and the\n\
         //! register-space bases). Do not edit: regenerate.\n\
         //!\n\
         //! Register offsets are absolute **dword** indices (the database's byte address / 4).\n\n\
         #![allow(clippy::all, clippy::pedantic, non_snake_case, non_upper_case_globals, dead_code)]\n\n\
         use crate::regdb::{OpcodeInfo, RegisterInfo, Space};\n\n",
    );

    // Register spaces.
    let _ = writeln!(
        out,
        "/// Register spaces as dword ranges [base, end), from sid.h's `*_REG_OFFSET`/`_END`."
    );
    for (name, key) in [
        ("CONFIG", "SI_CONFIG_REG_OFFSET"),
        ("SH", "SI_SH_REG_OFFSET"),
        ("CONTEXT", "SI_CONTEXT_REG_OFFSET"),
        ("UCONFIG", "CIK_UCONFIG_REG_OFFSET"),
    ] {
        let (b, e) = bases[key];
        let _ = writeln!(out, "pub const {name}_BASE: u32 = {:#x};", b / 4);
        let _ = writeln!(out, "pub const {name}_END: u32 = {:#x};", e / 4);
    }
    out.push('\n');

    // Opcodes.
    let mut all_ops: BTreeMap<u32, (String, String)> = ops.clone();
    for (n, v, c) in EXTRA_OPCODES {
        if let Some((have, _)) = all_ops.get(v) {
            return Err(format!(
                "opcode {v:#x} ({n}) is now in sid.h as {have}: drop it from EXTRA_OPCODES"
            ));
        }
        all_ops.insert(*v, (n.to_string(), c.to_string()));
    }
    let _ = writeln!(
        out,
        "/// PKT3 opcodes (sid.h, plus the marked GPU.md extras)."
    );
    let _ = writeln!(out, "pub mod op {{");
    for (v, (n, c)) in &all_ops {
        if v > &0xff {
            return Err(format!("opcode {n} = {v:#x} does not fit 8 bits"));
        }
        if !c.is_empty() {
            let _ = writeln!(out, "    /// {c}");
        }
        let _ = writeln!(out, "    pub const {n}: u8 = {v:#04x};");
    }
    let _ = writeln!(out, "}}\n");
    let _ = writeln!(out, "/// Every known opcode, by value.");
    let _ = writeln!(out, "pub static OPCODES: &[OpcodeInfo] = &[");
    for (v, (n, c)) in &all_ops {
        let from_db = ops.contains_key(v);
        let _ = writeln!(
            out,
            "    OpcodeInfo {{ name: \"{n}\", opcode: {v:#04x}, in_sid_h: {from_db}, note: {c:?} }},"
        );
    }
    let _ = writeln!(out, "];\n");

    // Registers.
    let mappings = regs
        .get("register_mappings")
        .and_then(Value::as_array)
        .ok_or("gfx103.json: no register_mappings")?;
    let types = regs
        .get("register_types")
        .ok_or("gfx103.json: no register_types")?;
    let mut list: Vec<(u32, String, Option<String>)> = Vec::new();
    for m in mappings {
        let name = str_of(m, "name", "gfx103.json mapping")?.to_string();
        if !chips_has(m, CHIP) {
            continue;
        }
        let map = m
            .get("map")
            .ok_or_else(|| format!("gfx103.json: {name} has no map"))?;
        if map.get("to").and_then(Value::as_str) != Some("mm") {
            continue;
        }
        let at = int_of(
            map.get("at").unwrap_or(&Value::Null),
            &format!("gfx103.json {name}"),
        )?;
        if at % 4 != 0 {
            return Err(format!(
                "gfx103.json: {name} at {at:#x} is not dword aligned"
            ));
        }
        let ty = m.get("type_ref").and_then(Value::as_str).map(String::from);
        list.push((at / 4, name, ty));
    }
    list.sort();
    let space_of = |dw: u32| -> &'static str {
        let r = |k: &str| (bases[k].0 / 4, bases[k].1 / 4);
        let within = |(b, e): (u32, u32)| dw >= b && dw < e;
        if within(r("SI_CONTEXT_REG_OFFSET")) {
            "Space::Context"
        } else if within(r("SI_SH_REG_OFFSET")) {
            "Space::Sh"
        } else if within(r("CIK_UCONFIG_REG_OFFSET")) {
            "Space::Uconfig"
        } else if within(r("SI_CONFIG_REG_OFFSET")) {
            "Space::Config"
        } else {
            "Space::Other"
        }
    };
    let _ = writeln!(out, "/// Register dword offsets (absolute).");
    let _ = writeln!(out, "pub mod reg {{");
    for (dw, name, _) in &list {
        let _ = writeln!(out, "    pub const {}: u32 = {dw:#x};", constant(name));
    }
    let _ = writeln!(out, "}}\n");
    let _ = writeln!(out, "/// Every GFX10.3 register, sorted by offset.");
    let _ = writeln!(out, "pub static REGISTERS: &[RegisterInfo] = &[");
    let used: BTreeSet<&str> = list.iter().filter_map(|(_, _, t)| t.as_deref()).collect();
    for (dw, name, ty) in &list {
        let f = match ty {
            Some(t) => format!("ty::{}::FIELDS", camel(t)),
            None => "&[]".into(),
        };
        let t = match ty {
            Some(t) => format!("Some(\"{t}\")"),
            None => "None".into(),
        };
        let _ = writeln!(
            out,
            "    RegisterInfo {{ name: \"{name}\", offset: {dw:#x}, space: {}, type_name: {t}, fields: {f} }},",
            space_of(*dw)
        );
    }
    let _ = writeln!(out, "];\n");

    // Register types (only those some GFX10.3 register uses).
    let _ = writeln!(
        out,
        "/// Register layouts as structs (one per database register type), decoded with the\n\
         /// database's bit ranges."
    );
    let _ = writeln!(out, "pub mod ty {{");
    let _ = writeln!(out, "    use crate::regdb::FieldInfo;");
    let mut body = String::new();
    let mut rust_names = BTreeMap::new();
    let mut enums_used = BTreeSet::new();
    for t in &used {
        let rn = camel(t);
        if let Some(prev) = rust_names.insert(rn.clone(), *t) {
            return Err(format!("types {prev} and {t} both map to {rn}"));
        }
        let fields = fields_of(types, t, "gfx103.json")?;
        enums_used.extend(fields.iter().filter_map(|f| f.enum_ref.clone()));
        emit_struct(&mut body, &rn, t, "gfx103.json", &fields)?;
    }
    for line in body.lines() {
        if line.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "    {line}");
        }
    }
    let _ = writeln!(out, "}}\n");

    // Enums.
    let enums = regs.get("enums").ok_or("gfx103.json: no enums")?;
    let _ = writeln!(
        out,
        "/// Field value names (the database's enums that some field uses)."
    );
    emit_enums(&mut out, enums, &enums_used, "gfx103.json", "")?;
    out.push('\n');

    // Packet dword layouts (pkt3.json), the GFX10.3 entries.
    let pm = pkt3
        .get("register_mappings")
        .and_then(Value::as_array)
        .ok_or("pkt3.json: no register_mappings")?;
    let ptypes = pkt3
        .get("register_types")
        .ok_or("pkt3.json: no register_types")?;
    let _ = writeln!(
        out,
        "/// Packet dwords from pkt3.json (GFX10.3 entries): `at` = opcode << 4 | body dword\n\
         /// index (the database's convention, with its marked exceptions), and the layouts."
    );
    let _ = writeln!(out, "pub mod pkt {{");
    let _ = writeln!(out, "    use crate::regdb::FieldInfo;");
    let mut pk: Vec<(u32, String, Option<String>)> = Vec::new();
    for m in pm {
        if !chips_has(m, CHIP) {
            continue;
        }
        let name = str_of(m, "name", "pkt3.json mapping")?.to_string();
        let at = int_of(
            m.get("map")
                .and_then(|x| x.get("at"))
                .unwrap_or(&Value::Null),
            &format!("pkt3.json {name}"),
        )?;
        let ty = m.get("type_ref").and_then(Value::as_str).map(String::from);
        pk.push((at, name, ty));
    }
    pk.sort();
    for (at, name, _) in &pk {
        let op = at >> 4;
        let opn = all_ops
            .get(&op)
            .map(|(n, _)| n.as_str())
            .unwrap_or("an opcode sid.h does not name");
        let _ = writeln!(out, "    /// {opn} body dword {}.", at & 0xf);
        let _ = writeln!(
            out,
            "    pub const {}_{}: u32 = {at:#x};",
            opn.replace(' ', "_").to_ascii_uppercase(),
            name
        );
    }
    let mut body = String::new();
    let ptys: BTreeSet<&str> = pk.iter().filter_map(|(_, _, t)| t.as_deref()).collect();
    let mut penums = BTreeSet::new();
    for t in ptys {
        let fields = fields_of(ptypes, t, "pkt3.json")?;
        penums.extend(fields.iter().filter_map(|f| f.enum_ref.clone()));
        emit_struct(&mut body, &camel(t), t, "pkt3.json", &fields)?;
    }
    let pen = pkt3.get("enums").ok_or("pkt3.json: no enums")?;
    emit_enums(&mut body, pen, &penums, "pkt3.json", "")?;
    for line in body.lines() {
        if line.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "    {line}");
        }
    }
    let _ = writeln!(out, "}}");
    Ok(out)
}

/// `cargo xtask gen-registers [--check]`.
pub fn run(root: &Path, check: bool) -> Result<bool, String> {
    let db = root.join("../shared/corpus/amd-registers");
    let text = generate(&db)?;
    let path = root.join(OUTPUT);
    if check {
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        if have != text {
            println!("{OUTPUT} is stale: run `cargo xtask gen-registers`");
            return Ok(false);
        }
        println!("{OUTPUT} is up to date");
        return Ok(true);
    }
    std::fs::write(&path, &text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    println!("wrote {OUTPUT} ({} bytes)", text.len());
    Ok(true)
}
