//! Structure of relinked files, read back with goblin (an independent ELF reader) and the
//! host loader, and robustness against damaged inputs.

mod support;

use std::collections::BTreeMap;

use aps5_relink::{PrxSet, RelinkOptions, prxfix};
use goblin::elf::Elf;

fn hello() -> Vec<u8> {
    std::fs::read(
        support::shared().join("corpus/homebrew/openorbis-samples/hello_world/pkg/eboot.bin"),
    )
    .unwrap()
}

#[test]
fn relocations_and_segments_keep_the_original_layout() {
    let bytes = hello();
    let m = aps5_elf::parse(&bytes).unwrap();
    let prx = PrxSet::installed().unwrap();
    let r = aps5_relink::relink_executable(&bytes, &m, &prx, &RelinkOptions::default()).unwrap();
    let e = Elf::parse(&r.elf).unwrap();
    assert_eq!(e.header.e_type, goblin::elf::header::ET_DYN);

    // Every original loadable segment is there, moved by one common shift, bytes intact.
    let image = aps5_elf::unwrap_fself(&bytes).unwrap();
    let orig: Vec<_> = m
        .segments
        .iter()
        .filter(|s| (s.p_type == 1 || s.p_type == 0x6100_0010) && s.memsz > 0)
        .collect();
    let loads: Vec<_> = e
        .program_headers
        .iter()
        .filter(|p| p.p_type == goblin::elf::program_header::PT_LOAD)
        .collect();
    let first = loads
        .iter()
        .find(|p| p.p_filesz == orig[0].filesz && p.p_memsz == orig[0].memsz)
        .unwrap();
    let shift = first.p_vaddr - orig[0].vaddr;
    assert!(shift > 0 && shift % 0x4000 == 0, "shift {shift:#x}");
    for s in &orig {
        let p = loads
            .iter()
            .find(|p| p.p_vaddr == s.vaddr + shift)
            .expect("segment kept");
        assert_eq!((p.p_filesz, p.p_memsz), (s.filesz, s.memsz));
        let new = &r.elf[p.p_offset as usize..(p.p_offset + p.p_filesz) as usize];
        assert_eq!(
            new,
            &image[s.offset as usize..(s.offset + s.filesz) as usize]
        );
    }
    // Loads ascend and do not overlap.
    for w in loads.windows(2) {
        assert!(w[0].p_vaddr + w[0].p_memsz <= w[1].p_vaddr);
    }
    // The entry point is in an executable segment after the image.
    let entry_seg = loads
        .iter()
        .find(|p| e.entry >= p.p_vaddr && e.entry < p.p_vaddr + p.p_memsz)
        .unwrap();
    assert!(entry_seg.is_executable() && entry_seg.p_vaddr > first.p_vaddr);

    // Each original relocation is present at its shifted offset; imports by NID.
    let mut got: BTreeMap<u64, (u32, String)> = BTreeMap::new();
    for rel in e.dynrelas.iter().chain(e.pltrelocs.iter()) {
        let name = e
            .dynsyms
            .get(rel.r_sym)
            .map(|s| e.dynstrtab.get_at(s.st_name).unwrap_or("").to_owned())
            .unwrap_or_default();
        got.insert(rel.r_offset, (rel.r_type, name));
    }
    for o in &m.relocations {
        let (ty, name) = got
            .get(&(o.offset + shift))
            .unwrap_or_else(|| panic!("relocation at {:#x} lost", o.offset));
        match m.relocation_symbol(o).and_then(|s| s.nid.clone()) {
            Some(nid) => {
                assert_eq!(name, &nid);
                assert_eq!(*ty, o.r_type);
            }
            None => assert_eq!(*ty, 8, "RELATIVE stays RELATIVE"),
        }
    }
    assert_eq!(
        r.libs_needed,
        vec!["libkernel.prx".to_owned(), "libc.prx".to_owned()]
    );
}

