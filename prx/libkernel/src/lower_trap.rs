//! The lowering trap (issue 14, docs/RELINK.md "AMD-only instructions"): an AMD-only
//! instruction the target CPU lacks, at a site too short for a `jmp` to its routine, is
//! relinked as `ud1 eax, eax` and listed in its file's `PT_APS5_LOWER_TRAPS` table (site →
//! stub). The SIGILL it raises resumes at the stub, which computes the instruction's result
//! and jumps to the next instruction: registers and flags are as the stub leaves them.

use aps5_prx_abi::relinked::{LOWER_TRAP, LowerTrap, PT_APS5_LOWER_TRAPS};

/// Resumes a [`LOWER_TRAP`] at the interrupted `rip` at its stub; false (nothing changed)
/// when the instruction is something else or no loaded file lists the address.
pub fn service(uc: &mut libc::ucontext_t) -> bool {
    let g = &mut uc.uc_mcontext.gregs;
    let rip = g[libc::REG_RIP as usize] as u64;
    // SIGILL is raised by an instruction fetch at rip, so its first bytes are readable.
    let at = unsafe { std::ptr::read_unaligned(rip as *const [u8; 3]) };
    if at != LOWER_TRAP {
        return false;
    }
    match stub_for(rip) {
        Some(stub) => {
            g[libc::REG_RIP as usize] = stub as i64;
            true
        }
        None => false,
    }
}

/// The stub of the site at `rip` from the trap table of the loaded file that holds it.
fn stub_for(rip: u64) -> Option<u64> {
    struct Query {
        rip: u64,
        stub: Option<u64>,
    }
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        let (info, q) = unsafe { (&*info, &mut *data.cast::<Query>()) };
        if info.dlpi_phdr.is_null() {
            return 0;
        }
        let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum.into()) };
        let base = info.dlpi_addr;
        let holds = phdrs.iter().any(|p| {
            p.p_type == libc::PT_LOAD
                && (base.wrapping_add(p.p_vaddr)..base.wrapping_add(p.p_vaddr + p.p_memsz))
                    .contains(&q.rip)
        });
        if !holds {
            return 0;
        }
        let site = q.rip.wrapping_sub(base);
        for p in phdrs.iter().filter(|p| p.p_type == PT_APS5_LOWER_TRAPS) {
            let n = (p.p_memsz / 16) as usize;
            let at = base.wrapping_add(p.p_vaddr) as *const LowerTrap;
            // The relinker aligns the table to 16 in a loaded, readable segment.
            let table = unsafe { std::slice::from_raw_parts(at, n) };
            if let Ok(k) = table.binary_search_by_key(&site, |t| t.site) {
                q.stub = Some(base.wrapping_add(table[k].stub));
            }
        }
        1 // the file holding rip was found: stop
    }
    let mut q = Query { rip, stub: None };
    // Not async-signal-safe in general (it takes the loader's lock), but SIGILL here is
    // synchronous: the trapping thread is in guest code, not inside the loader.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut q).cast()) };
    q.stub
}
