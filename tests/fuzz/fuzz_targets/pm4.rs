//! Fuzzes the PM4 command processor and the shader-header parser: no input may panic or
//! hang. The input is the command buffer (little-endian dwords) at a guest address; the
//! same bytes are also mapped at a second address so indirect buffers can reach them.
//!
//! ```text
//! RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir tests/fuzz pm4 -- -max_total_time=60
//! ```
#![no_main]
use aps5_agc::*;
use libfuzzer_sys::fuzz_target;

struct Apply<'m>(&'m BufferMemory);

impl Backend for Apply<'_> {
    fn dispatch(&mut self, d: &Dispatch<'_>) -> Result<(), String> {
        let _ = format!("{:?}", d.state);
        Ok(())
    }
    fn draw(&mut self, d: &Draw<'_>) -> Result<(), String> {
        let _ = d.state.render_targets[0].extent();
        Ok(())
    }
    fn release_mem(&mut self, r: &ReleaseMem) -> Result<(), String> {
        r.apply(self.0, 1)
    }
    fn write_data(&mut self, w: &WriteData<'_>) -> Result<(), String> {
        w.apply(self.0)
    }
    fn wait_reg_mem(&mut self, w: &WaitRegMem) -> Result<WaitResult, String> {
        Ok(if w.poll(self.0)? { WaitResult::Satisfied } else { WaitResult::NeverSatisfied })
    }
    fn flip(&mut self, _: &Flip) -> Result<(), String> {
        Ok(())
    }
    fn wait_flip(&mut self, _: &WaitFlip) -> Result<(), String> {
        Ok(())
    }
    fn dma_data(&mut self, d: &DmaData) -> Result<(), String> {
        if d.command.byte_count > 1 << 16 {
            return Err("large DMA".into());
        }
        d.apply(self.0)
    }
    fn copy_data(&mut self, _: &CopyData) -> Result<(), String> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let dwords: Vec<u32> = data
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mem = BufferMemory::new();
    mem.map_dwords(0x1000, &dwords);
    mem.map_dwords(0x1_0000_0000, &dwords);
    mem.map(0x2_0000_0000, vec![0; 4096]);
    for kind in [QueueKind::Graphics, QueueKind::Compute] {
        let mut q = Queue::with_limits(
            kind,
            Limits {
                max_ib_depth: 4,
                max_dwords: 1 << 20,
            },
        );
        match q.submit(&mem, 0x1000, dwords.len() as u32, &mut Apply(&mem)) {
            Ok(_) => {}
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
    let mut bytes = data.to_vec();
    if let Ok(h) = shader::parse(&bytes) {
        let _ = format!("{h:?}");
        let _ = shader::rebase(&mut bytes, 0x4000_0000, 0x5000_0000);
    }
});
