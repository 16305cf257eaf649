//! PM4 packets: headers and the typed decode of one type-3 packet's body.
//!
//! [`decode`] is pure (no memory, no state): it checks the body length against what the
//! packet needs and splits the dwords into fields. Field layouts that the database has
//! (WRITE_DATA's CONTROL, INDIRECT_BUFFER's IB_CONTROL, RELEASE_MEM's first dword, DMA_DATA,
//! ACQUIRE_MEM's GCR_CNTL) are read through the generated `pkt` types; the others follow the
//! PM4 layouts docs/GPU_DRIVER.md lists.

use crate::generated::{op, pkt};
use crate::regdb::{Space, opcode_name};

/// A PM4 packet header dword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header(pub u32);

impl Header {
    /// Packet type, 0..3 (bits 31:30).
    pub fn kind(self) -> u32 {
        self.0 >> 30
    }
    /// The COUNT field (bits 29:16): body dwords minus one.
    pub fn count(self) -> u32 {
        (self.0 >> 16) & 0x3fff
    }
    /// Body dwords after the header. A NOP whose COUNT is 0x3fff is sid.h's one-dword
    /// `PKT3_NOP_PAD`: no body.
    pub fn body_len(self) -> usize {
        if self.opcode() == op::NOP && self.count() == 0x3fff {
            0
        } else {
            self.count() as usize + 1
        }
    }
    /// IT_OPCODE (bits 15:8).
    pub fn opcode(self) -> u8 {
        (self.0 >> 8) as u8
    }
    /// PREDICATE (bit 0).
    pub fn predicate(self) -> bool {
        self.0 & 1 != 0
    }
    /// SHADER_TYPE (bit 1): 1 = compute.
    pub fn compute(self) -> bool {
        self.0 & 2 != 0
    }
    /// Bits 7:2, where Sony's driver puts its command code in NOP packets.
    pub fn sony_code(self) -> u8 {
        ((self.0 >> 2) & 0x3f) as u8
    }
    /// A type-3 header for `body_len` body dwords. Panics unless `body_len` is 1..=0x4000
    /// (what COUNT can say).
    pub fn type3(opcode: u8, body_len: usize, predicate: bool) -> Header {
        assert!(
            (1..=0x4000).contains(&body_len),
            "a type-3 packet has 1..=0x4000 body dwords, not {body_len}"
        );
        Header(
            (3 << 30)
                | ((((body_len - 1) as u32) & 0x3fff) << 16)
                | ((opcode as u32) << 8)
                | predicate as u32,
        )
    }
    /// A NOP header carrying Sony driver command `code` with `body_len` body dwords.
    pub fn sony(code: u8, body_len: usize) -> Header {
        Header(Header::type3(op::NOP, body_len, false).0 | (((code & 0x3f) as u32) << 2))
    }
    /// The packet's name for messages: the database's opcode name, or a Sony command name.
    pub fn name(self) -> String {
        match self.kind() {
            0 => "type-0 packet".into(),
            1 => "type-1 packet".into(),
            2 => "type-2 filler".into(),
            _ => {
                let op = self.opcode();
                if op == op::NOP && self.sony_code() != 0 {
                    match SonyCode::from_code(self.sony_code()) {
                        Some(c) => format!("NOP/{}", c.name()),
                        None => format!("NOP/sony {:#04x}", self.sony_code()),
                    }
                } else {
                    match opcode_name(op) {
                        Some(n) => n.to_string(),
                        None => format!("unknown opcode {op:#04x}"),
                    }
                }
            }
        }
    }
}

fn addr64(lo: u32, hi: u32) -> u64 {
    (lo as u64) | ((hi as u64) << 32)
}

/// Sony's driver commands (NOP packets with header bits 7:2 non-zero), GPU.md's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SonyCode {
    DrawReset = 0x05,
    WaitFlipDone = 0x06,
    DispatchReset = 0x09,
    PushMarker = 0x0b,
    PopMarker = 0x0c,
    AcquireMem = 0x14,
    WriteData = 0x15,
    Flip = 0x17,
    ReleaseMem = 0x18,
    DmaData = 0x19,
    ContextState = 0x1a,
}

