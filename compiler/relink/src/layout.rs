//! The relinker proper: binds symbols, rewrites relocations, lays out and writes the ELF.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use aps5_elf::{Module, RelocationTable};

use crate::amd::{self, AmdOnlyKind, AmdOnlySite};
use crate::image::{self, Piece, PieceData};
use crate::lower;
use crate::reach::{self, CodeSegment, Roots};
use crate::scan::{self, SyscallSite};
use crate::stubs::{self, EntryPlan};
use crate::writer::{
    Phdr, Rela, Shdr, StrTab, Sym, align_up, congruent, gnu_buckets, gnu_hash, gnu_hash_table,
    sysv_hash_table,
};
use crate::{CoverageRow, PrxSet, RelinkError, RelinkOptions, RelinkedImage};

/// What is produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A PIE with an entry stub and PT_INTERP.
    Executable,
    /// A shared object.
    Module,
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;
const PT_PHDR: u32 = 6;
const PT_TLS: u32 = 7;
const PT_SCE_RELRO: u32 = 0x6100_0010;
const PT_SCE_PROCPARAM: u32 = 0x6100_0001;
const PT_SCE_MODULE_PARAM: u32 = 0x6100_0002;
const PT_GNU_EH_FRAME: u32 = 0x6474_E550;
const PT_GNU_STACK: u32 = 0x6474_E551;
const PT_GNU_RELRO: u32 = 0x6474_E552;
const PF_X: u32 = 1;
const PF_W: u32 = 2;
const PF_R: u32 = 4;

const R_NONE: u32 = 0;
const R_64: u32 = 1;
const R_PC32: u32 = 2;
const R_GLOB_DAT: u32 = 6;
const R_JUMP_SLOT: u32 = 7;
const R_RELATIVE: u32 = 8;
const R_DTPMOD64: u32 = 16;
const R_DTPOFF64: u32 = 17;
const R_TPOFF64: u32 = 18;

const INTERP: &str = "/lib64/ld-linux-x86-64.so.2";
/// Prefix of the module_start alias a relinked module exports (see [`relink`]).
pub(crate) const START_PREFIX: &str = "__aps5_module_start.";
const PAGE: u64 = 0x1000;

/// An original loadable segment.
#[derive(Debug, Clone)]
struct Orig<'a> {
    vaddr: u64,
    memsz: u64,
    /// The file bytes, borrowed from the input until a link-time patch copies them.
    bytes: Cow<'a, [u8]>,
    /// What `bytes` started as.
    original: &'a [u8],
    flags: u32,
    align: u64,
    /// PT_SCE_RELRO: read-only after relocation.
    relro: bool,
}

/// The libkernel export a PS5 payload's entry stub gets `_start`'s argument from.
const PAYLOAD_ARGS: &str = "__aps5_payload_args";

/// How an original symbol is bound in the output.
/// `STB_WEAK`.
const STB_WEAK: u8 = 2;

#[derive(Debug, Clone, Copy)]
enum Bind {
    /// An undefined dynamic symbol (index in the new dynsym).
    Dyn(u32),
    /// An unimplemented import: the address of its stub.
    Stub(u64),
    /// Defined in this module at this base-relative address.
    Local(u64),
    /// A weak import nothing implements: address 0.
    Zero,
}

