//! Relink throughput on a large synthetic executable, against a memcpy of the same bytes
//! (the physical limit measured in the same run: into a warm buffer, and into a fresh buffer
//! of the output's size, which includes the page faults any new output pays). Prints one
//! JSON object.
//!
//! The input is the OpenOrbis hello_world eboot from shared/corpus, grown to a game-sized
//! executable: a 48 MiB code segment (its real code repeated, so the syscall scan decodes
//! real instructions), a 16 MiB data segment, 20,000 imports (half implemented by the PRX
//! set, half stubbed) and 1,000,000 relocations (RELATIVE, GLOB_DAT, JUMP_SLOT, R_64).
//! Run: `cargo run --release -p aps5-relink --example bench_relink`.

use std::time::Instant;

use aps5_elf::{Relocation, RelocationTable, Segment, Symbol};

fn shared() -> std::path::PathBuf {
    let mut p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    loop {
        if p.join("shared/corpus").is_dir() {
            return p.join("shared");
        }
        if !p.pop() {
            eprintln!("bench: no shared/corpus folder above the crate");
            std::process::exit(2);
        }
    }
}

fn main() {
    let path = shared().join("corpus/homebrew/openorbis-samples/hello_world/pkg/eboot.bin");
    let bytes = std::fs::read(&path).expect("hello_world eboot");
    let mut m = aps5_elf::parse(&bytes).expect("parse");
    let mut image = aps5_elf::unwrap_fself(&bytes).expect("unwrap").into_owned();

    let text = m
        .segments
        .iter()
        .find(|s| s.p_type == 1 && s.flags & 1 != 0)
        .unwrap()
        .clone();
    let code = image[text.offset as usize..(text.offset + text.filesz) as usize].to_vec();
    let end = m.segments.iter().map(|s| s.vaddr + s.memsz).max().unwrap();
    let add_segment =
        |m: &mut aps5_elf::Module, image: &mut Vec<u8>, vaddr: u64, flags: u32, data: Vec<u8>| {
            let offset = image.len().div_ceil(0x4000) as u64 * 0x4000;
            image.resize(offset as usize, 0);
            image.extend_from_slice(&data);
            let index = m.segments.len() as u16;
            m.segments.push(Segment {
                index,
                p_type: 1,
                flags,
                offset,
                vaddr,
                paddr: vaddr,
                filesz: data.len() as u64,
                memsz: data.len() as u64,
                align: 0x4000,
            });
        };
    let code_size: usize = 48 << 20;
    // Roots of every copy of the code for the reachable-code scan: its entry point (certain)
    // and the code addresses the original's relocations store (candidates).
    let copies = code_size.div_ceil(code.len()) as u64;
    let reloc_targets: Vec<u64> = m
        .relocations
        .iter()
        .filter(|r| r.r_type == 8)
        .map(|r| r.addend as u64)
        .filter(|a| (text.vaddr..text.vaddr + text.filesz).contains(a))
        .map(|a| a - text.vaddr)
        .collect();
    let entry_off = m.entry - text.vaddr;
    let big_code: Vec<u8> = code.iter().copied().cycle().take(code_size).collect();
    let code_va = end.div_ceil(0x4000) * 0x4000;
    add_segment(&mut m, &mut image, code_va, 5, big_code);
    let data_size = 16u64 << 20;
    let data_va = code_va + code_size as u64;
    add_segment(&mut m, &mut image, data_va, 6, vec![0; data_size as usize]);

    let prx = aps5_relink::PrxSet::installed().expect("PRX set");
    let libc = prx.libraries.iter().find(|l| l.library == "libc").unwrap();
    let known: Vec<&String> = libc.exports.iter().collect();
    let first_import = m.symbols.len() as u32;
    let imports = 20_000u32;
    for i in 0..imports {
        let (nid, library) = if i % 2 == 0 {
            (known[i as usize % known.len()].clone(), "libc")
        } else {
            (
                aps5_nid::nid(&format!("synthetic_function_{i}")),
                "libSceSynthetic",
            )
        };
        m.symbols.push(Symbol {
            index: first_import + i,
            name: format!("{nid}#C#C"),
            nid: Some(nid),
            library_id: Some(2),
            module_id: Some(2),
            library: Some(library.to_owned()),
            module: Some(library.to_owned()),
            binding: 1,
            kind: 2,
            other: 0,
            shndx: 0,
            value: 0,
            size: 0,
        });
    }
    let relocs = 1_000_000u64;
    for i in 0..relocs {
        let offset = data_va + (i * 8) % data_size;
        let sym = first_import + (i % u64::from(imports)) as u32;
        let (r_type, symbol, addend, table) = match i % 4 {
            0 | 1 => (
                8,
                0,
                (code_va + i % code_size as u64) as i64,
                RelocationTable::Rela,
            ),
            2 => (6, sym, 0, RelocationTable::Rela),
            _ => (7, sym, 0, RelocationTable::Jmprel),
        };
        m.relocations.push(Relocation {
            table,
            offset,
            r_type,
            symbol,
            addend,
        });
    }
    let input_bytes = image.len();
    let opts = aps5_relink::RelinkOptions {
        allow_syscalls: true,
        ..Default::default()
    };

    // Warm up once, then time the best of three.
    let _ = aps5_relink::relink_executable(&image, &m, &prx, &opts).expect("relink");
    let mut best = f64::MAX;
    let mut out_len = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let r = aps5_relink::relink_executable(&image, &m, &prx, &opts).expect("relink");
        best = best.min(t.elapsed().as_secs_f64());
        out_len = r.elf.len();
        std::hint::black_box(&r);
    }
    let mut scan_best = f64::MAX;
    {
        let mut opts2 = opts;
        opts2.allow_syscalls = false;
        let t = Instant::now();
        let _ = std::hint::black_box(aps5_relink::relink_executable(&image, &m, &prx, &opts2));
        scan_best = scan_best.min(t.elapsed().as_secs_f64());
    }
    // The reachable-code scan alone (what the relink runs when the text holds syscall
    // bytes), over the 48 MiB code segment: MB/s of code.
    let big = &image[image.len() - data_size as usize - code_size..][..code_size];
    let mut roots = aps5_relink::reach::Roots::default();
    for k in 0..copies {
        let base = code_va + k * code.len() as u64;
        roots.certain.push(base + entry_off);
        roots
            .candidates
            .extend(reloc_targets.iter().map(|o| base + o));
    }
    let segs = [aps5_relink::reach::CodeSegment {
        vaddr: code_va,
        bytes: big,
        exec: true,
    }];
    let mut reach_best = f64::MAX;
    let mut reached = aps5_relink::reach::Reached::default();
    for _ in 0..3 {
        let t = Instant::now();
        reached = aps5_relink::reach::reach(&segs, &roots, &|i| {
            i.mnemonic() == iced_x86::Mnemonic::Syscall
        });
        reach_best = reach_best.min(t.elapsed().as_secs_f64());
    }
    let mut dst = vec![0u8; image.len()];
    let mut mem_best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        dst.copy_from_slice(&image);
        std::hint::black_box(&dst);
        mem_best = mem_best.min(t.elapsed().as_secs_f64());
    }
    // A relink returns a fresh buffer, whose pages the kernel must supply on first touch:
    // memcpy into a new allocation (plain 4 KiB pages) of the output's size is the limit
    // that includes that.
    let mut fresh_best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let mut v = vec![0u8; out_len];
        v[..image.len()].copy_from_slice(&image);
        std::hint::black_box(&v);
        fresh_best = fresh_best.min(t.elapsed().as_secs_f64());
        drop(v);
    }
    let mb = input_bytes as f64 / 1e6;
    println!(
        "{}",
        serde_json::json!({
            "bench": "aps5-relink relink_executable",
            "input_bytes": input_bytes,
            "output_bytes": out_len,
            "imports": imports,
            "relocations": relocs,
            "relink_seconds": best,
            "relink_mb_per_s": mb / best,
            "relink_with_syscall_scan_seconds": scan_best,
            "relink_with_syscall_scan_mb_per_s": mb / scan_best,
            "relocations_per_s": relocs as f64 / best,
            "reach_scan_code_bytes": code_size,
            "reach_scan_seconds": reach_best,
            "reach_scan_mb_per_s": code_size as f64 / 1e6 / reach_best,
            "reach_scan_bytes_reached": reached.code_bytes,
            "reach_scan_instructions": reached.instructions,
            "reach_scan_rejected_candidates": reached.rejected_candidates,
            "memcpy_mb_per_s": mb / mem_best,
            "memcpy_into_fresh_output_sized_buffer_mb_per_s": mb / fresh_best,
            "relink_vs_memcpy": (mb / best) / (mb / mem_best),
            "relink_vs_memcpy_into_fresh_buffer": (mb / best) / (mb / fresh_best),
        })
    );
}