impl SonyCode {
    pub fn from_code(c: u8) -> Option<SonyCode> {
        use SonyCode::*;
        Some(match c {
            0x05 => DrawReset,
            0x06 => WaitFlipDone,
            0x09 => DispatchReset,
            0x0b => PushMarker,
            0x0c => PopMarker,
            0x14 => AcquireMem,
            0x15 => WriteData,
            0x17 => Flip,
            0x18 => ReleaseMem,
            0x19 => DmaData,
            0x1a => ContextState,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        use SonyCode::*;
        match self {
            DrawReset => "draw reset",
            WaitFlipDone => "wait flip done",
            DispatchReset => "dispatch reset",
            PushMarker => "push marker",
            PopMarker => "pop marker",
            AcquireMem => "acquire mem",
            WriteData => "write data",
            Flip => "flip",
            ReleaseMem => "release mem",
            DmaData => "dma data",
            ContextState => "context state",
        }
    }
    /// Packet lengths in dwords, header included, that the anchors use (GPU.md: where they
    /// disagree both are accepted); `None` = any length.
    pub fn lengths(self) -> Option<&'static [usize]> {
        use SonyCode::*;
        match self {
            WaitFlipDone => Some(&[4, 7]),
            Flip => Some(&[6]),
            ContextState => Some(&[3, 5]),
            _ => None,
        }
    }
}

/// A flip requested from the command stream (Sony NOP 0x17).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flip {
    pub video_out_handle: u32,
    pub buffer_index: i32,
    pub flip_mode: u32,
    pub flip_arg: u64,
}

/// Wait until a display buffer is no longer shown (Sony NOP 0x06).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitFlip {
    pub video_out_handle: u32,
    pub buffer_index: i32,
}

/// One of Sony's driver commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SonyCommand<'a> {
    DrawReset,
    DispatchReset,
    WaitFlipDone(WaitFlip),
    PushMarker(String),
    PopMarker,
    Flip(Flip),
    /// A release-mem with an interrupt select (body dword 1 bits 26:24); when the body has
    /// RELEASE_MEM's six dwords they are decoded the same way.
    ReleaseMem {
        interrupt_select: u32,
        release: Option<ReleaseMem>,
        body: &'a [u32],
    },
    /// Context-state operation 0..3.
    ContextState {
        op: u32,
        body: &'a [u32],
    },
    /// Commands whose payload layout no public source documents: passed on raw.
    AcquireMem(&'a [u32]),
    WriteData(&'a [u32]),
    DmaData(&'a [u32]),
}

/// Where an EOP/EOS event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseOrigin {
    ReleaseMem,
    EventWriteEop,
    SonyReleaseMem,
}

/// An end-of-pipe release: after prior work, optionally write data to memory and raise an
/// interrupt (RELEASE_MEM, EVENT_WRITE_EOP, Sony's release mem).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReleaseMem {
    pub origin: ReleaseOrigin,
    /// EVENT_TYPE / EVENT_INDEX and cache actions (RELEASE_MEM_OP, pkt3.json).
    pub op: pkt::ReleaseMemOp,
    /// DST_SEL (0 memory, 1 TC_L2).
    pub dst_sel: u32,
    /// INT_SEL: 0 none, 1 interrupt, 2 interrupt after write confirm, 3 send data after
    /// write confirm.
    pub int_sel: u32,
    /// DATA_SEL: 0 none, 1 32-bit data, 2 64-bit data, 3 64-bit GPU clock, 4 64-bit CP
    /// clock (system timestamp), 5 GDS.
    pub data_sel: u32,
    pub address: u64,
    pub data: u64,
    pub int_ctxid: u32,
}

impl ReleaseMem {
    /// Performs the data part with the given timestamp (for DATA_SEL 3/4).
    pub fn apply(&self, mem: &dyn crate::GuestMemory, timestamp: u64) -> Result<(), String> {
        let bytes: Vec<u8> = match self.data_sel {
            0 => return Ok(()),
            1 => (self.data as u32).to_le_bytes().to_vec(),
            2 => self.data.to_le_bytes().to_vec(),
            3 | 4 => timestamp.to_le_bytes().to_vec(),
            s => return Err(format!("release data select {s} is not supported")),
        };
        mem.write(self.address, &bytes).map_err(|e| e.to_string())
    }
}

/// EVENT_WRITE: a pipeline event (flushes, cache actions, queries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventWrite {
    pub event_type: u32,
    pub event_index: u32,
    /// Present in the 3-dword form (queries that write results).
    pub address: Option<u64>,
}