pub(crate) fn relink(
    bytes: &[u8],
    module: &Module,
    prx: &PrxSet,
    opts: &RelinkOptions,
    kind: Kind,
) -> Result<RelinkedImage, RelinkError> {
    let image = aps5_elf::unwrap_fself(bytes)?;
    // Everything moves up by `shift` (a multiple of every segment alignment) so the ELF
    // header and the new tables can sit in front, and no export has address 0 (the host
    // loader ignores symbols whose value is 0). Relative layout is unchanged.
    let mut names = Names::default();
    let run_path_len = opts.run_path(kind == Kind::Module).len() as u64;
    let shift = header_budget(module, prx, &mut names, run_path_len);
    // The relocations are shifted as they are read (cloning millions of them costs more
    // than the rest of the pass).
    let original_relocations = &module.relocations;
    let shifted = shift_module(module, shift);
    let module = &shifted;
    let mut segs = original_segments(&image, module)?;

    // Raw system calls in the code the program can reach become the trap libkernel
    // services (FreeBSD numbers and ABI); byte patterns outside it are data and stay.
    // AMD-only instructions in it are listed (they raise SIGILL on Intel CPUs).
    let mut trapped: Vec<SyscallSite> = Vec::new();
    let mut unreachable: Vec<SyscallSite> = Vec::new();
    let mut amd_only: Vec<AmdOnlySite> = Vec::new();
    let mut to_lower: Vec<iced_x86::Instruction> = Vec::new();
    let exec_bytes = || {
        segs.iter()
            .filter(|s| s.flags & PF_X != 0)
            .map(|s| &s.bytes[..])
    };
    // Only when the text holds the bytes such instructions are made of (0F 05 / 0F 34 /
    // CD 80; 0F 78 / 0F 79 / 0F 2B / 0F 01 FA-FD) is the descent run.
    let want_syscalls = !opts.allow_syscalls && exec_bytes().any(scan::may_hold_syscalls);
    let want_amd = exec_bytes().any(amd::may_hold);
    // The descent (what code is reachable) reads the segments on another thread while this
    // one binds the relocations; its results are applied after both.
    let descend = || {
        let mut roots = code_roots(module, original_relocations, shift, kind);
        // Every function with unwind information (landing pads excepted) is code.
        if let Some(e) = module.segments.iter().find(|s| s.p_type == PT_GNU_EH_FRAME)
            && let Some(hdr) = segs.iter().find_map(|s| {
                let off = usize::try_from(e.vaddr.checked_sub(s.vaddr)?).ok()?;
                s.bytes.get(off..off.checked_add(e.filesz as usize)?)
            })
        {
            roots
                .certain
                .extend(reach::eh_frame_hdr_functions(hdr, e.vaddr));
        }
        let code: Vec<CodeSegment> = segs
            .iter()
            .map(|s| CodeSegment {
                vaddr: s.vaddr,
                bytes: &s.bytes,
                exec: s.flags & PF_X != 0,
            })
            .collect();
        reach::reach(&code, &roots, &|i| {
            (want_syscalls && scan::syscall_name(i).is_some())
                || (want_amd && AmdOnlyKind::of(i).is_some())
        })
    };

    // Symbols: imports go to the PRX set (by library and NID) or to stubs.
    let mut dynstr = StrTab::new();
    let mut dynsym: Vec<Sym> = vec![Sym::default()];
    let mut dyn_names: Vec<String> = vec![String::new()];
    let mut by_nid: HashMap<String, u32> = HashMap::new();
    let mut needed: Vec<String> = Vec::new();
    let mut coverage: BTreeMap<(String, String), CoverageRow> = BTreeMap::new();
    let mut stub_list: Vec<(String, String)> = Vec::new(); // (library, nid), index = stub number
    let mut stub_is_data: Vec<bool> = Vec::new();
    let mut stub_of: HashMap<(String, String), usize> = HashMap::new();
    enum Pending {
        Dyn(u32),
        Stub(usize),
        Local(u64),
        Zero,
    }
    let mut pending: Vec<Option<Pending>> = Vec::with_capacity(module.symbols.len());

    let mut add_import = |dynstr: &mut StrTab,
                          dynsym: &mut Vec<Sym>,
                          dyn_names: &mut Vec<String>,
                          needed: &mut Vec<String>,
                          library: &str,
                          nid: &str,
                          info: u8|
     -> Option<u32> {
        let lib = prx.find(library, nid)?;
        if !needed.contains(&lib.file_name) {
            needed.push(lib.file_name.clone());
        }
        Some(*by_nid.entry(nid.to_owned()).or_insert_with(|| {
            // Host system libraries (the C++ runtime) export plain names, not NIDs.
            let name = lib
                .host_names
                .as_ref()
                .and_then(|m| m.get(nid))
                .map_or(nid, String::as_str);
            dynsym.push(Sym {
                name: dynstr.add(name),
                info,
                ..Sym::default()
            });
            dyn_names.push(name.to_owned());
            (dynsym.len() - 1) as u32
        }))
    };

    // A payload's plain-name imports (ps5-payload-sdk ELFs, whose DT_NEEDED files do not say
    // which name each serves) are bound by the NID of the name to the first library of the
    // set exporting it. In a Sony module a plain-name import is no library's (OpenOrbis'
    // weak `module_start`): it is never looked up.
    let payload = module.is_payload();
    let mut plain_names: HashMap<String, String> = HashMap::new();
    for s in &module.symbols {
        if s.is_import() {
            let plain = s.nid.is_none() && payload;
            let nid = match &s.nid {
                Some(n) => n.clone(),
                None if plain => aps5_nid::nid(&s.name),
                None => s.name.clone(),
            };
            let library = match (&s.library, s.library_id) {
                (Some(l), _) => l.clone(),
                (None, Some(id)) => format!("#{id}"),
                (None, None) if plain => plain_library(module, prx, &s.name, &nid),
                (None, None) => String::new(),
            };
            let name = if plain {
                plain_names.insert(nid.clone(), s.name.clone());
                Some(s.name.clone())
            } else {
                names.get(&nid).map(str::to_owned)
            };
            // STB_WEAK imports stay weak; the type (FUNC/OBJECT/NOTYPE) is kept.
            let info = (s.binding << 4) | (s.kind & 0xF);
            let bound = add_import(
                &mut dynstr,
                &mut dynsym,
                &mut dyn_names,
                &mut needed,
                &library,
                &nid,
                info,
            );
            let key = (library.clone(), nid.clone());
            let file = prx.find(&library, &nid).map(|l| l.file_name.clone());
            coverage.entry(key.clone()).or_insert(CoverageRow {
                library,
                nid,
                name,
                implemented: file.is_some(),
                weak: bound.is_none() && s.binding == STB_WEAK,
                file,
            });
            pending.push(Some(match bound {
                Some(i) => Pending::Dyn(i),
                // A weak import nothing implements is 0, as the console's loader makes it:
                // code testing its address sees it missing (no stub, no lookup by name).
                None if s.binding == STB_WEAK => Pending::Zero,
                None => {
                    let n = stub_list.len();
                    Pending::Stub(*stub_of.entry(key.clone()).or_insert_with(|| {
                        stub_list.push(key);
                        stub_is_data.push(s.kind == 1); // STT_OBJECT
                        n
                    }))
                }
            }));
        } else if s.shndx != 0 {
            pending.push(Some(Pending::Local(s.value)));
        } else {
            pending.push(None);
        }
    }

    // The executable's entry stub ends with libc's exit, and libkernel owns the process
    // state, so both are always loaded when the set has them.
    let mut exit_sym = if kind == Kind::Executable {
        let exit_nid = aps5_nid::nid("exit");
        ["libc", "libSceLibcInternal"].iter().find_map(|l| {
            add_import(
                &mut dynstr,
                &mut dynsym,
                &mut dyn_names,
                &mut needed,
                l,
                &exit_nid,
                0x12,
            )
        })
    } else {
        None
    };
    // A PS5 payload's `_start` takes the ELF loader's `payload_args_t *` (libkernel makes
    // it, see prx/libkernel/src/payload.rs).
    let mut payload_sym = if kind == Kind::Executable && module.is_payload() {
        let nid = aps5_nid::nid(PAYLOAD_ARGS);
        let sym = add_import(
            &mut dynstr,
            &mut dynsym,
            &mut dyn_names,
            &mut needed,
            "libkernel",
            &nid,
            0x12,
        );
        if sym.is_none() {
            return Err(RelinkError::Prx(format!(
                "this is a PS5 payload, whose _start needs libkernel's {PAYLOAD_ARGS} ({nid}), which the PRX set lacks"
            )));
        }
        sym
    } else {
        None
    };
    if let Some(k) = prx.libraries.iter().find(|l| l.library == "libkernel") {
        if !needed.contains(&k.file_name) {
            needed.insert(0, k.file_name.clone());
        } else {
            // libkernel first: it owns the state the others use.
            needed.retain(|f| f != &k.file_name);
            needed.insert(0, k.file_name.clone());
        }
    }

    // Exports: defined global/weak symbols, by NID (plain names kept).
    let seg_section = |va: u64| -> u16 {
        segs.iter()
            .position(|s| va >= s.vaddr && va < s.vaddr + s.memsz.max(1))
            .map_or(0xFFF1, |i| (i + 1) as u16)
    };
    for s in module.exports() {
        let name = s.nid.clone().unwrap_or_else(|| s.name.clone());
        if by_nid.contains_key(&name) {
            continue;
        }
        let shndx = seg_section(s.value);
        dynsym.push(Sym {
            name: dynstr.add(&name),
            info: (s.binding << 4) | (s.kind & 0xF),
            other: s.other & 3,
            shndx,
            value: s.value,
            size: s.size,
        });
        by_nid.insert(name.clone(), (dynsym.len() - 1) as u32);
        dyn_names.push(name);
    }

    // PS4/PS5 loaders call module_start of every module a program links against before
    // the program starts, dependencies first; ld.so does not. A relinked module exports
    // `__aps5_module_start.<module name>`: a generated wrapper that runs once, starts the
    // guest modules the module needs (their wrappers, imported weakly), then its
    // module_start; the plain `module_start` export becomes that wrapper too, so
    // sceKernelLoadStartModule (libkernel calls `module_start`) starts dependencies as
    // well. The executable imports the alias (weakly) for each needed file `<name>.prx`
    // and its entry stub calls the ones that exist.
    let mut start_slots_wanted: Vec<u32> = Vec::new();
    // Module: (original module_start, dynsym indices to point at the wrapper).
    let mut start_wrapper: Option<(u64, Vec<u32>)> = None;
    match kind {
        Kind::Module => {
            let start_nid = aps5_nid::nid("module_start");
            let start = module.symbols.iter().find(|s| {
                s.shndx != 0
                    && (s.name == "module_start" || s.nid.as_deref() == Some(start_nid.as_str()))
            });
            if let (Some(st), Some(info)) = (start, &module.module_info) {
                let alias = format!("{START_PREFIX}{}", info.name);
                dynsym.push(Sym {
                    name: dynstr.add(&alias),
                    info: 0x12, // GLOBAL FUNC
                    other: 0,
                    shndx: seg_section(st.value),
                    value: st.value,
                    size: 0,
                });
                dyn_names.push(alias);
                let mut redirect = vec![(dynsym.len() - 1) as u32];
                for n in ["module_start", start_nid.as_str()] {
                    if let Some(&i) = by_nid.get(n) {
                        redirect.push(i);
                    }
                }
                start_wrapper = Some((st.value, redirect));
                for f in needed.clone() {
                    let Some(stem) = f
                        .strip_suffix(".prx")
                        .or_else(|| f.strip_suffix(".sprx"))
                        .filter(|_| !crate::prxset::is_host_file(&f))
                    else {
                        continue;
                    };
                    let alias = format!("{START_PREFIX}{stem}");
                    dynsym.push(Sym {
                        name: dynstr.add(&alias),
                        info: 0x22, // WEAK FUNC, undefined
                        ..Sym::default()
                    });
                    dyn_names.push(alias);
                    start_slots_wanted.push((dynsym.len() - 1) as u32);
                }
            }
        }
        Kind::Executable => {
            for f in needed.clone() {
                // Host system libraries (libstdc++.so.6) have no module_start.
                let Some(stem) = f.strip_suffix(".prx").or_else(|| f.strip_suffix(".sprx")) else {
                    continue;
                };
                let alias = format!("{START_PREFIX}{stem}");
                dynsym.push(Sym {
                    name: dynstr.add(&alias),
                    info: 0x22, // WEAK FUNC, undefined: 0 when the file has none
                    ..Sym::default()
                });
                dyn_names.push(alias);
                start_slots_wanted.push((dynsym.len() - 1) as u32);
            }
        }
    }

    // DT_GNU_HASH covers only defined symbols, as a tail of dynsym sorted by bucket:
    // reorder (undefined first, in their order) and renumber what refers to indices.
    let symoffset = dynsym.iter().skip(1).filter(|s| s.shndx == 0).count() + 1;
    {
        let n_defined = dynsym.len() - symoffset;
        let nb = gnu_buckets(n_defined);
        let mut order: Vec<usize> = (1..dynsym.len()).collect();
        order.sort_by_key(|&i| {
            let defined = dynsym[i].shndx != 0;
            (
                defined,
                if defined {
                    gnu_hash(dyn_names[i].as_bytes()) % nb
                } else {
                    0
                },
                i,
            )
        });
        order.insert(0, 0);
        let mut new_index = vec![0u32; dynsym.len()];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new as u32;
        }
        dynsym = order.iter().map(|&i| dynsym[i]).collect();
        dyn_names = order
            .iter()
            .map(|&i| std::mem::take(&mut dyn_names[i]))
            .collect();
        for p in pending.iter_mut().flatten() {
            if let Pending::Dyn(i) = p {
                *i = new_index[*i as usize];
            }
        }
        for i in start_slots_wanted.iter_mut() {
            *i = new_index[*i as usize];
        }
        if let Some((_, syms)) = &mut start_wrapper {
            for i in syms.iter_mut() {
                *i = new_index[*i as usize];
            }
        }
        exit_sym = exit_sym.map(|i| new_index[i as usize]);
        payload_sym = payload_sym.map(|i| new_index[i as usize]);
    }

    // New segments: R (headers and tables) below the shifted image, RW (dynamic, GOT)
    // and RX (code) after it.
    let orig_end = segs.iter().map(|s| s.vaddr + s.memsz).max().unwrap_or(0);
    let r_base = 0u64;

    // Stub messages go in R; their addresses are needed by the stubs.
    let mut messages = Vec::new();
    let mut msg_at = Vec::new();
    // Code stubs get a slot in RX each; data stubs an address in a no-access page, so a
    // read of a variable nobody implements faults where it happens instead of returning
    // bytes of code.
    let mut slot_of: Vec<u64> = Vec::with_capacity(stub_list.len());
    let (mut n_code, mut n_data) = (0u64, 0u64);
    for &data in &stub_is_data {
        if data {
            slot_of.push(n_data);
            n_data += 1;
        } else {
            slot_of.push(n_code);
            n_code += 1;
        }
    }
    for (lib, nid) in stub_list
        .iter()
        .zip(&stub_is_data)
        .filter(|(_, d)| !**d)
        .map(|(k, _)| k)
    {
        let name = plain_names
            .get(nid)
            .cloned()
            .or_else(|| names.get(nid).map(str::to_owned))
            .unwrap_or_else(|| nid.clone());
        let m = format!("unimplemented: {lib}::{name} ({nid})\n");
        msg_at.push((messages.len() as u64, m.len() as u32));
        messages.extend_from_slice(m.as_bytes());
    }

    // Program headers: count them first (their table sits at the start of R).
    let tls = module.tls.filter(|t| t.memsz > 0);
    let eh = module
        .segments
        .iter()
        .find(|s| s.p_type == PT_GNU_EH_FRAME)
        .cloned();
    let params: Vec<aps5_elf::Segment> = module
        .segments
        .iter()
        .filter(|s| s.p_type == PT_SCE_PROCPARAM || s.p_type == PT_SCE_MODULE_PARAM)
        .cloned()
        .collect();
    let gnu_relro_orig = module
        .segments
        .iter()
        .find(|s| s.p_type == PT_GNU_RELRO)
        .cloned();

    // Relocations (they decide which original segments must be writable).
    // The tables, encoded (Elf64_Rela, 24 bytes each) as they are made: with millions of
    // relocations every extra pass or copy shows.
    let mut rela: Vec<u8> = Vec::new();
    let mut jmprel: Vec<u8> = Vec::new();
    let mut textrel = false;
    let stub_base_of = |rx_base: u64, i: u64| rx_base + stubs::COMMON_SIZE + i * stubs::STUB_SIZE;
    // The RX base depends on sizes of R and RW, which depend on the relocation count but
    // not on stub addresses; so relocations are first collected with stub *numbers*.
    struct Out {
        table: RelocationTable,
        offset: u64,
        r_type: u32,
        target: Target,
        addend: i64,
    }
    // u32 payloads keep `Out` at 32 bytes: there is one per relocation.
    #[derive(Clone, Copy)]
    enum Target {
        None,
        Dyn(u32),
        Stub(u32),
    }
    let mut outs: Vec<Out> = Vec::new();
    let mut patches: Vec<(u64, Target, i64)> = Vec::new(); // PC32 fixed at link time: (P, S, A)
    // 64-bit values known at link time (S + A with no symbol, or a weak import nothing
    // implements): written into the image. An R_X86_64_64 against symbol 0 would not do:
    // the loader adds the load base to it in a position-independent output.
    let mut constants: Vec<(u64, u64)> = Vec::new();
    // PT_SCE_RELRO segments the loop finds patched at load time (applied after it).
    let mut relro_now = vec![false; segs.len()];
    let (reached, bound) = std::thread::scope(|sc| {
        let descent = (want_syscalls || want_amd).then(|| sc.spawn(descend));
        let bound = (|| -> Result<(), RelinkError> {
            for r in original_relocations {
                let r = &shift_relocation(r, shift);
                let type_name = aps5_elf::names::relocation_type_name(r.r_type);
                let bad = |why: String| RelinkError::Relocation {
                    offset: r.offset,
                    type_name,
                    why,
                };
                // RELATIVE and NONE ignore their symbol (toolchains leave section symbols there).
                let bind = if r.symbol == 0 || r.r_type == R_RELATIVE || r.r_type == R_NONE {
                    None
                } else {
                    match pending.get(r.symbol as usize) {
                        Some(Some(Pending::Dyn(i))) => Some(Bind::Dyn(*i)),
                        Some(Some(Pending::Stub(n))) => Some(Bind::Stub(*n as u64)),
                        Some(Some(Pending::Local(v))) => Some(Bind::Local(*v)),
                        Some(Some(Pending::Zero)) => Some(Bind::Zero),
                        // A local undefined symbol (e.g. the null section symbol) has value 0: the
                        // same as symbol 0.
                        Some(None) if module.symbols[r.symbol as usize].binding == 0 => None,
                        Some(None) => {
                            return Err(bad(format!(
                                "symbol {} ({:?}) is neither defined nor imported",
                                r.symbol, module.symbols[r.symbol as usize].name
                            )));
                        }
                        None => {
                            return Err(bad(format!(
                                "symbol index {} is past the symbol table",
                                r.symbol
                            )));
                        }
                    }
                };
                let seg = segs
                    .iter()
                    .position(|s| r.offset >= s.vaddr && r.offset + 4 <= s.vaddr + s.memsz);
                let Some(seg) = seg else {
                    return Err(bad("it patches memory outside every loaded segment".into()));
                };
                let mut push = |r_type: u32, target: Target, addend: i64, plt: bool| {
                    outs.push(Out {
                        table: if plt {
                            RelocationTable::Jmprel
                        } else {
                            RelocationTable::Rela
                        },
                        offset: r.offset,
                        r_type,
                        target,
                        addend,
                    })
                };
                let runtime = match (r.r_type, bind) {
                    (R_NONE, _) => false,
                    (R_RELATIVE, _) => {
                        push(R_RELATIVE, Target::None, r.addend, false);
                        true
                    }
                    (R_64, None) => {
                        constants.push((r.offset, r.addend as u64));
                        false
                    }
                    (R_DTPMOD64 | R_DTPOFF64 | R_TPOFF64, None) => {
                        push(r.r_type, Target::None, r.addend, false);
                        true
                    }
                    (R_DTPMOD64, Some(Bind::Local(_))) => {
                        push(R_DTPMOD64, Target::None, 0, false);
                        true
                    }
                    (R_DTPOFF64 | R_TPOFF64, Some(Bind::Local(v))) => {
                        push(r.r_type, Target::None, v as i64 + r.addend, false);
                        true
                    }
                    (R_DTPMOD64 | R_DTPOFF64 | R_TPOFF64, Some(Bind::Dyn(i))) => {
                        push(r.r_type, Target::Dyn(i), r.addend, false);
                        true
                    }
                    (R_DTPMOD64 | R_DTPOFF64 | R_TPOFF64, Some(Bind::Stub(_))) => {
                        return Err(bad(
                            "a thread-local variable imported from a library the PRX set does not implement".into(),
                        ));
                    }
                    (R_64 | R_GLOB_DAT | R_JUMP_SLOT, Some(Bind::Local(v))) => {
                        push(R_RELATIVE, Target::None, v as i64 + r.addend, false);
                        true
                    }
                    // S = 0: R_X86_64_64 stores the addend, the GOT forms store 0.
                    (R_64 | R_GLOB_DAT | R_JUMP_SLOT, Some(Bind::Zero)) => {
                        let addend = if r.r_type == R_64 { r.addend } else { 0 };
                        constants.push((r.offset, addend as u64));
                        false
                    }
                    (R_64 | R_GLOB_DAT | R_JUMP_SLOT, Some(Bind::Stub(n))) => {
                        push(R_RELATIVE, Target::Stub(n as u32), r.addend, false);
                        true
                    }
                    (R_JUMP_SLOT, Some(Bind::Dyn(i)))
                        if r.addend == 0 && r.table == RelocationTable::Jmprel =>
                    {
                        push(R_JUMP_SLOT, Target::Dyn(i), 0, true);
                        true
                    }
                    (R_GLOB_DAT, Some(Bind::Dyn(i))) if r.addend == 0 => {
                        push(R_GLOB_DAT, Target::Dyn(i), 0, false);
                        true
                    }
                    // An addend on GLOB_DAT/JUMP_SLOT is only honoured by R_X86_64_64.
                    (R_64 | R_GLOB_DAT | R_JUMP_SLOT, Some(Bind::Dyn(i))) => {
                        push(R_64, Target::Dyn(i), r.addend, false);
                        true
                    }
                    (R_PC32, Some(Bind::Dyn(i))) => {
                        push(R_PC32, Target::Dyn(i), r.addend, false);
                        true
                    }
                    (R_PC32, Some(Bind::Local(v))) => {
                        patches.push((r.offset, Target::None, v as i64 + r.addend));
                        false
                    }
                    (R_PC32, Some(Bind::Stub(n))) => {
                        patches.push((r.offset, Target::Stub(n as u32), r.addend));
                        false
                    }
                    (t, _) => {
                        return Err(bad(format!(
                            "relocation type {t} is not supported by the relinker"
                        )));
                    }
                };
                if runtime && segs[seg].flags & PF_W == 0 {
                    if segs[seg].flags & PF_X != 0 {
                        textrel = true;
                    } else {
                        // Read-only data patched at load time (PS4 SCE_RELRO): writable, then
                        // protected again by PT_GNU_RELRO.
                        relro_now[seg] = true;
                    }
                }
            }
            Ok(())
        })();
        let reached = descent.map(|d| d.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        (reached, bound)
    });
    bound?;
    for (s, _) in segs.iter_mut().zip(&relro_now).filter(|(_, r)| **r) {
        s.flags |= PF_W;
        s.relro = true;
    }
    if let Some(reached) = &reached {
        for i in &reached.hits {
            if let Some(name) = scan::syscall_name(i).filter(|_| want_syscalls) {
                trapped.push(SyscallSite {
                    address: i.ip(),
                    instruction: name.to_owned(),
                });
            } else if let Some(kind) = AmdOnlyKind::of(i) {
                let lowered = opts
                    .target_cpu
                    .is_some_and(|c| !c.has(kind))
                    .then(|| lower::Lowering::of(i));
                if lowered.is_some() {
                    to_lower.push(*i);
                }
                amd_only.push(AmdOnlySite {
                    address: i.ip() - shift,
                    length: i.len() as u8,
                    kind,
                    lowered,
                });
            }
        }
    }
    if !opts.allow_syscalls {
        let mut seen = Vec::new();
        for s in segs.iter().filter(|s| s.flags & PF_X != 0) {
            scan::sweep(&s.bytes, s.vaddr, &mut seen);
        }
        for s in segs.iter_mut().filter(|s| s.flags & PF_X != 0) {
            let end = s.vaddr + s.bytes.len() as u64;
            if trapped.iter().any(|t| (s.vaddr..end).contains(&t.address)) {
                scan::patch(s.bytes.to_mut(), s.vaddr, &trapped);
            }
        }
        unreachable = seen
            .into_iter()
            .filter(|x| !trapped.iter().any(|t| t.address == x.address))
            .collect();
        // Report addresses as in the input file.
        for site in trapped.iter_mut().chain(unreachable.iter_mut()) {
            site.address -= shift;
        }
    }

    // The PLT relocations must be a contiguous table of JUMP_SLOTs.
    let relative_count = outs.iter().filter(|o| o.r_type == R_RELATIVE).count();

    // ---- sizes of R and RW ----
    let relro_seg = segs.iter().find(|s| s.relro).map(|s| (s.vaddr, s.memsz));
    let mut nphdr = 1 /* PHDR */ + segs.len() + 3 /* R RW RX */ + 1 /* DYNAMIC */ + 1 /* GNU_STACK */;
    if kind == Kind::Executable {
        nphdr += 1; // INTERP
    }
    if tls.is_some() {
        nphdr += 1;
    }
    if eh.is_some() {
        nphdr += 1;
    }
    if relro_seg.is_some() || gnu_relro_orig.is_some() {
        nphdr += 1;
    }
    nphdr += params.len();
    let lower_traps = to_lower
        .iter()
        .filter(|i| lower::Lowering::of(i) == lower::Lowering::Trap)
        .count();
    if lower_traps > 0 {
        nphdr += 1; // PT_APS5_LOWER_TRAPS
    }
    if n_data > 0 {
        nphdr += 1; // the no-access page of unimplemented variables
    }

    let mut exit_slot_needed = exit_sym.is_some();
    let mut r_cursor = r_base + 64; // after the ELF header
    let place = |cursor: &mut u64, size: u64, align: u64| -> u64 {
        let at = align_up(*cursor, align);
        *cursor = at + size;
        at
    };
    let phdr_at = place(&mut r_cursor, nphdr as u64 * 56, 8);
    let interp_at = if kind == Kind::Executable {
        place(&mut r_cursor, INTERP.len() as u64 + 1, 1)
    } else {
        0
    };
    // dynstr gets the run path and needed names before its size is final.
    let runpath = opts.run_path(kind == Kind::Module);
    let runpath_off = dynstr.add(&runpath);
    let needed_offs: Vec<u32> = needed
        .iter()
        .map(|n| dynstr.add(&opts.needed_entry(n, kind == Kind::Module)))
        .collect();
    let dynsym_at = place(&mut r_cursor, dynsym.len() as u64 * 24, 8);
    let dynstr_at = place(&mut r_cursor, dynstr.bytes.len() as u64, 1);
    let name_refs: Vec<&[u8]> = dyn_names.iter().map(|s| s.as_bytes()).collect();
    let hash = sysv_hash_table(&name_refs);
    let hash_at = place(&mut r_cursor, hash.len() as u64, 8);
    let gnu_hash = gnu_hash_table(&name_refs, symoffset);
    let gnu_hash_at = place(&mut r_cursor, gnu_hash.len() as u64, 8);
    let n_rela = outs
        .iter()
        .filter(|o| o.table == RelocationTable::Rela)
        .count()
        + usize::from(exit_slot_needed)
        + usize::from(payload_sym.is_some())
        + start_slots_wanted.len();
    let n_jmprel = outs.len()
        + usize::from(exit_slot_needed)
        + usize::from(payload_sym.is_some())
        + start_slots_wanted.len()
        - n_rela;
    let rela_at = place(&mut r_cursor, n_rela as u64 * 24, 8);
    let jmprel_at = place(&mut r_cursor, n_jmprel as u64 * 24, 8);
    let msgs_at = place(&mut r_cursor, messages.len() as u64, 1);
    let r_end = r_cursor;

    if r_end > shift {
        return Err(RelinkError::Layout(format!(
            "internal: the tables need {r_end:#x} bytes but {shift:#x} were reserved"
        )));
    }
    let rw_base = align_up(orig_end, PAGE);
    let mut rw_cursor = rw_base;
    // Dynamic entries, counted generously (unused slots become DT_NULL).
    let ndyn = 32 + needed.len();
    let dynamic_at = place(&mut rw_cursor, ndyn as u64 * 16, 8);
    let exit_slot = if exit_slot_needed {
        Some(place(&mut rw_cursor, 8, 8))
    } else {
        None
    };
    let payload_slot = payload_sym.map(|sym| (place(&mut rw_cursor, 8, 8), sym));
    let start_slots: Vec<(u64, u32)> = start_slots_wanted
        .iter()
        .map(|&sym| (place(&mut rw_cursor, 8, 8), sym))
        .collect();
    // The module's "started" flag (see the wrapper above).
    let start_flag = start_wrapper.as_ref().map(|_| place(&mut rw_cursor, 8, 8));
    let rw_end = rw_cursor;

    let rx_base = align_up(rw_end, PAGE);
    // ---- code ----
    let mut code = Vec::new();
    if !stub_list.is_empty() || kind == Kind::Executable {
        code.extend(stubs::common_handler(rx_base)?);
        for (i, (off, len)) in msg_at.iter().enumerate() {
            let at = stub_base_of(rx_base, i as u64);
            code.extend(stubs::unimplemented_stub(at, msgs_at + off, *len, rx_base)?);
        }
    }
    let entry_at = rx_base + code.len() as u64;
    if kind == Kind::Executable {
        let arr = |a: &Option<aps5_elf::PointerArray>| a.as_ref().map(|p| (p.vaddr, p.size / 8));
        let plan = EntryPlan {
            entry: module.entry,
            preinit_array: arr(&module.preinit_array),
            init: module.init,
            init_array: arr(&module.init_array),
            exit_slot,
            payload_args_slot: payload_slot.map(|(slot, _)| slot),
            module_starts: start_slots.iter().map(|(slot, _)| *slot).collect(),
            stack_entry: segs
                .iter()
                .find(|s| {
                    s.flags & PF_X != 0
                        && (s.vaddr..s.vaddr + s.bytes.len() as u64).contains(&module.entry)
                })
                .is_some_and(|s| {
                    stubs::takes_block_from_rsp(&s.bytes[(module.entry - s.vaddr) as usize..])
                }),
        };
        code.extend(stubs::entry_stub(entry_at, &plan)?);
    }
    if let (Some((start, syms)), Some(flag)) = (&start_wrapper, start_flag) {
        let at = rx_base + code.len() as u64;
        let slots: Vec<u64> = start_slots.iter().map(|(slot, _)| *slot).collect();
        code.extend(stubs::module_start_wrapper(at, flag, &slots, *start)?);
        for &i in syms {
            dynsym[i as usize].value = at;
            dynsym[i as usize].size = 0;
        }
    }
    // AMD-only instructions the target CPU lacks: routines and stubs; at each site its
    // in-place form, a jump or the trap (then the trap table, found by libkernel).
    let mut lower_trap_table = None;
    if !to_lower.is_empty() {
        let with_stub: Vec<iced_x86::Instruction> = to_lower
            .iter()
            .filter(|i| lower::Lowering::of(i) != lower::Lowering::InPlace)
            .copied()
            .collect();
        let mut stub_of = HashMap::new();
        if !with_stub.is_empty() {
            code.resize(code.len().next_multiple_of(64), 0xCC);
            let base = rx_base + code.len() as u64;
            let l = lower::build(base, &with_stub)?;
            code.extend(l.code);
            stub_of.extend(with_stub.iter().map(|i| i.ip()).zip(l.stubs));
        }
        let traps: Vec<(u64, u64)> = with_stub
            .iter()
            .filter(|i| lower::Lowering::of(i) == lower::Lowering::Trap)
            .map(|i| (i.ip(), stub_of[&i.ip()]))
            .collect();
        if !traps.is_empty() {
            code.resize(code.len().next_multiple_of(16), 0xCC);
            let at = rx_base + code.len() as u64;
            let table = lower::trap_table(&traps);
            lower_trap_table = Some((at, table.len() as u64));
            code.extend(table);
        }
        for ins in &to_lower {
            let patch = lower::site_bytes(ins, stub_of.get(&ins.ip()).copied())?;
            let seg = segs
                .iter_mut()
                .find(|s| (s.vaddr..s.vaddr + s.bytes.len() as u64).contains(&ins.ip()))
                .ok_or_else(|| {
                    RelinkError::Layout(format!("{:#x}: site outside the segments", ins.ip()))
                })?;
            let at = (ins.ip() - seg.vaddr) as usize;
            seg.bytes.to_mut()[at..at + patch.len()].copy_from_slice(&patch);
        }
    }
    let rx_end = rx_base + code.len() as u64;
    let trap_base = align_up(rx_end, PAGE);
    let trap_end = trap_base + align_up(n_data * 16, PAGE);
    let stub_addr = |n: usize| -> u64 {
        if stub_is_data[n] {
            trap_base + slot_of[n] * 16
        } else {
            stub_base_of(rx_base, slot_of[n])
        }
    };

    // ---- relocation tables, now that stub addresses are known ----
    let target_value = |t: &Target| -> (u32, i64) {
        match t {
            Target::None => (0, 0),
            Target::Dyn(i) => (*i, 0),
            Target::Stub(n) => (0, stub_addr(*n as usize) as i64),
        }
    };
    // RELATIVE first (DT_RELACOUNT lets the loader take them in one fast loop).
    let order = outs
        .iter()
        .filter(|o| o.table == RelocationTable::Rela && o.r_type == R_RELATIVE)
        .chain(
            outs.iter()
                .filter(|o| o.table == RelocationTable::Rela && o.r_type != R_RELATIVE),
        )
        .chain(outs.iter().filter(|o| o.table == RelocationTable::Jmprel));
    rela.reserve(n_rela * 24);
    jmprel.reserve(n_jmprel * 24);
    for o in order {
        let (sym, base) = target_value(&o.target);
        let rel = Rela {
            offset: o.offset,
            r_type: o.r_type,
            sym,
            addend: base + o.addend,
        };
        match o.table {
            RelocationTable::Rela => rel.write(&mut rela),
            RelocationTable::Jmprel => rel.write(&mut jmprel),
        }
    }
    if let (Some(slot), Some(sym)) = (exit_slot, exit_sym) {
        Rela {
            offset: slot,
            r_type: R_GLOB_DAT,
            sym,
            addend: 0,
        }
        .write(&mut rela);
        exit_slot_needed = false;
    }
    let _ = exit_slot_needed;
    if let Some((slot, sym)) = payload_slot {
        Rela {
            offset: slot,
            r_type: R_GLOB_DAT,
            sym,
            addend: 0,
        }
        .write(&mut rela);
    }
    for &(slot, sym) in &start_slots {
        Rela {
            offset: slot,
            r_type: R_GLOB_DAT,
            sym,
            addend: 0,
        }
        .write(&mut rela);
    }
    for (p, t, a) in &patches {
        let s = match t {
            Target::Stub(n) => stub_addr(*n as usize) as i64,
            _ => 0,
        };
        let v = s + a - *p as i64;
        let v32 = i32::try_from(v).map_err(|_| RelinkError::Relocation {
            offset: *p,
            type_name: "R_X86_64_PC32",
            why: format!("the displacement {v:#x} does not fit in 32 bits"),
        })?;
        let seg = segs
            .iter_mut()
            .find(|s| *p >= s.vaddr && *p + 4 <= s.vaddr + s.bytes.len() as u64)
            .ok_or_else(|| RelinkError::Relocation {
                offset: *p,
                type_name: "R_X86_64_PC32",
                why: "it patches bytes outside the file data of its segment".into(),
            })?;
        let at = (*p - seg.vaddr) as usize;
        seg.bytes.to_mut()[at..at + 4].copy_from_slice(&v32.to_le_bytes());
    }

    for &(p, v) in &constants {
        let seg = segs
            .iter_mut()
            .find(|s| p >= s.vaddr && p + 8 <= s.vaddr + s.memsz)
            .ok_or_else(|| RelinkError::Relocation {
                offset: p,
                type_name: "R_X86_64_64",
                why: "it writes 8 bytes past the end of its segment".into(),
            })?;
        let at = (p - seg.vaddr) as usize;
        if at + 8 <= seg.bytes.len() {
            seg.bytes.to_mut()[at..at + 8].copy_from_slice(&v.to_le_bytes());
        } else if v != 0 || at < seg.bytes.len() {
            // Zero-filled memory already holds 0; anything else would need file data there.
            return Err(RelinkError::Relocation {
                offset: p,
                type_name: "R_X86_64_64",
                why: format!("it stores the constant {v:#x} in zero-filled (bss) memory"),
            });
        }
    }

    // ---- dynamic table ----
    let mut dynamic: Vec<(u64, u64)> = Vec::new();
    for off in &needed_offs {
        dynamic.push((1, u64::from(*off))); // DT_NEEDED
    }
    dynamic.push((29, u64::from(runpath_off))); // DT_RUNPATH
    dynamic.push((4, hash_at)); // DT_HASH
    dynamic.push((0x6fff_fef5, gnu_hash_at)); // DT_GNU_HASH
    dynamic.push((5, dynstr_at)); // DT_STRTAB
    dynamic.push((6, dynsym_at)); // DT_SYMTAB
    dynamic.push((10, dynstr.bytes.len() as u64)); // DT_STRSZ
    dynamic.push((11, 24)); // DT_SYMENT
    if !rela.is_empty() {
        dynamic.push((7, rela_at)); // DT_RELA
        dynamic.push((8, rela.len() as u64)); // DT_RELASZ
        dynamic.push((9, 24)); // DT_RELAENT
        dynamic.push((0x6fff_fff9, relative_count as u64)); // DT_RELACOUNT
    }
    if !jmprel.is_empty() {
        dynamic.push((23, jmprel_at)); // DT_JMPREL
        dynamic.push((2, jmprel.len() as u64)); // DT_PLTRELSZ
        dynamic.push((20, 7)); // DT_PLTREL = DT_RELA
    }
    if let Some(g) = module.pltgot {
        dynamic.push((3, g)); // DT_PLTGOT
    }
    // The executable's constructors are run by the entry stub (ld.so never runs a main
    // program's); a module's by ld.so.
    if kind == Kind::Module {
        if let Some(i) = module.init {
            dynamic.push((12, i)); // DT_INIT
        }
        if let Some(a) = &module.init_array {
            dynamic.push((25, a.vaddr));
            dynamic.push((27, a.size));
        }
    }
    if let Some(f) = module.fini {
        dynamic.push((13, f)); // DT_FINI
    }
    if let Some(a) = &module.fini_array {
        dynamic.push((26, a.vaddr));
        dynamic.push((28, a.size));
    }
    let mut flags = 0x8; // DF_BIND_NOW
    if textrel {
        flags |= 0x4; // DF_TEXTREL
        dynamic.push((22, 0)); // DT_TEXTREL
    }
    dynamic.push((30, flags)); // DT_FLAGS
    let mut flags1 = 0x1; // DF_1_NOW
    if kind == Kind::Executable {
        flags1 |= 0x0800_0000; // DF_1_PIE
        dynamic.push((21, 0)); // DT_DEBUG
    }
    dynamic.push((0x6fff_fffb, flags1)); // DT_FLAGS_1
    if dynamic.len() >= ndyn {
        return Err(RelinkError::Layout(format!(
            "{} dynamic entries do not fit the {ndyn} reserved",
            dynamic.len()
        )));
    }

    // ---- file layout ----
    let r_off = 0u64;
    let mut cursor: u64 = r_end;
    let mut orig_off = Vec::with_capacity(segs.len());
    for s in &segs {
        let at = congruent(cursor, s.vaddr, s.align.max(PAGE));
        orig_off.push(at);
        cursor = at + s.bytes.len() as u64;
    }
    let rw_off = congruent(cursor, rw_base, PAGE);
    let rx_off = congruent(rw_off + (rw_end - rw_base), rx_base, PAGE);
    let file_of = |va: u64| -> u64 {
        if va >= rx_base {
            rx_off + (va - rx_base)
        } else if va >= rw_base {
            rw_off + (va - rw_base)
        } else if va < r_end {
            r_off + (va - r_base)
        } else {
            segs.iter()
                .zip(&orig_off)
                .find(|(s, _)| va >= s.vaddr && va < s.vaddr + s.memsz.max(1))
                .map_or(0, |(s, o)| o + (va - s.vaddr).min(s.bytes.len() as u64))
        }
    };

    // ---- program headers ----
    let mut ph: Vec<Phdr> = Vec::new();
    ph.push(Phdr {
        p_type: PT_PHDR,
        flags: PF_R,
        offset: file_of(phdr_at),
        vaddr: phdr_at,
        filesz: nphdr as u64 * 56,
        memsz: nphdr as u64 * 56,
        align: 8,
    });
    if kind == Kind::Executable {
        ph.push(Phdr {
            p_type: PT_INTERP,
            flags: PF_R,
            offset: file_of(interp_at),
            vaddr: interp_at,
            filesz: INTERP.len() as u64 + 1,
            memsz: INTERP.len() as u64 + 1,
            align: 1,
        });
    }
    for (s, off) in segs.iter().zip(&orig_off) {
        ph.push(Phdr {
            p_type: PT_LOAD,
            flags: s.flags,
            offset: *off,
            vaddr: s.vaddr,
            filesz: s.bytes.len() as u64,
            memsz: s.memsz,
            align: s.align.max(PAGE),
        });
    }
    // R first: program headers must list PT_LOAD in ascending address order.
    ph.insert(
        if kind == Kind::Executable { 2 } else { 1 },
        Phdr {
            p_type: PT_LOAD,
            flags: PF_R,
            offset: r_off,
            vaddr: r_base,
            filesz: r_end - r_base,
            memsz: r_end - r_base,
            align: PAGE,
        },
    );
    for (base, end, off, flags) in [
        (rw_base, rw_end, rw_off, PF_R | PF_W),
        (rx_base, rx_end, rx_off, PF_R | PF_X),
    ] {
        ph.push(Phdr {
            p_type: PT_LOAD,
            flags,
            offset: off,
            vaddr: base,
            filesz: end - base,
            memsz: end - base,
            align: PAGE,
        });
    }
    if n_data > 0 {
        // No access at all: the loader maps it PROT_NONE.
        ph.push(Phdr {
            p_type: PT_LOAD,
            flags: 0,
            offset: rx_off + (trap_base - rx_base),
            vaddr: trap_base,
            filesz: 0,
            memsz: trap_end - trap_base,
            align: PAGE,
        });
    }
    ph.push(Phdr {
        p_type: PT_DYNAMIC,
        flags: PF_R | PF_W,
        offset: file_of(dynamic_at),
        vaddr: dynamic_at,
        filesz: ndyn as u64 * 16,
        memsz: ndyn as u64 * 16,
        align: 8,
    });
    if let Some(t) = tls {
        ph.push(Phdr {
            p_type: PT_TLS,
            flags: PF_R,
            offset: file_of(t.vaddr),
            vaddr: t.vaddr,
            filesz: t.filesz,
            memsz: t.memsz,
            align: t.align.max(1),
        });
    }
    if let Some((va, sz)) = relro_seg {
        ph.push(Phdr {
            p_type: PT_GNU_RELRO,
            flags: PF_R,
            offset: file_of(va),
            vaddr: va,
            filesz: sz,
            memsz: sz,
            align: 1,
        });
    } else if let Some(g) = &gnu_relro_orig {
        ph.push(Phdr {
            p_type: PT_GNU_RELRO,
            flags: PF_R,
            offset: file_of(g.vaddr),
            vaddr: g.vaddr,
            filesz: g.memsz,
            memsz: g.memsz,
            align: 1,
        });
    }
    if let Some(e) = &eh {
        ph.push(Phdr {
            p_type: PT_GNU_EH_FRAME,
            flags: PF_R,
            offset: file_of(e.vaddr),
            vaddr: e.vaddr,
            filesz: e.filesz,
            memsz: e.memsz,
            align: e.align.max(1),
        });
    }
    ph.push(Phdr {
        p_type: PT_GNU_STACK,
        flags: PF_R | PF_W,
        align: 16,
        ..Phdr::default()
    });
    // Kept for libkernel (sceKernelGetProcParam); the loader ignores OS-specific types.
    for p in &params {
        ph.push(Phdr {
            p_type: p.p_type,
            flags: PF_R,
            offset: file_of(p.vaddr),
            vaddr: p.vaddr,
            filesz: p.filesz,
            memsz: p.memsz,
            align: p.align.max(1),
        });
    }
    if let Some((at, size)) = lower_trap_table {
        ph.push(Phdr {
            p_type: lower::PT_APS5_LOWER_TRAPS,
            flags: PF_R,
            offset: file_of(at),
            vaddr: at,
            filesz: size,
            memsz: size,
            align: 16,
        });
    }
    debug_assert_eq!(ph.len(), nphdr);

    // ---- R, RW, RX contents ----
    // R up to the relocation tables; those and the messages are copied straight into the
    // output below.
    let mut r = vec![0u8; (rela_at - r_base) as usize];
    let put = |buf: &mut Vec<u8>, base: u64, at: u64, bytes: &[u8]| {
        let o = (at - base) as usize;
        buf[o..o + bytes.len()].copy_from_slice(bytes);
    };
    let mut phbytes = Vec::new();
    for p in &ph {
        p.write(&mut phbytes);
    }
    put(&mut r, r_base, phdr_at, &phbytes);
    if kind == Kind::Executable {
        put(&mut r, r_base, interp_at, INTERP.as_bytes());
    }
    let mut symbytes = Vec::new();
    for s in &dynsym {
        s.write(&mut symbytes);
    }
    put(&mut r, r_base, dynsym_at, &symbytes);
    put(&mut r, r_base, dynstr_at, &dynstr.bytes);
    put(&mut r, r_base, hash_at, &hash);
    put(&mut r, r_base, gnu_hash_at, &gnu_hash);

    let mut rw = vec![0u8; (rw_end - rw_base) as usize];
    let mut dynbytes = Vec::new();
    for (t, v) in &dynamic {
        dynbytes.extend_from_slice(&t.to_le_bytes());
        dynbytes.extend_from_slice(&v.to_le_bytes());
    }
    put(&mut rw, rw_base, dynamic_at, &dynbytes);

    // ---- sections (for tools; the loader uses only program headers) ----
    let mut shstr = StrTab::new();
    let mut sh: Vec<Shdr> = vec![Shdr::default()];
    for (i, (s, off)) in segs.iter().zip(&orig_off).enumerate() {
        let name = if s.flags & PF_X != 0 {
            format!(".text.seg{i}")
        } else if s.flags & PF_W != 0 {
            format!(".data.seg{i}")
        } else {
            format!(".rodata.seg{i}")
        };
        let mut f = 0x2; // SHF_ALLOC
        if s.flags & PF_W != 0 {
            f |= 0x1;
        }
        if s.flags & PF_X != 0 {
            f |= 0x4;
        }
        sh.push(Shdr {
            name: shstr.add(&name),
            sh_type: if s.bytes.is_empty() { 8 } else { 1 }, // NOBITS / PROGBITS
            flags: f,
            addr: s.vaddr,
            offset: *off,
            size: s.memsz,
            align: 16,
            ..Shdr::default()
        });
    }
    let sec = |shstr: &mut StrTab,
               sh: &mut Vec<Shdr>,
               name: &str,
               t: u32,
               f: u64,
               at: u64,
               size: u64,
               link: u32,
               info: u32,
               entsize: u64|
     -> u32 {
        sh.push(Shdr {
            name: shstr.add(name),
            sh_type: t,
            flags: f,
            addr: at,
            offset: file_of(at),
            size,
            link,
            info,
            align: 8,
            entsize,
        });
        (sh.len() - 1) as u32
    };
    if kind == Kind::Executable {
        sec(
            &mut shstr,
            &mut sh,
            ".interp",
            1,
            2,
            interp_at,
            INTERP.len() as u64 + 1,
            0,
            0,
            0,
        );
    }
    let dynstr_idx = (sh.len() + 1) as u32;
    let dynsym_idx = sec(
        &mut shstr,
        &mut sh,
        ".dynsym",
        11,
        2,
        dynsym_at,
        symbytes.len() as u64,
        dynstr_idx,
        1,
        24,
    );
    sec(
        &mut shstr,
        &mut sh,
        ".dynstr",
        3,
        2,
        dynstr_at,
        dynstr.bytes.len() as u64,
        0,
        0,
        0,
    );
    sec(
        &mut shstr,
        &mut sh,
        ".hash",
        5,
        2,
        hash_at,
        hash.len() as u64,
        dynsym_idx,
        0,
        4,
    );
    sec(
        &mut shstr,
        &mut sh,
        ".gnu.hash",
        0x6fff_fff6, // SHT_GNU_HASH
        2,
        gnu_hash_at,
        gnu_hash.len() as u64,
        dynsym_idx,
        0,
        8,
    );
    sec(
        &mut shstr,
        &mut sh,
        ".rela.dyn",
        4,
        2,
        rela_at,
        rela.len() as u64,
        dynsym_idx,
        0,
        24,
    );
    sec(
        &mut shstr,
        &mut sh,
        ".rela.plt",
        4,
        0x42,
        jmprel_at,
        jmprel.len() as u64,
        dynsym_idx,
        0,
        24,
    );
    sec(
        &mut shstr,
        &mut sh,
        ".rodata.aps5",
        1,
        2,
        msgs_at,
        messages.len() as u64,
        0,
        0,
        0,
    );
    sec(
        &mut shstr,
        &mut sh,
        ".dynamic",
        6,
        3,
        dynamic_at,
        ndyn as u64 * 16,
        dynstr_idx,
        0,
        16,
    );
    if let Some(slot) = exit_slot {
        sec(&mut shstr, &mut sh, ".got.aps5", 1, 3, slot, 8, 0, 0, 8);
    }
    sec(
        &mut shstr,
        &mut sh,
        ".text.aps5",
        1,
        6,
        rx_base,
        code.len() as u64,
        0,
        0,
        0,
    );
    if n_data > 0 {
        sh.push(Shdr {
            name: shstr.add(".aps5.unimplemented_data"),
            sh_type: 8, // NOBITS
            flags: 2,
            addr: trap_base,
            offset: rx_off + (trap_base - rx_base),
            size: trap_end - trap_base,
            align: 16,
            ..Shdr::default()
        });
    }
    let shstrtab_name = shstr.add(".shstrtab");

    // ---- write ----
    let data_end = rx_off + code.len() as u64;
    let shstr_off = data_end;
    let shoff = align_up(shstr_off + shstr.bytes.len() as u64, 8);
    sh.push(Shdr {
        name: shstrtab_name,
        sh_type: 3,
        offset: shstr_off,
        size: shstr.bytes.len() as u64,
        align: 1,
        ..Shdr::default()
    });
    let total = shoff + sh.len() as u64 * 64;
    // ELF header.
    let mut h = Vec::with_capacity(64);
    h.extend_from_slice(b"\x7fELF");
    h.extend_from_slice(&[2, 1, 1, 0, 0]); // ELFCLASS64, LSB, version 1, SysV, ABI 0
    h.extend_from_slice(&[0; 7]);
    h.extend_from_slice(&3u16.to_le_bytes()); // ET_DYN
    h.extend_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    h.extend_from_slice(&1u32.to_le_bytes());
    let e_entry = if kind == Kind::Executable {
        entry_at
    } else {
        0
    };
    h.extend_from_slice(&e_entry.to_le_bytes());
    h.extend_from_slice(&file_of(phdr_at).to_le_bytes()); // e_phoff: the copy inside R
    h.extend_from_slice(&shoff.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    h.extend_from_slice(&64u16.to_le_bytes());
    h.extend_from_slice(&56u16.to_le_bytes());
    h.extend_from_slice(&(nphdr as u16).to_le_bytes());
    h.extend_from_slice(&64u16.to_le_bytes());
    h.extend_from_slice(&(sh.len() as u16).to_le_bytes());
    h.extend_from_slice(&((sh.len() - 1) as u16).to_le_bytes());
    r[..64].copy_from_slice(&h);
    let mut shbytes = Vec::new();
    for s in &sh {
        s.write(&mut shbytes);
    }
    // The file as pieces: the original segments stay ranges of the input where the input holds
    // their bytes (nothing copies them into an output buffer), the rest is what was made here.
    let made = |at: u64, bytes: Vec<u8>| Piece {
        at,
        data: PieceData::Bytes(std::sync::Arc::new(bytes)),
    };
    // Where `part` (a slice of the image) lies in the input file: the image is the input
    // itself, or an fSELF's data entries put together.
    let image_start = image.as_ptr() as usize;
    let input_range = |part: &[u8]| -> Option<u64> {
        let off = (part.as_ptr() as usize).checked_sub(image_start)? as u64;
        let from = aps5_elf::fself_file_offset(bytes, off, part.len() as u64)?;
        // The input must hold these very bytes (what the image was made of).
        let held = bytes.get(from as usize..from as usize + part.len())?;
        (std::ptr::eq(held, part) || held == part).then_some(from)
    };
    let mut pieces = vec![
        made(r_off, r),
        made(file_of(rela_at), rela),
        made(file_of(jmprel_at), jmprel),
        made(file_of(msgs_at), messages),
        made(rw_off, rw),
        made(rx_off, code),
        made(shstr_off, shstr.bytes),
        made(shoff, shbytes),
    ];
    for (s, &off) in segs.into_iter().zip(&orig_off) {
        match (&s.bytes, input_range(s.original)) {
            (Cow::Borrowed(b), Some(from)) => pieces.push(Piece {
                at: off,
                data: PieceData::Input {
                    from,
                    len: b.len() as u64,
                },
            }),
            // Patched at link time: only the pages that changed are new bytes.
            (Cow::Owned(b), Some(from)) => {
                pieces.extend(image::diff_pieces(off, b, s.original, from));
            }
            (_, None) => pieces.push(made(off, s.bytes.into_owned())),
        }
    }
    let out = image::assemble(total, pieces);
    debug_assert_eq!(out.check(bytes.len() as u64), Ok(()));

    let mut warnings = Vec::new();
    if let Some(t) = tls
        && kind == Kind::Executable
        && t.align > 1
        && t.vaddr % t.align != 0
    {
        // glibc then places the block at a different static offset than FreeBSD's rtld,
        // and local-exec code (fixed %fs offsets) would read the wrong bytes.
        warnings.push(format!(
            "PT_TLS at {:#x} is not aligned to its {:#x} alignment: local-exec TLS offsets may differ from the console's",
            t.vaddr - shift,
            t.align
        ));
    }
    if !trapped.is_empty() {
        warnings.push(format!(
            "{} raw system call instruction(s) in reachable code rewritten to the libkernel trap (UD0): {}; FreeBSD system calls libkernel does not implement fail with ENOSYS",
            trapped.len(),
            scan::count_by_kind(&trapped)
        ));
    }
    if !unreachable.is_empty() {
        warnings.push(format!(
            "{} byte pattern(s) a linear decode reads as system calls are not reachable code (data in the text or the middle of instructions) and were left unchanged: {}",
            unreachable.len(),
            scan::describe(&unreachable)
        ));
    }
    if !amd_only.is_empty() {
        warnings.push(format!(
            "{} instruction(s) only AMD CPUs have in reachable code ({}): they raise SIGILL on Intel CPUs: {}",
            amd_only.len(),
            amd::count_by_kind(&amd_only),
            amd::describe(&amd_only)
        ));
    }
    let unimplemented = coverage
        .values()
        .filter(|r| !r.implemented && !r.weak)
        .count();
    if unimplemented > 0 {
        warnings.push(format!(
            "{unimplemented} import(s) are not implemented by the PRX set and abort when called"
        ));
    }

    Ok(RelinkedImage {
        image: out,
        coverage: coverage.into_values().collect(),
        libs_needed: needed,
        warnings,
        amd_only,
    })
}

/// The loadable segments (PT_LOAD and PS4's PT_SCE_RELRO), sorted, checked for overlap.
fn original_segments<'a>(image: &'a [u8], module: &Module) -> Result<Vec<Orig<'a>>, RelinkError> {
    let mut segs = Vec::new();
    for s in &module.segments {
        if !(s.p_type == PT_LOAD || s.p_type == PT_SCE_RELRO) || s.memsz == 0 {
            continue;
        }
        if s.filesz > s.memsz {
            return Err(RelinkError::Layout(format!(
                "segment {} at {:#x}: file size {:#x} is larger than its memory size {:#x}",
                s.index, s.vaddr, s.filesz, s.memsz
            )));
        }
        let end = s.offset.checked_add(s.filesz).filter(|e| *e <= image.len() as u64).ok_or_else(|| {
            RelinkError::Layout(format!(
                "segment {} (file offset {:#x}, {:#x} bytes) runs past the end of the {:#x}-byte image",
                s.index,
                s.offset,
                s.filesz,
                image.len()
            ))
        })?;
        segs.push(Orig {
            vaddr: s.vaddr,
            memsz: s.memsz,
            bytes: Cow::Borrowed(&image[s.offset as usize..end as usize]),
            original: &image[s.offset as usize..end as usize],
            flags: s.flags & (PF_R | PF_W | PF_X),
            align: s.align.clamp(PAGE, 0x20_0000),
            relro: false,
        });
    }
    if segs.is_empty() {
        return Err(RelinkError::Layout("no loadable segment".into()));
    }
    segs.sort_by_key(|s| s.vaddr);
    for w in segs.windows(2) {
        // Pages are shared only if the loader can give both segments the same rights.
        if align_up(w[0].vaddr + w[0].memsz, PAGE) > w[1].vaddr - w[1].vaddr % PAGE {
            return Err(RelinkError::Layout(format!(
                "segments at {:#x} (size {:#x}) and {:#x} share a 4 KiB page; Linux cannot map them separately",
                w[0].vaddr, w[0].memsz, w[1].vaddr
            )));
        }
    }
    Ok(segs)
}