#[test]
fn prx_exports_are_nids_and_the_rebuilt_hash_table_works() {
    let prx = PrxSet::installed().unwrap();
    let libc = prx.libraries.iter().find(|l| l.library == "libc").unwrap();
    let nids = prxfix::exported_nids(&libc.bytes).unwrap();
    for name in [
        "printf",
        "snprintf",
        "atexit",
        "_init_env",
        "setjmp",
        "malloc",
        "puts",
        "_Stdout",
        "__stdoutp",
    ] {
        assert!(nids.contains(&aps5_nid::nid(name)), "{name} not exported");
    }
    // No dynamic symbol keeps its pre-rename trampoline name.
    let e = Elf::parse(&libc.bytes).unwrap();
    let prefix = std::str::from_utf8(prxfix::TRAMPOLINE_PREFIX).unwrap();
    let leftover: Vec<&str> = e
        .dynsyms
        .iter()
        .filter_map(|s| e.dynstrtab.get_at(s.st_name))
        .filter(|n| n.starts_with(prefix))
        .collect();
    assert!(leftover.is_empty(), "{leftover:?}");
    let dyn_tags: Vec<u64> = e
        .dynamic
        .as_ref()
        .unwrap()
        .dyns
        .iter()
        .map(|d| d.d_tag)
        .collect();
    assert!(
        dyn_tags.contains(&goblin::elf::dynamic::DT_GNU_HASH),
        "ld.so binds through DT_GNU_HASH (its Bloom filter keeps start-up lookups cheap)"
    );
    // The host loader finds renamed trampolines (e.g. snprintf, NID with '-') through the
    // rebuilt DT_HASH, and the function works.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("libc.prx");
    std::fs::write(&path, libc.bytes.as_slice()).unwrap();
    let cpath = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    unsafe {
        let h = libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        assert!(!h.is_null(), "dlopen failed");
        let nid = std::ffi::CString::new(aps5_nid::nid("snprintf")).unwrap();
        assert!(nid.to_str().unwrap().contains('-'));
        let f = libc::dlsym(h, nid.as_ptr());
        assert!(!f.is_null(), "snprintf not found by NID");
        let f: unsafe extern "C" fn(*mut u8, usize, *const u8, ...) -> i32 = std::mem::transmute(f);
        let mut buf = [0u8; 32];
        let n = f(
            buf.as_mut_ptr(),
            32,
            c"%s=%d %.2f".as_ptr().cast(),
            c"x".as_ptr(),
            42,
            2.5f64,
        );
        assert_eq!(&buf[..n as usize], b"x=42 2.50");
    }
}

/// After the renames, the loader finds every export of libc.prx and libkernel.prx through
/// the rebuilt GNU hash table (which it prefers to DT_HASH), at its own address: the
/// re-sorted symbols, their versions and the relocations naming them stayed together.
#[test]
fn every_prx_export_is_found_through_the_rebuilt_gnu_hash() {
    let prx = PrxSet::installed().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for file in ["libc.prx", "libkernel.prx"] {
        let lib = prx.libraries.iter().find(|l| l.file_name == file).unwrap();
        let e = Elf::parse(&lib.bytes).unwrap();
        let path = dir.path().join(file);
        std::fs::write(&path, lib.bytes.as_slice()).unwrap();
        let cpath = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        let h = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!h.is_null(), "dlopen {file} failed");
        let mut base = None;
        let mut checked = 0;
        for s in e
            .dynsyms
            .iter()
            .filter(|s| !s.is_import() && s.st_bind() != 0)
        {
            let name = e.dynstrtab.get_at(s.st_name).unwrap();
            let c = std::ffi::CString::new(name).unwrap();
            let p = unsafe { libc::dlsym(h, c.as_ptr()) } as u64;
            assert_ne!(p, 0, "{file}: {name} not found");
            // TLS symbols resolve to the calling thread's copy, not the file address.
            if s.st_type() == goblin::elf::sym::STT_TLS {
                continue;
            }
            let b = p.wrapping_sub(s.st_value);
            assert_eq!(
                *base.get_or_insert(b),
                b,
                "{file}: {name} at the wrong address"
            );
            checked += 1;
        }
        assert!(checked > 300, "{file}: only {checked} exports");
        let gh = e
            .dynamic
            .as_ref()
            .unwrap()
            .dyns
            .iter()
            .any(|d| d.d_tag == goblin::elf::dynamic::DT_GNU_HASH);
        assert!(gh, "{file} has no DT_GNU_HASH");
    }
}