/// WRITE_DATA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteData<'a> {
    /// CONTROL (pkt3.json `CONTROL_cik`): DST_SEL, WR_ONE_ADDR, WR_CONFIRM, ENGINE_SEL.
    pub control: pkt::ControlCik,
    pub address: u64,
    pub data: &'a [u32],
}

impl WriteData<'_> {
    /// Performs the write (memory destinations; register destinations are refused).
    pub fn apply(&self, mem: &dyn crate::GuestMemory) -> Result<(), String> {
        use pkt::enums::CONTROL__DST_SEL_cik as d;
        match self.control.dst_sel {
            d::MEM | d::MEM_GRBM | d::TC_L2 => {}
            s => return Err(format!("WRITE_DATA destination {s} is not memory")),
        }
        if self.control.wr_one_addr != 0 {
            if let Some(last) = self.data.last() {
                return crate::memory::write_dwords(mem, self.address, &[*last])
                    .map_err(|e| e.to_string());
            }
            return Ok(());
        }
        crate::memory::write_dwords(mem, self.address, self.data).map_err(|e| e.to_string())
    }
}

/// WAIT_REG_MEM / WAIT_REG_MEM64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitRegMem {
    /// 0 always, 1 <, 2 <=, 3 ==, 4 !=, 5 >=, 6 >.
    pub function: u32,
    /// true: poll memory; false: poll a register (`address` = dword offset).
    pub memory: bool,
    /// 0 wait, 1 write-wait-write (not supported), 2 wait-write-wait.
    pub operation: u32,
    pub engine: u32,
    pub address: u64,
    pub reference: u64,
    pub mask: u64,
    pub poll_interval: u32,
    pub is_64: bool,
}

impl WaitRegMem {
    /// Whether `value` satisfies the wait.
    pub fn test(&self, value: u64) -> bool {
        let v = value & self.mask;
        let r = self.reference;
        match self.function {
            0 => true,
            1 => v < r,
            2 => v <= r,
            3 => v == r,
            4 => v != r,
            5 => v >= r,
            6 => v > r,
            _ => false,
        }
    }
    /// Reads the memory location once and tests it.
    pub fn poll(&self, mem: &dyn crate::GuestMemory) -> Result<bool, String> {
        if !self.memory {
            return Err("WAIT_REG_MEM on a register is not supported".into());
        }
        let v = if self.is_64 {
            crate::memory::read_u64(mem, self.address)
        } else {
            crate::memory::read_u32(mem, self.address).map(u64::from)
        }
        .map_err(|e| e.to_string())?;
        Ok(self.test(v))
    }
}

/// COPY_DATA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyData {
    /// SRC_SEL (bits 3:0): 0 register, 1 memory, 2 TC_L2, 5 immediate, 9 timestamp, ...
    pub src_sel: u32,
    /// DST_SEL (bits 11:8): 0 register, 1 memory (GRBM), 2 TC_L2, 5 memory, ...
    pub dst_sel: u32,
    /// COUNT_SEL (bit 16): 64-bit copy.
    pub count_64: bool,
    pub wr_confirm: bool,
    pub engine: u32,
    pub src: u64,
    pub dst: u64,
}

impl CopyData {
    /// Performs a copy into memory (sid.h's selects: source 1 or 2 memory, 5 the immediate
    /// in the source address dwords, 9 the GPU clock `timestamp`; destination 2 or 5 memory).
    /// Registers, GDS and performance counters as either end are refused.
    pub fn apply(&self, mem: &dyn crate::GuestMemory, timestamp: u64) -> Result<(), String> {
        let n = if self.count_64 { 8 } else { 4 };
        let value: u64 = match self.src_sel {
            1 | 2 => {
                let mut b = [0u8; 8];
                mem.read(self.src, &mut b[..n]).map_err(|e| e.to_string())?;
                u64::from_le_bytes(b)
            }
            5 => self.src,
            9 => timestamp,
            s => {
                return Err(format!(
                    "COPY_DATA source select {s} ({}) is not supported",
                    copy_select_name(s)
                ));
            }
        };
        match self.dst_sel {
            2 | 5 => {}
            s => {
                return Err(format!(
                    "COPY_DATA destination select {s} ({}) is not supported",
                    copy_select_name(s)
                ));
            }
        }
        mem.write(self.dst, &value.to_le_bytes()[..n])
            .map_err(|e| e.to_string())
    }
}