/// Bytes reserved in front of the image for the ELF header, program headers and the
/// dynamic tables: an upper bound of what [`relink`] writes there, rounded up to a
/// multiple of every segment alignment (so the shifted image keeps its congruences).
fn header_budget(module: &Module, prx: &PrxSet, names: &mut Names, run_path_len: u64) -> u64 {
    let nsym = module.symbols.len() as u64 + 8 + prx.libraries.len() as u64;
    // An import bound to a host system library is named by its plain name, which may be
    // longer than `NID#L#M`.
    let strings: u64 = module
        .symbols
        .iter()
        .map(|s| {
            let plain = match (&s.library, &s.nid) {
                (Some(l), Some(n)) if s.is_import() => prx
                    .find(l, n)
                    .and_then(|p| p.host_names.as_ref()?.get(n))
                    .map_or(0, String::len),
                // Plain-name imports bound to a host system library keep their name.
                _ => s.name.len(),
            };
            s.name.len().max(11).max(plain) as u64 + 1
        })
        .sum::<u64>()
        + prx
            .libraries
            .iter()
            .map(|l| 2 * l.file_name.len() as u64 + 48)
            .sum::<u64>()
        + 256;
    let needed_max = module.needed.iter().map(String::len).max().unwrap_or(0);
    let msgs: u64 = module
        .imports()
        .map(|s| {
            let known = s
                .nid
                .as_deref()
                .and_then(|n| names.get(n).map(str::len))
                .unwrap_or(11)
                .max(s.name.len());
            // A plain name's library is found later (see plain_library).
            let library = s.library.as_ref().map_or(64, |l| l.len()).max(needed_max);
            40 + library as u64 + known as u64
        })
        .sum();
    let total = 64
        + 56 * (module.segments.len() as u64 + 16)
        + 64
        + 24 * nsym
        + strings
        + 16
        + 4 * (nsym + nsym / 2 + 2)
        + 16
        + 8 * (nsym * 12 / 64 + 1).next_power_of_two()
        + 4 * (nsym + nsym / 2 + 1)
        + 8
        + 24 * (module.relocations.len() as u64 + 8 + prx.libraries.len() as u64)
        + msgs
        // The default run paths fit the slack above.
        + run_path_len.saturating_sub(64)
        + 64;
    let align = module
        .segments
        .iter()
        .filter(|s| s.p_type == PT_LOAD || s.p_type == PT_SCE_RELRO)
        .map(|s| s.align.clamp(PAGE, 0x20_0000))
        .max()
        .unwrap_or(PAGE)
        .max(0x4000);
    align_up(total, align)
}

