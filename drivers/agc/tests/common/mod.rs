//! The outside database as the tests read it: opcodes from SOURCE.md's sid.h table,
//! registers and fields from gfx103.json. Nothing here comes from `aps5_agc::generated`.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;

use aps5_agc::{
    Backend, CopyData, Dispatch, DmaData, Draw, Flip, ReleaseMem, SonyCommand, WaitFlip,
    WaitRegMem, WaitResult, WriteData,
};

pub fn db_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/amd-registers")
}

/// Field name -> (lo, hi) bit range.
pub type Fields = HashMap<String, (u32, u32)>;

pub struct Db {
    pub ops: HashMap<String, u8>,
    /// name -> (absolute dword offset, fields name -> (lo, hi))
    pub regs: HashMap<String, (u32, Fields)>,
}

pub fn db() -> &'static Db {
    static DB: std::sync::OnceLock<Db> = std::sync::OnceLock::new();
    DB.get_or_init(|| {
        let md = std::fs::read_to_string(db_dir().join("SOURCE.md")).expect("SOURCE.md");
        let mut ops = HashMap::new();
        let mut on = false;
        for l in md.lines() {
            if l.starts_with("| PKT3 opcode |") {
                on = true;
                continue;
            }
            if on && l.starts_with('|') {
                let c: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
                if let Ok(v) = u8::from_str_radix(c[1].trim_start_matches("0x"), 16) {
                    ops.insert(c[0].to_string(), v);
                }
            } else if on && !ops.is_empty() {
                break;
            }
        }
        let j: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(db_dir().join("gfx103.json")).expect("gfx103.json"),
        )
        .unwrap();
        let types = &j["register_types"];
        let mut regs = HashMap::new();
        for m in j["register_mappings"].as_array().unwrap() {
            let name = m["name"].as_str().unwrap().to_string();
            let at = m["map"]["at"].as_u64().unwrap() as u32 / 4;
            let mut fields = HashMap::new();
            if let Some(t) = m["type_ref"].as_str() {
                for f in types[t]["fields"].as_array().unwrap() {
                    let b = f["bits"].as_array().unwrap();
                    fields.insert(
                        f["name"].as_str().unwrap().to_string(),
                        (b[0].as_u64().unwrap() as u32, b[1].as_u64().unwrap() as u32),
                    );
                }
            }
            regs.insert(name, (at, fields));
        }
        Db { ops, regs }
    })
}

pub fn op(name: &str) -> u8 {
    *db()
        .ops
        .get(name)
        .unwrap_or_else(|| panic!("{name} not in sid.h's table"))
}

pub fn reg(name: &str) -> u32 {
    db().regs
        .get(name)
        .unwrap_or_else(|| panic!("{name} not in gfx103.json"))
        .0
}

/// `value` placed in field `field` of register `name`, by the database's bit range.
pub fn field(name: &str, field: &str, value: u32) -> u32 {
    let (lo, hi) = db().regs[name].1[field];
    let mask = if hi - lo == 31 {
        u32::MAX
    } else {
        (1u32 << (hi - lo + 1)) - 1
    };
    assert!(value <= mask, "{value} does not fit {name}.{field}");
    value << lo
}

/// A type-3 header (sid.h's PKT3 macro: type 3, count = body dwords - 1, opcode, predicate).
pub fn pkt3(op: u8, body: usize, predicate: bool) -> u32 {
    (3 << 30) | (((body as u32 - 1) & 0x3fff) << 16) | ((op as u32) << 8) | predicate as u32
}

pub fn packet(name: &str, body: &[u32]) -> Vec<u32> {
    let mut v = vec![pkt3(op(name), body.len(), false)];
    v.extend_from_slice(body);
    v
}

/// A Sony driver command: a NOP whose header bits 7:2 carry the code.
pub fn sony(code: u32, body: &[u32]) -> Vec<u32> {
    let mut v = vec![pkt3(op("NOP"), body.len(), false) | (code << 2)];
    v.extend_from_slice(body);
    v
}

pub fn space_base(name: &str) -> u32 {
    match name {
        "SET_CONTEXT_REG" => 0x28000 / 4,
        "SET_SH_REG" => 0xB000 / 4,
        _ => 0x30000 / 4,
    }
}

/// SET_*_REG writing `values` from register `first` (offset relative to the space base,
/// sid.h's bases as SOURCE.md restates them).
pub fn set_reg(packet_name: &str, first: &str, values: &[u32]) -> Vec<u32> {
    let mut body = vec![reg(first) - space_base(packet_name)];
    body.extend_from_slice(values);
    packet(packet_name, &body)
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Dispatch(String),
    Draw(String),
    Release(ReleaseMem),
    WriteData(u64, Vec<u32>),
    Wait(u64),
    Flip(Flip),
    WaitFlip(WaitFlip),
    Dma(DmaData),
    Copy(CopyData),
    Sony(String),
    Pipeline(u32),
}

/// Records what the processor asks for.
#[derive(Default)]
pub struct Recorder {
    pub events: Vec<Event>,
    pub draws: Vec<(aps5_agc::DrawKind, aps5_agc::state::GraphicsState, u32)>,
    pub dispatches: Vec<(aps5_agc::DispatchKind, aps5_agc::state::ComputeState)>,
    pub wait_result: Option<WaitResult>,
}

impl Backend for Recorder {
    fn dispatch(&mut self, d: &Dispatch<'_>) -> Result<(), String> {
        self.events.push(Event::Dispatch(format!("{:?}", d.kind)));
        self.dispatches.push((d.kind, d.state));
        Ok(())
    }
    fn draw(&mut self, d: &Draw<'_>) -> Result<(), String> {
        self.events.push(Event::Draw(format!("{:?}", d.kind)));
        self.draws
            .push((d.kind, (*d.state).clone(), d.num_instances));
        Ok(())
    }
    fn release_mem(&mut self, r: &ReleaseMem) -> Result<(), String> {
        self.events.push(Event::Release(*r));
        Ok(())
    }
    fn write_data(&mut self, w: &WriteData<'_>) -> Result<(), String> {
        self.events
            .push(Event::WriteData(w.address, w.data.to_vec()));
        Ok(())
    }
    fn wait_reg_mem(&mut self, w: &WaitRegMem) -> Result<WaitResult, String> {
        self.events.push(Event::Wait(w.address));
        Ok(self.wait_result.unwrap_or(WaitResult::Satisfied))
    }
    fn flip(&mut self, f: &Flip) -> Result<(), String> {
        self.events.push(Event::Flip(*f));
        Ok(())
    }
    fn wait_flip(&mut self, f: &WaitFlip) -> Result<(), String> {
        self.events.push(Event::WaitFlip(*f));
        Ok(())
    }
    fn dma_data(&mut self, d: &DmaData) -> Result<(), String> {
        self.events.push(Event::Dma(*d));
        Ok(())
    }
    fn copy_data(&mut self, c: &CopyData) -> Result<(), String> {
        self.events.push(Event::Copy(*c));
        Ok(())
    }
    fn event_write(&mut self, e: &aps5_agc::EventWrite) -> Result<(), String> {
        self.events.push(Event::Pipeline(e.event_type));
        Ok(())
    }
    fn sony(&mut self, s: &SonyCommand<'_>) -> Result<(), String> {
        self.events.push(Event::Sony(format!("{s:?}")));
        Ok(())
    }
}