/// sid.h's names of the COPY_DATA selects.
fn copy_select_name(s: u32) -> &'static str {
    match s {
        0 => "register",
        1 => "memory",
        2 => "TC_L2",
        3 => "GDS",
        4 => "performance counter",
        5 => "immediate / memory",
        9 => "timestamp",
        _ => "reserved",
    }
}

/// DMA_DATA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaData {
    /// pkt3.json `DMA_DATA_WORD0_gfx9`.
    pub word0: pkt::DmaDataWord0Gfx9,
    pub src: u64,
    pub dst: u64,
    /// pkt3.json `COMMAND_gfx9` (BYTE_COUNT, SAS/DAS, SAIC/DAIC, RAW_WAIT, ...).
    pub command: pkt::CommandGfx9,
}

impl DmaData {
    /// Performs a memory-to-memory or data-fill copy (SRC_SEL 0 memory, 2 data; DST_SEL 0).
    pub fn apply(&self, mem: &dyn crate::GuestMemory) -> Result<(), String> {
        let n = self.command.byte_count as usize;
        if self.word0.dst_sel != 0 && self.word0.dst_sel != 3 {
            return Err(format!(
                "DMA_DATA destination select {} is not memory",
                self.word0.dst_sel
            ));
        }
        let bytes = match self.word0.src_sel {
            0 | 3 => {
                let mut b = vec![0u8; n];
                mem.read(self.src, &mut b).map_err(|e| e.to_string())?;
                b
            }
            2 => {
                let d = (self.src as u32).to_le_bytes();
                (0..n).map(|i| d[i % 4]).collect()
            }
            s => return Err(format!("DMA_DATA source select {s} is not supported")),
        };
        mem.write(self.dst, &bytes).map_err(|e| e.to_string())
    }
}

/// ACQUIRE_MEM (GFX10 form: cache invalidations over a range).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquireMem {
    pub coher_cntl: u32,
    pub size: u64,
    pub base: u64,
    pub poll_interval: u32,
    /// pkt3.json `GCR_CNTL`.
    pub gcr_cntl: pkt::GcrCntl,
}

/// Where an indirect draw/dispatch finds its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgAddress {
    /// An absolute address (compute-queue DISPATCH_INDIRECT).
    Absolute(u64),
    /// An offset from the SET_BASE base (graphics form).
    BaseOffset(u32),
}

/// A multi-draw's extra arguments (DRAW_(INDEX_)INDIRECT_MULTI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MultiDraw {
    pub draw_index_loc: u32,
    pub draw_index_enable: bool,
    pub count_indirect_enable: bool,
    pub count: u32,
    pub count_address: u64,
    pub stride: u32,
}

/// Register list from memory (LOAD_*_REG_INDEX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadRegs {
    pub space: Space,
    pub index: u32,
    pub address: u64,
    /// DATA_FORMAT (bit 31): false = `num_dwords` consecutive registers from `reg_offset`;
    /// true = `num_dwords` {offset, value} pairs.
    pub offset_and_data: bool,
    pub reg_offset: u32,
    pub num_dwords: u32,
}

/// SET_PREDICATION.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetPredication {
    /// PRED_OP: 0 clear, 1 ZPass, 2 PrimCount, 3 Bool64, 4 Bool32.
    pub op: u32,
    /// Draw when visible (bit 8) rather than when not.
    pub draw_visible: bool,
    pub hint_wait: bool,
    pub continue_: bool,
    pub address: u64,
}

