//! [`aps5_agc::Backend`] on the [`Executor`]: what the command processor asks for, done.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use aps5_agc::generated::reg;
use aps5_agc::{
    Backend, CopyData, Dispatch, DispatchKind, DmaData, Draw, Flip, GuestMemory, ReleaseMem,
    WaitFlip, WaitRegMem, WaitResult, WriteData,
};

use crate::exec::{ComputeDispatch, DispatchError, Executor};
use crate::memory::{MemFault, Memory, Region};

/// An end-of-pipe interrupt the program asked for (RELEASE_MEM INT_SEL != 0): the caller
/// turns it into EQ events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupt {
    /// INT_CTXID of the packet.
    pub context_id: u32,
}

/// The display side of flips from the command stream (Sony's flip and wait-for-flip driver
/// commands): libSceVideoOut in a ported program. The backend runs the queued draws first,
/// so when a flip is called every draw before it has been written back to guest memory:
/// the flip can show the buffer at once.
pub trait Display {
    /// Shows display buffer `f.buffer_index` of video-out port `f.video_out_handle`.
    fn flip(&mut self, f: &Flip) -> Result<(), String>;
    /// Returns once the buffer is safe to render into (no longer shown by a pending flip).
    fn wait_flip(&mut self, f: &WaitFlip) -> Result<(), String>;
}

/// Adapts guest memory to the command processor's trait.
pub struct Guest<'a>(pub &'a dyn Memory);

impl GuestMemory for Guest<'_> {
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), aps5_agc::Fault> {
        self.0.read(addr, out).map_err(fault)
    }
    fn write(&self, addr: u64, data: &[u8]) -> Result<(), aps5_agc::Fault> {
        self.0.write(addr, data).map_err(fault)
    }
}

fn fault(e: MemFault) -> aps5_agc::Fault {
    aps5_agc::Fault {
        address: e.address,
        len: e.bytes as usize,
        reason: e.reason,
    }
}

/// One submission's backend: the executor, the memory, the GPU-visible regions (read once
/// per submission), and the interrupts raised so far.
pub struct GpuBackend<'a> {
    pub exec: &'a mut Executor,
    pub mem: &'a dyn Memory,
    pub regions: Vec<Region>,
    pub interrupts: Vec<Interrupt>,
    /// The last dispatch's failure in full (the processor's error keeps only its text).
    pub error: Option<DispatchError>,
    /// The last draw's failure in full.
    pub draw_error: Option<crate::draw::DrawError>,
    /// How long WAIT_REG_MEM polls memory before giving up.
    pub wait_limit: Duration,
    /// Where flips from the command stream go (none: they stop the submission).
    pub display: Option<&'a mut dyn Display>,
}