/// `r` with its address moved up by `d` (and a RELATIVE addend, an image address; absolute
/// `R_X86_64_64` addends stay).
fn shift_relocation(r: &aps5_elf::Relocation, d: u64) -> aps5_elf::Relocation {
    let mut r = *r;
    r.offset += d;
    if r.r_type == R_RELATIVE {
        r.addend += d as i64;
    }
    r
}

/// A copy of `m` with every image address moved up by `d` (TLS symbol values are offsets
/// in the TLS block and stay), without its relocations (see [`shift_relocation`]).
fn shift_module(m: &Module, d: u64) -> Module {
    let mut m = Module {
        format: m.format,
        elf_type: m.elf_type,
        entry: m.entry,
        segments: m.segments.clone(),
        dynamic_layout: m.dynamic_layout,
        library_tag_order: m.library_tag_order,
        dynamic: m.dynamic.clone(),
        module_info: m.module_info.clone(),
        needed_modules: m.needed_modules.clone(),
        export_libraries: m.export_libraries.clone(),
        import_libraries: m.import_libraries.clone(),
        needed: m.needed.clone(),
        symbols: m.symbols.clone(),
        relocations: Vec::new(),
        tls: m.tls,
        init: m.init,
        fini: m.fini,
        preinit_array: m.preinit_array.clone(),
        init_array: m.init_array.clone(),
        fini_array: m.fini_array.clone(),
        pltgot: m.pltgot,
        process_param: m.process_param.clone(),
        module_param: m.module_param.clone(),
        fingerprint: m.fingerprint.clone(),
        original_filename: m.original_filename.clone(),
        interpreter: m.interpreter.clone(),
        warnings: m.warnings.clone(),
    };
    for s in &mut m.segments {
        if s.vaddr != 0 || s.memsz != 0 {
            s.vaddr += d;
            s.paddr += d;
        }
    }
    for s in &mut m.symbols {
        if s.shndx != 0 && s.kind != 6 && s.shndx != 0xFFF1 {
            s.value += d;
        }
    }
    m.entry += d;
    for v in [&mut m.init, &mut m.fini, &mut m.pltgot]
        .into_iter()
        .flatten()
    {
        *v += d;
    }
    for a in [&mut m.preinit_array, &mut m.init_array, &mut m.fini_array]
        .into_iter()
        .flatten()
    {
        a.vaddr += d;
    }
    if let Some(t) = &mut m.tls {
        t.vaddr += d;
    }
    m
}