/// One decoded type-3 packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet<'a> {
    Nop,
    Sony(SonyCommand<'a>),
    SetBase {
        index: u32,
        address: u64,
    },
    ClearState,
    IndexBufferSize(u32),
    DispatchDirect {
        x: u32,
        y: u32,
        z: u32,
        initiator: u32,
    },
    DispatchIndirect {
        args: ArgAddress,
        initiator: u32,
    },
    SetPredication(SetPredication),
    CondExec {
        address: u64,
        exec_count: u32,
    },
    /// DRAW_INDIRECT (indexed = false) / DRAW_INDEX_INDIRECT, and their _MULTI forms.
    DrawIndirect {
        indexed: bool,
        data_offset: u32,
        base_vtx_loc: u32,
        start_inst_loc: u32,
        multi: Option<MultiDraw>,
        initiator: u32,
    },
    IndexBase(u64),
    DrawIndex2 {
        max_size: u32,
        address: u64,
        count: u32,
        initiator: u32,
    },
    ContextControl {
        load: u32,
        shadow: u32,
    },
    IndexType(u32),
    DrawIndexAuto {
        count: u32,
        initiator: u32,
    },
    NumInstances(u32),
    DrawIndexOffset2 {
        max_size: u32,
        offset: u32,
        count: u32,
        initiator: u32,
    },
    WriteData(WriteData<'a>),
    WaitRegMem(WaitRegMem),
    IndirectBuffer {
        address: u64,
        /// pkt3.json `IB_CONTROL`: IB_SIZE (dwords), CHAIN, VALID, ...
        control: pkt::IbControl,
    },
    CopyData(CopyData),
    PfpSyncMe,
    CondWrite {
        function: u32,
        poll_memory: bool,
        write_memory: bool,
        poll_address: u64,
        reference: u32,
        mask: u32,
        write_address: u64,
        data: u32,
    },
    EventWrite(EventWrite),
    EventWriteEos {
        event: EventWrite,
        command: u32,
        data: u32,
    },
    ReleaseMem(ReleaseMem),
    DmaData(DmaData),
    AcquireMem(AcquireMem),
    Rewind,
    LoadRegs(LoadRegs),
    /// SET_CONTEXT_REG / SET_SH_REG / SET_UCONFIG_REG(_INDEX): `offset` relative to the
    /// space's base.
    SetRegs {
        space: Space,
        offset: u32,
        index: u32,
        values: &'a [u32],
    },
    WriteConstRam {
        offset: u32,
        data: &'a [u32],
    },
    DumpConstRam {
        offset: u32,
        num_dwords: u32,
        address: u64,
    },
}

fn need(body: &[u32], n: usize, what: &str) -> Result<(), String> {
    if body.len() < n {
        Err(format!(
            "{what} needs {n} body dwords, the header says {}",
            body.len()
        ))
    } else {
        Ok(())
    }
}

fn exact(body: &[u32], allowed: &[usize], what: &str) -> Result<(), String> {
    if allowed.contains(&body.len()) {
        Ok(())
    } else {
        Err(format!(
            "{what} has {} body dwords; expected {}",
            body.len(),
            allowed
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(" or ")
        ))
    }
}

fn release_from(origin: ReleaseOrigin, b: &[u32]) -> ReleaseMem {
    ReleaseMem {
        origin,
        op: pkt::ReleaseMemOp::from_raw(b[0]),
        dst_sel: (b[1] >> 16) & 3,
        int_sel: (b[1] >> 24) & 7,
        data_sel: (b[1] >> 29) & 7,
        address: addr64(b[2], b[3]),
        data: addr64(b[4], b[5]),
        int_ctxid: b.get(6).copied().unwrap_or(0),
    }
}

fn decode_sony<'a>(h: Header, body: &'a [u32]) -> Result<SonyCommand<'a>, String> {
    let code = SonyCode::from_code(h.sony_code()).ok_or_else(|| {
        format!(
            "Sony driver command {:#04x} (NOP header bits 7:2) is not one GPU.md lists",
            h.sony_code()
        )
    })?;
    let total = body.len() + 1;
    if let Some(l) = code.lengths()
        && !l.contains(&total)
    {
        return Err(format!(
            "{} is {total} dwords long; expected {}",
            code.name(),
            l.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(" or ")
        ));
    }
    Ok(match code {
        SonyCode::DrawReset => SonyCommand::DrawReset,
        SonyCode::DispatchReset => SonyCommand::DispatchReset,
        SonyCode::WaitFlipDone => SonyCommand::WaitFlipDone(WaitFlip {
            video_out_handle: body[0],
            buffer_index: body[1] as i32,
        }),
        SonyCode::PushMarker => {
            let bytes: Vec<u8> = body.iter().flat_map(|d| d.to_le_bytes()).collect();
            let end = bytes
                .iter()
                .position(|&b| b == 0)
                .ok_or("push marker text is not NUL-terminated within the packet".to_string())?;
            SonyCommand::PushMarker(String::from_utf8_lossy(&bytes[..end]).into_owned())
        }
        SonyCode::PopMarker => SonyCommand::PopMarker,
        SonyCode::Flip => SonyCommand::Flip(Flip {
            video_out_handle: body[0],
            buffer_index: body[1] as i32,
            flip_mode: body[2],
            flip_arg: addr64(body[3], body[4]),
        }),
        SonyCode::ReleaseMem => {
            need(body, 2, "release mem")?;
            SonyCommand::ReleaseMem {
                interrupt_select: (body[1] >> 24) & 7,
                release: (body.len() >= 6)
                    .then(|| release_from(ReleaseOrigin::SonyReleaseMem, body)),
                body,
            }
        }
        SonyCode::ContextState => {
            let op = body[0];
            if op > 3 {
                return Err(format!("context state operation {op} is not 0..3"));
            }
            SonyCommand::ContextState { op, body }
        }
        SonyCode::AcquireMem => SonyCommand::AcquireMem(body),
        SonyCode::WriteData => SonyCommand::WriteData(body),
        SonyCode::DmaData => SonyCommand::DmaData(body),
    })
}