/// What each PRX file makes the loader load at every program's start-up: the C library,
/// libm, the loader itself, and a host library a PRX wraps (FreeType). Not libgcc_s.so.1:
/// the unwinder is bound at its first call (aps5_prx_abi::libgcc_s), so a new libgcc_s
/// function a PRX calls must join `lazy_libgcc_s!`'s list.
#[test]
fn prx_files_need_no_library_a_program_may_never_call() {
    let prx = PrxSet::installed().unwrap();
    let files = prx.files();
    assert!(files.len() >= 6, "{} PRX files", files.len());
    for (name, bytes) in files {
        let e = Elf::parse(bytes).unwrap();
        let allowed: &[&str] = match name {
            "libSceFreeType.prx" => &[
                "libc.so.6",
                "libm.so.6",
                "ld-linux-x86-64.so.2",
                "libfreetype.so.6",
            ],
            _ => &["libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2"],
        };
        let extra: Vec<&str> = e
            .libraries
            .iter()
            .copied()
            .filter(|l| !allowed.contains(l))
            .collect();
        assert!(extra.is_empty(), "{name} needs {extra:?} at start-up");
    }
}

#[test]
fn damaged_inputs_never_panic() {
    let bytes = hello();
    let image = aps5_elf::unwrap_fself(&bytes).unwrap().into_owned();
    let prx = PrxSet::installed().unwrap();
    let mut seed: u64 = 0x1234_5678_9abc_def0;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut parsed, mut relinked) = (0, 0);
    for _ in 0..1500 {
        let mut d = image.clone();
        for _ in 0..(1 + next() % 8) {
            let at = (next() % d.len() as u64) as usize;
            d[at] = next() as u8;
        }
        if let Ok(m) = aps5_elf::parse(&d) {
            parsed += 1;
            let r = std::panic::catch_unwind(|| {
                aps5_relink::relink_executable(
                    &d,
                    &m,
                    &prx,
                    &RelinkOptions {
                        allow_syscalls: true,
                        ..Default::default()
                    },
                )
            });
            match r {
                Ok(Ok(_)) => relinked += 1,
                Ok(Err(e)) => assert!(!e.to_string().is_empty()),
                Err(_) => panic!("relink panicked on a damaged input"),
            }
        }
    }
    assert!(
        parsed > 100 && relinked > 50,
        "parsed {parsed}, relinked {relinked}"
    );
}