/// The library a plain-name import is reported under: the one of the set serving its
/// NID; else the one the NID database names; else the DT_NEEDED file (stem) listed last,
/// as the SDKs list the system libraries (libkernel, the C library) first.
fn plain_library(module: &Module, prx: &PrxSet, name: &str, nid: &str) -> String {
    if let Some(l) = prx.find_nid(nid) {
        return l.library.clone();
    }
    if let Some(l) = aps5_nid::lookup(nid)
        .iter()
        .find(|k| k.name == name)
        .and_then(|k| k.library)
    {
        return l.to_owned();
    }
    module
        .needed
        .last()
        .map(|n| n.split('.').next().unwrap_or(n).to_owned())
        .unwrap_or_default()
}

/// Where reachable-code decoding starts (addresses in the shifted image): the entry
/// point, init/fini functions and arrays and function symbols for sure; untyped symbols
/// and every pointer a relocation stores (function-pointer tables, vtables, callbacks)
/// as candidates.
fn code_roots(
    module: &Module,
    relocations: &[aps5_elf::Relocation],
    shift: u64,
    kind: Kind,
) -> Roots {
    let mut roots = Roots::default();
    match kind {
        Kind::Executable => roots.certain.push(module.entry),
        Kind::Module => roots.candidates.push(module.entry),
    }
    roots.certain.extend(module.init.iter().chain(&module.fini));
    for a in [
        &module.preinit_array,
        &module.init_array,
        &module.fini_array,
    ]
    .into_iter()
    .flatten()
    {
        roots
            .certain
            .extend(a.entries.iter().filter(|&&e| e != 0).map(|e| e + shift));
    }
    for s in &module.symbols {
        if s.is_import() || s.shndx == 0 || s.shndx == 0xFFF1 {
            continue;
        }
        match s.kind {
            2 | 10 => roots.certain.push(s.value), // STT_FUNC, STT_GNU_IFUNC
            0 => roots.candidates.push(s.value),   // STT_NOTYPE
            _ => {}
        }
    }
    for r in relocations {
        let target = match r.r_type {
            R_RELATIVE => Some((r.addend as u64).wrapping_add(shift)),
            R_64 | R_GLOB_DAT | R_JUMP_SLOT => module
                .symbols
                .get(r.symbol as usize)
                .filter(|s| r.symbol != 0 && !s.is_import() && s.shndx != 0 && s.shndx != 0xFFF1)
                .map(|s| s.value.wrapping_add(r.addend as u64)),
            _ => None,
        };
        roots.candidates.extend(target);
    }
    roots
}

/// Readable names of NIDs, looked up once each.
#[derive(Default)]
struct Names(HashMap<String, Option<&'static str>>);

impl Names {
    fn get(&mut self, nid: &str) -> Option<&'static str> {
        if let Some(v) = self.0.get(nid) {
            return *v;
        }
        let v = aps5_nid::lookup(nid).first().map(|k| k.name);
        self.0.insert(nid.to_owned(), v);
        v
    }
}