/// Decodes one type-3 packet. `body` is exactly [`Header::body_len`] dwords. Errors name
/// the reason; the caller adds the packet name and position.
pub fn decode<'a>(h: Header, body: &'a [u32]) -> Result<Packet<'a>, String> {
    debug_assert_eq!(h.kind(), 3);
    let b = body;
    Ok(match h.opcode() {
        op::NOP => {
            if h.sony_code() != 0 {
                Packet::Sony(decode_sony(h, b)?)
            } else {
                Packet::Nop
            }
        }
        op::SET_BASE => {
            exact(b, &[3], "SET_BASE")?;
            Packet::SetBase {
                index: b[0] & 0xf,
                address: addr64(b[1], b[2]),
            }
        }
        op::CLEAR_STATE => Packet::ClearState,
        op::INDEX_BUFFER_SIZE => {
            exact(b, &[1], "INDEX_BUFFER_SIZE")?;
            Packet::IndexBufferSize(b[0])
        }
        op::DISPATCH_DIRECT => {
            exact(b, &[4], "DISPATCH_DIRECT")?;
            Packet::DispatchDirect {
                x: b[0],
                y: b[1],
                z: b[2],
                initiator: b[3],
            }
        }
        op::DISPATCH_INDIRECT => {
            exact(b, &[2, 3], "DISPATCH_INDIRECT")?;
            if b.len() == 3 {
                Packet::DispatchIndirect {
                    args: ArgAddress::Absolute(addr64(b[0], b[1])),
                    initiator: b[2],
                }
            } else {
                Packet::DispatchIndirect {
                    args: ArgAddress::BaseOffset(b[0]),
                    initiator: b[1],
                }
            }
        }
        op::SET_PREDICATION => {
            exact(b, &[3], "SET_PREDICATION")?;
            Packet::SetPredication(SetPredication {
                op: (b[0] >> 16) & 7,
                draw_visible: b[0] & (1 << 8) != 0,
                hint_wait: b[0] & (1 << 12) == 0,
                continue_: b[0] & (1 << 31) != 0,
                address: addr64(b[1], b[2]),
            })
        }
        op::COND_EXEC => {
            exact(b, &[4], "COND_EXEC")?;
            Packet::CondExec {
                address: addr64(b[0], b[1]),
                exec_count: b[3] & 0x3fff,
            }
        }
        op::DRAW_INDIRECT | op::DRAW_INDEX_INDIRECT => {
            exact(b, &[4], "DRAW_INDIRECT")?;
            Packet::DrawIndirect {
                indexed: h.opcode() == op::DRAW_INDEX_INDIRECT,
                data_offset: b[0],
                base_vtx_loc: b[1] & 0xffff,
                start_inst_loc: b[2] & 0xffff,
                multi: None,
                initiator: b[3],
            }
        }
        op::DRAW_INDIRECT_MULTI | op::DRAW_INDEX_INDIRECT_MULTI => {
            exact(b, &[9], "DRAW_INDIRECT_MULTI")?;
            Packet::DrawIndirect {
                indexed: h.opcode() == op::DRAW_INDEX_INDIRECT_MULTI,
                data_offset: b[0],
                base_vtx_loc: b[1] & 0xffff,
                start_inst_loc: b[2] & 0xffff,
                multi: Some(MultiDraw {
                    draw_index_loc: b[3] & 0xffff,
                    draw_index_enable: b[3] & (1 << 31) != 0,
                    count_indirect_enable: b[3] & (1 << 30) != 0,
                    count: b[4],
                    count_address: addr64(b[5], b[6]),
                    stride: b[7],
                }),
                initiator: b[8],
            }
        }
        op::INDEX_BASE => {
            exact(b, &[2], "INDEX_BASE")?;
            Packet::IndexBase(addr64(b[0], b[1]))
        }
        op::DRAW_INDEX_2 => {
            exact(b, &[5], "DRAW_INDEX_2")?;
            Packet::DrawIndex2 {
                max_size: b[0],
                address: addr64(b[1], b[2]),
                count: b[3],
                initiator: b[4],
            }
        }
        op::CONTEXT_CONTROL => {
            exact(b, &[2], "CONTEXT_CONTROL")?;
            Packet::ContextControl {
                load: b[0],
                shadow: b[1],
            }
        }
        op::INDEX_TYPE => {
            exact(b, &[1], "INDEX_TYPE")?;
            Packet::IndexType(b[0])
        }
        op::DRAW_INDEX_AUTO => {
            exact(b, &[2], "DRAW_INDEX_AUTO")?;
            Packet::DrawIndexAuto {
                count: b[0],
                initiator: b[1],
            }
        }
        op::NUM_INSTANCES => {
            exact(b, &[1], "NUM_INSTANCES")?;
            Packet::NumInstances(b[0])
        }
        op::DRAW_INDEX_OFFSET_2 => {
            exact(b, &[4], "DRAW_INDEX_OFFSET_2")?;
            Packet::DrawIndexOffset2 {
                max_size: b[0],
                offset: b[1],
                count: b[2],
                initiator: b[3],
            }
        }
        op::WRITE_DATA => {
            need(b, 4, "WRITE_DATA")?;
            Packet::WriteData(WriteData {
                control: pkt::ControlCik::from_raw(b[0]),
                address: addr64(b[1], b[2]),
                data: &b[3..],
            })
        }
        op::WAIT_REG_MEM | op::WAIT_REG_MEM64 => {
            let is_64 = h.opcode() == op::WAIT_REG_MEM64;
            exact(
                b,
                if is_64 { &[8] } else { &[6] },
                if is_64 {
                    "WAIT_REG_MEM64"
                } else {
                    "WAIT_REG_MEM"
                },
            )?;
            let (reference, mask, interval) = if is_64 {
                (addr64(b[3], b[4]), addr64(b[5], b[6]), b[7])
            } else {
                (b[3] as u64, b[4] as u64, b[5])
            };
            let memory = b[0] & (1 << 4) != 0;
            Packet::WaitRegMem(WaitRegMem {
                function: b[0] & 7,
                memory,
                operation: (b[0] >> 6) & 3,
                engine: (b[0] >> 8) & 3,
                address: if memory {
                    addr64(b[1], b[2])
                } else {
                    b[1] as u64
                },
                reference,
                mask,
                poll_interval: interval & 0xffff,
                is_64,
            })
        }
        op::INDIRECT_BUFFER => {
            exact(b, &[3], "INDIRECT_BUFFER")?;
            Packet::IndirectBuffer {
                address: addr64(b[0], b[1]),
                control: pkt::IbControl::from_raw(b[2]),
            }
        }
        op::COPY_DATA => {
            exact(b, &[5], "COPY_DATA")?;
            Packet::CopyData(CopyData {
                src_sel: b[0] & 0xf,
                dst_sel: (b[0] >> 8) & 0xf,
                count_64: b[0] & (1 << 16) != 0,
                wr_confirm: b[0] & (1 << 20) != 0,
                engine: b[0] >> 30,
                src: addr64(b[1], b[2]),
                dst: addr64(b[3], b[4]),
            })
        }
        op::PFP_SYNC_ME => Packet::PfpSyncMe,
        op::COND_WRITE => {
            exact(b, &[8], "COND_WRITE")?;
            Packet::CondWrite {
                function: b[0] & 7,
                poll_memory: b[0] & (1 << 4) != 0,
                write_memory: b[0] & (1 << 8) != 0,
                poll_address: addr64(b[1], b[2]),
                reference: b[3],
                mask: b[4],
                write_address: addr64(b[5], b[6]),
                data: b[7],
            }
        }
        op::EVENT_WRITE => {
            exact(b, &[1, 3], "EVENT_WRITE")?;
            Packet::EventWrite(EventWrite {
                event_type: b[0] & 0x3f,
                event_index: (b[0] >> 8) & 0xf,
                address: (b.len() == 3).then(|| addr64(b[1], b[2])),
            })
        }
        op::EVENT_WRITE_EOP => {
            exact(b, &[4, 5], "EVENT_WRITE_EOP")?;
            Packet::ReleaseMem(ReleaseMem {
                origin: ReleaseOrigin::EventWriteEop,
                op: pkt::ReleaseMemOp::from_raw(b[0]),
                dst_sel: 0,
                int_sel: (b[2] >> 24) & 3,
                data_sel: (b[2] >> 29) & 7,
                address: addr64(b[1], b[2] & 0xffff),
                data: addr64(b[3], b.get(4).copied().unwrap_or(0)),
                int_ctxid: 0,
            })
        }
        op::EVENT_WRITE_EOS => {
            exact(b, &[4], "EVENT_WRITE_EOS")?;
            Packet::EventWriteEos {
                event: EventWrite {
                    event_type: b[0] & 0x3f,
                    event_index: (b[0] >> 8) & 0xf,
                    address: Some(addr64(b[1], b[2] & 0xffff)),
                },
                command: (b[2] >> 29) & 7,
                data: b[3],
            }
        }
        op::RELEASE_MEM => {
            exact(b, &[6, 7], "RELEASE_MEM")?;
            Packet::ReleaseMem(release_from(ReleaseOrigin::ReleaseMem, b))
        }
        op::DMA_DATA => {
            exact(b, &[6], "DMA_DATA")?;
            Packet::DmaData(DmaData {
                word0: pkt::DmaDataWord0Gfx9::from_raw(b[0]),
                src: addr64(b[1], b[2]),
                dst: addr64(b[3], b[4]),
                command: pkt::CommandGfx9::from_raw(b[5]),
            })
        }
        op::ACQUIRE_MEM => {
            exact(b, &[7], "ACQUIRE_MEM")?;
            Packet::AcquireMem(AcquireMem {
                coher_cntl: b[0],
                size: addr64(b[1], b[2] & 0xff),
                base: addr64(b[3], b[4] & 0xffffff),
                poll_interval: b[5] & 0xffff,
                gcr_cntl: pkt::GcrCntl::from_raw(b[6]),
            })
        }
        op::REWIND => Packet::Rewind,
        op::LOAD_SH_REG_INDEX | op::LOAD_CONTEXT_REG_INDEX | op::LOAD_UCONFIG_REG_INDEX => {
            exact(b, &[4], "LOAD_*_REG_INDEX")?;
            let space = match h.opcode() {
                op::LOAD_SH_REG_INDEX => Space::Sh,
                op::LOAD_CONTEXT_REG_INDEX => Space::Context,
                _ => Space::Uconfig,
            };
            Packet::LoadRegs(LoadRegs {
                space,
                index: b[0] & 1,
                address: addr64(b[0] & !3, b[1]),
                offset_and_data: b[2] & (1 << 31) != 0,
                reg_offset: b[2] & 0xffff,
                num_dwords: b[3] & 0x3fff,
            })
        }
        op::SET_CONTEXT_REG | op::SET_SH_REG | op::SET_UCONFIG_REG | op::SET_UCONFIG_REG_INDEX => {
            need(b, 2, "SET_*_REG")?;
            let space = match h.opcode() {
                op::SET_CONTEXT_REG => Space::Context,
                op::SET_SH_REG => Space::Sh,
                _ => Space::Uconfig,
            };
            Packet::SetRegs {
                space,
                offset: b[0] & 0xffff,
                index: b[0] >> 28,
                values: &b[1..],
            }
        }
        op::WRITE_CONST_RAM => {
            need(b, 2, "WRITE_CONST_RAM")?;
            Packet::WriteConstRam {
                offset: b[0] & 0xffff,
                data: &b[1..],
            }
        }
        op::DUMP_CONST_RAM => {
            exact(b, &[4], "DUMP_CONST_RAM")?;
            Packet::DumpConstRam {
                offset: b[0] & 0xffff,
                num_dwords: b[1] & 0x7fff,
                address: addr64(b[2], b[3]),
            }
        }
        other => {
            return Err(match opcode_name(other) {
                Some(_) => "this packet is not supported by the PS5 command processor".into(),
                None => "the opcode is not in the register database (sid.h)".into(),
            });
        }
    })
}