/// The GPU clock that RELEASE_MEM and COPY_DATA timestamps read: nanoseconds since the
/// process first asked, one clock for every queue and submission, so timestamps never go
/// backwards.
pub fn gpu_clock() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// WAIT_REG_MEM: polls `w` in `mem` every 100 us until it holds or `limit` has passed
/// (then the wait can never be satisfied: nothing GPU-side is in flight that could write it).
pub fn wait_memory(
    mem: &dyn Memory,
    w: &WaitRegMem,
    limit: Duration,
) -> Result<WaitResult, String> {
    if !w.memory {
        return Err("WAIT_REG_MEM on a register is not supported".into());
    }
    let deadline = Instant::now() + limit;
    loop {
        if w.poll(&Guest(mem))
            .map_err(|e| format!("WAIT_REG_MEM: {e}"))?
        {
            return Ok(WaitResult::Satisfied);
        }
        if Instant::now() >= deadline {
            return Ok(WaitResult::NeverSatisfied);
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

impl<'a> GpuBackend<'a> {
    pub fn new(exec: &'a mut Executor, mem: &'a dyn Memory, regions: Vec<Region>) -> Self {
        GpuBackend {
            exec,
            mem,
            regions,
            interrupts: Vec::new(),
            error: None,
            draw_error: None,
            wait_limit: Duration::from_secs(10),
            display: None,
        }
    }

    fn guest(&self) -> Guest<'_> {
        Guest(self.mem)
    }

    /// Runs the queued draws (crate::batch): before anything whose effect must follow them.
    pub fn flush(&mut self) -> Result<(), String> {
        let r = self.exec.flush(self.mem);
        self.draw_result(r)
    }

    /// A draw error's text; the error itself is kept unless an earlier one is (the first
    /// error stopped the submission).
    fn draw_result(&mut self, r: Result<(), crate::draw::DrawError>) -> Result<(), String> {
        r.map_err(|e| {
            let text = e.to_string();
            self.draw_error.get_or_insert(e);
            text
        })
    }
}

/// The compute registers of a dispatch, raw.
pub fn compute_dispatch(d: &Dispatch<'_>, groups: [u32; 3]) -> ComputeDispatch {
    let r = d.registers;
    ComputeDispatch {
        pgm_lo: r.get(reg::COMPUTE_PGM_LO),
        pgm_hi: r.get(reg::COMPUTE_PGM_HI),
        rsrc1: r.get(reg::COMPUTE_PGM_RSRC1),
        rsrc2: r.get(reg::COMPUTE_PGM_RSRC2),
        rsrc3: r.get(reg::COMPUTE_PGM_RSRC3),
        num_thread: [
            r.get(reg::COMPUTE_NUM_THREAD_X),
            r.get(reg::COMPUTE_NUM_THREAD_Y),
            r.get(reg::COMPUTE_NUM_THREAD_Z),
        ],
        start: [
            r.get(reg::COMPUTE_START_X),
            r.get(reg::COMPUTE_START_Y),
            r.get(reg::COMPUTE_START_Z),
        ],
        user_data: std::array::from_fn(|i| r.get(reg::COMPUTE_USER_DATA_0 + i as u32)),
        initiator: d.initiator.to_raw(),
        groups,
    }
}

impl Backend for GpuBackend<'_> {
    fn dispatch(&mut self, d: &Dispatch<'_>) -> Result<(), String> {
        let groups = match d.kind {
            DispatchKind::Direct { groups } => groups,
            DispatchKind::Indirect { args_address } => {
                let mut b = [0u8; 12];
                self.mem
                    .read(args_address, &mut b)
                    .map_err(|e| format!("indirect dispatch arguments: {e}"))?;
                std::array::from_fn(|i| {
                    u32::from_le_bytes(b[i * 4..i * 4 + 4].try_into().expect("4 bytes"))
                })
            }
        };
        let cd = compute_dispatch(d, groups);
        self.flush()?;
        match self.exec.dispatch(self.mem, &cd, &self.regions) {
            Ok(()) => Ok(()),
            Err(e) => {
                let text = e.to_string();
                self.error = Some(e);
                Err(text)
            }
        }
    }

    fn draw(&mut self, d: &Draw<'_>) -> Result<(), String> {
        let r = self.exec.draw(self.mem, d, &self.regions);
        self.draw_result(r)
    }

    fn release_mem(&mut self, r: &ReleaseMem) -> Result<(), String> {
        // Once the queued draws have run, every earlier dispatch and draw has finished and
        // its results are in guest memory, so the label can be written now.
        self.flush()?;
        r.apply(&self.guest(), gpu_clock())?;
        if r.int_sel != 0 {
            self.interrupts.push(Interrupt {
                context_id: r.int_ctxid,
            });
        }
        Ok(())
    }

    fn write_data(&mut self, w: &WriteData<'_>) -> Result<(), String> {
        // Queued draws may read what it overwrites (constants between draws).
        self.flush()?;
        w.apply(&self.guest())
    }

    fn wait_reg_mem(&mut self, w: &WaitRegMem) -> Result<WaitResult, String> {
        // Another CPU thread, or another queue, may still write it.
        self.flush()?;
        wait_memory(self.mem, w, self.wait_limit)
    }

    fn flip(&mut self, f: &Flip) -> Result<(), String> {
        self.flush()?;
        match self.display.as_deref_mut() {
            Some(d) => d.flip(f),
            None => Err("a flip from the command stream, but no display is attached".into()),
        }
    }

    fn wait_flip(&mut self, f: &WaitFlip) -> Result<(), String> {
        self.flush()?;
        match self.display.as_deref_mut() {
            Some(d) => d.wait_flip(f),
            None => Err("a wait for a flip, but no display is attached".into()),
        }
    }

    fn dma_data(&mut self, d: &DmaData) -> Result<(), String> {
        self.flush()?;
        d.apply(&self.guest())
    }

    fn copy_data(&mut self, c: &CopyData) -> Result<(), String> {
        // After the flush, what earlier work wrote is in guest memory.
        self.flush()?;
        c.apply(&self.guest(), gpu_clock())
    }

    fn sync_memory(&mut self) -> Result<(), String> {
        self.flush()
    }

    fn end_submission(&mut self) -> Result<(), String> {
        let r = self.exec.end_submission(self.mem);
        self.draw_result(r)
    }

    fn acquire_mem(&mut self, _a: &aps5_agc::AcquireMem) -> Result<(), String> {
        // A cache invalidation: programs written meanwhile are read again.
        self.exec.invalidate_code();
        Ok(())
    }
}