/// Sony's own libc.prx and libSceFios2.prx, as bundled by homebrew in shared/corpus,
/// relink into shared objects the host loader accepts, exporting their NIDs.
#[test]
fn bundled_sony_modules_relink() {
    let prx = PrxSet::installed().unwrap();
    let root = support::shared().join("corpus/homebrew");
    for m in [
        "ps4-2048/sce_module/libc.prx",
        "openorbis-samples/piglet/sce_module/libc.prx",
        "openorbis-samples/piglet/sce_module/libSceFios2.prx",
    ] {
        let path = root.join(m);
        let bytes = std::fs::read(&path).unwrap();
        let module = aps5_elf::parse(&bytes).unwrap_or_else(|e| panic!("{m}: {e}"));
        let r = aps5_relink::relink_module(
            &bytes,
            &module,
            &prx,
            &RelinkOptions {
                allow_syscalls: true,
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{m}: {e}"));
        let e = Elf::parse(&r.elf).unwrap();
        let exported: std::collections::BTreeSet<&str> = e
            .dynsyms
            .iter()
            .filter(|s| s.st_shndx != 0)
            .filter_map(|s| e.dynstrtab.get_at(s.st_name))
            .collect();
        let want = module.exports().filter_map(|s| s.nid.as_deref()).count();
        assert!(want > 0, "{m}: {want} exports");
        for s in module.exports().filter_map(|s| s.nid.as_deref()) {
            assert!(exported.contains(s), "{m}: export {s} lost");
        }
        // The host loader maps it and binds every symbol it imports or stubs.
        let dir = tempfile::tempdir().unwrap();
        let libs = dir.path().join("libs");
        let modules = dir.path().join("app0/sce_module");
        std::fs::create_dir_all(&libs).unwrap();
        std::fs::create_dir_all(&modules).unwrap();
        for (name, bytes) in prx.files() {
            std::fs::write(libs.join(name), bytes.as_slice()).unwrap();
        }
        let out = modules.join(path.file_name().unwrap());
        std::fs::write(&out, &r.elf).unwrap();
        let (_, err, ok) = support::tool(
            "/lib64/ld-linux-x86-64.so.2",
            &["--verify", out.to_str().unwrap()],
        );
        // --verify answers 1 for a valid shared object that is not a program, 2 for junk.
        assert!(ok || !err.contains("not a dynamic"), "{m}: {err}");
        let (_, err, ok) = support::tool("readelf", &["-a", "-W", out.to_str().unwrap()]);
        assert!(
            ok && !err.contains("Error") && !err.contains("Warning"),
            "{m}: readelf: {err}"
        );
        let (list, err, ok) = support::tool(
            "/lib64/ld-linux-x86-64.so.2",
            &["--list", out.to_str().unwrap()],
        );
        assert!(ok, "{m}: ld.so --list: {err}");
        assert!(!list.contains("not found"), "{m}: {list}");
        eprintln!(
            "{m}: {} exports, {}/{} imports implemented",
            want,
            r.coverage.iter().filter(|c| c.implemented).count(),
            r.coverage.len()
        );
    }
}

/// An unimplemented *variable* points into a no-access page (a read faults where it
/// happens) rather than at code; the program still runs if it never reads it.
#[test]
fn unimplemented_variables_point_at_a_no_access_page() {
    let bytes = hello();
    let m = aps5_elf::parse(&bytes).unwrap();
    let mut prx = PrxSet::installed().unwrap();
    let need = aps5_nid::nid("Need_sceLibc");
    for l in &mut prx.libraries {
        l.exports.remove(&need);
    }
    let r = aps5_relink::relink_executable(&bytes, &m, &prx, &RelinkOptions::default()).unwrap();
    let row = r.coverage.iter().find(|c| c.nid == need).unwrap();
    assert!(!row.implemented);
    let e = Elf::parse(&r.elf).unwrap();
    let trap = e
        .program_headers
        .iter()
        .find(|p| p.p_type == goblin::elf::program_header::PT_LOAD && p.p_flags == 0)
        .expect("a PROT_NONE segment");
    // Both R_X86_64_64 relocations of Need_sceLibc now target it.
    let shift = e
        .program_headers
        .iter()
        .filter(|p| p.p_type == 1)
        .nth(1)
        .unwrap()
        .p_vaddr;
    let mut hits = 0;
    for o in m
        .relocations
        .iter()
        .filter(|o| m.relocation_symbol(o).and_then(|s| s.nid.as_deref()) == Some(need.as_str()))
    {
        let rel = e
            .dynrelas
            .iter()
            .find(|x| x.r_offset == o.offset + shift)
            .unwrap();
        assert_eq!(rel.r_type, 8);
        let target = rel.r_addend.unwrap() as u64;
        assert!(
            target >= trap.p_vaddr && target < trap.p_vaddr + trap.p_memsz,
            "{target:#x}"
        );
        hits += 1;
    }
    assert_eq!(hits, 2);
    // The program only stores the address, so it still runs.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("libs")).unwrap();
    for (name, b) in prx.files() {
        std::fs::write(dir.path().join("libs").join(name), b.as_slice()).unwrap();
    }
    let app = dir.path().join("app.elf");
    std::fs::write(&app, &r.elf).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = support::run(dir.path(), &[], &[], std::time::Duration::from_millis(500));
    assert!(run.stdout.starts_with("Hello world!"), "{run:?}");
    let (_, err, ok) = support::tool("readelf", &["-a", "-W", app.to_str().unwrap()]);
    assert!(
        ok && !err.contains("Error") && !err.contains("Warning"),
        "readelf: {err}"
    );
}

/// File offset of virtual address `va` in an ELF (through its PT_LOAD headers).
fn file_offset(e: &Elf, va: u64) -> usize {
    let p = e
        .program_headers
        .iter()
        .find(|p| {
            p.p_type == goblin::elf::program_header::PT_LOAD
                && va >= p.p_vaddr
                && va < p.p_vaddr + p.p_filesz
        })
        .unwrap_or_else(|| panic!("{va:#x} is not in a loaded part of the file"));
    (p.p_offset + va - p.p_vaddr) as usize
}

/// Overwrites part of a hash table of the ELF at `path`: `gnu` picks DT_GNU_HASH (its
/// Bloom filter is cleared: every lookup is rejected) or DT_HASH (its buckets are cleared:
/// every lookup finds nothing).
fn damage_hash_table(path: &std::path::Path, gnu: bool) {
    let mut bytes = std::fs::read(path).unwrap();
    let (at, len) = {
        let e = Elf::parse(&bytes).unwrap();
        let dynamic = e.dynamic.as_ref().expect("a dynamic section");
        if gnu {
            let va = dynamic
                .dyns
                .iter()
                .find(|d| d.d_tag == 0x6fff_fef5)
                .expect("DT_GNU_HASH")
                .d_val;
            let off = file_offset(&e, va);
            let words = u32::from_le_bytes(bytes[off + 8..off + 12].try_into().unwrap());
            (off + 16, 8 * words as usize)
        } else {
            let va = dynamic.info.hash.expect("DT_HASH");
            let off = file_offset(&e, va);
            let nbucket = u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap());
            (off + 8, 4 * nbucket as usize)
        }
    };
    bytes[at..at + len].fill(0);
    std::fs::write(path, bytes).unwrap();
}

/// The relinked executable and modules carry DT_GNU_HASH next to DT_HASH; GNU readelf
/// decodes both, and the host loader binds through the GNU table: with every DT_HASH
/// emptied the program still runs, with the module's GNU Bloom filter cleared its
/// exports are no longer found.
#[test]
fn gnu_hash_is_what_the_loader_binds_through() {
    let fixture = aps5_sdk::fixtures_dir().join("module_link");
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump");
    aps5_sdk::build_dump(&fixture, &dump, &aps5_sdk::DumpOptions { ps4: false })
        .expect("the fixture SDK (clang-14, ld.lld-14) builds module_link");
    let module = dump.join("sce_module/mathlib.prx");
    let want = std::fs::read_to_string(fixture.join("expect.stdout")).unwrap();
    let tree = |name: &str| {
        let out = dir.path().join(name);
        support::build_tree(&dump.join("eboot.bin"), std::slice::from_ref(&module), &out);
        out
    };
    let run =
        |out: &std::path::Path| support::run(out, &[], &[], std::time::Duration::from_secs(20));

    let good = tree("good");
    let app = good.join("app.elf");
    let lib = good.join("app0/sce_module/mathlib.prx");
    for f in [&app, &lib] {
        let (out, err, ok) = support::tool("readelf", &["-d", "-S", "-W", f.to_str().unwrap()]);
        assert!(ok && err.is_empty(), "{}: {err}", f.display());
        assert!(
            out.contains("(GNU_HASH)") && out.contains("(HASH)"),
            "{out}"
        );
        assert!(
            out.contains(".gnu.hash") && out.contains("GNU_HASH"),
            "{out}"
        );
    }
    // Histogram of the module's tables: readelf walks the GNU chains of its 10 exports (the
    // executable exports nothing, so its GNU table is empty and readelf skips it).
    let (out, err, ok) = support::tool("readelf", &["-I", lib.to_str().unwrap()]);
    assert!(ok && err.is_empty(), "{err}");
    let gnu = out
        .split("Histogram for `.gnu.hash'")
        .nth(1)
        .unwrap_or_else(|| panic!("no GNU histogram: {out}"));
    let lib_exports = Elf::parse(&std::fs::read(&lib).unwrap())
        .unwrap()
        .dynsyms
        .iter()
        .filter(|s| s.st_shndx != 0)
        .count();
    // The coverage column reaches 100% once all hashed symbols were counted.
    assert!(gnu.contains("100.0%"), "{gnu}");
    assert!(lib_exports >= 8, "{lib_exports} exports");
    let r = run(&good);
    assert_eq!((r.stdout.as_str(), r.status), (want.as_str(), Some(0)));

    // Only the GNU tables left: same run.
    let sysv_gone = tree("sysv-gone");
    damage_hash_table(&sysv_gone.join("app.elf"), false);
    damage_hash_table(&sysv_gone.join("app0/sce_module/mathlib.prx"), false);
    let r = run(&sysv_gone);
    assert_eq!(
        (r.stdout.as_str(), r.status),
        (want.as_str(), Some(0)),
        "{}",
        r.stderr
    );

    // The module's GNU table rejects everything: its exports cannot be bound.
    let gnu_gone = tree("gnu-gone");
    damage_hash_table(&gnu_gone.join("app0/sce_module/mathlib.prx"), true);
    let r = run(&gnu_gone);
    assert_ne!(r.status, Some(0));
    assert!(r.stderr.contains("undefined symbol"), "{}", r.stderr);
}
