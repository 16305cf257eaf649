//! The real `libSceFreeType.prx` of the PRX set, loaded with libkernel.prx by the host
//! loader and called by NID the way a relinked program calls it: a guest path is opened
//! through libkernel's path map, and a glyph rendered through the NID exports (read at the
//! offsets a PS4 program reads) equals the one the host FreeType renders directly.

use std::ffi::{CString, c_char, c_void};
use std::path::Path;

use aps5_prx_macros::nid_str;
use aps5_relink::PrxSet;

const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

fn load(dir: &Path, file: &str) -> *mut c_void {
    let prx = PrxSet::installed().expect("the PRX set");
    let (_, bytes) = prx
        .files()
        .into_iter()
        .find(|(n, _)| *n == file)
        .unwrap_or_else(|| panic!("{file} is not in the PRX set"));
    let path = dir.join(file);
    std::fs::write(&path, bytes.as_slice()).unwrap();
    let c = CString::new(path.to_str().unwrap()).unwrap();
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    assert!(!h.is_null(), "dlopen {file} failed");
    h
}

fn sym(h: *mut c_void, nid: &str) -> *mut c_void {
    let c = CString::new(nid).unwrap();
    let f = unsafe { libc::dlsym(h, c.as_ptr()) };
    assert!(!f.is_null(), "{nid} not exported");
    f
}

/// (rows, width, pitch, left, top, advance.x, pixels) of a rendered glyph slot, read at
/// the LP64 offsets of `FT_GlyphSlotRec` (what a PS4 program's code reads).
unsafe fn read_slot(slot: *const u8) -> (u32, u32, i32, i32, i32, i64, Vec<u8>) {
    unsafe {
        let rows = *(slot.add(152) as *const u32);
        let width = *(slot.add(156) as *const u32);
        let pitch = *(slot.add(160) as *const i32);
        let buffer = *(slot.add(168) as *const *const u8);
        let left = *(slot.add(192) as *const i32);
        let top = *(slot.add(196) as *const i32);
        let advance = *(slot.add(128) as *const i64);
        let mut px = Vec::new();
        for r in 0..rows as isize {
            let row = buffer.offset(r * pitch as isize);
            px.extend_from_slice(std::slice::from_raw_parts(row, width as usize));
        }
        (rows, width, pitch, left, top, advance, px)
    }
}

type Ft = *mut c_void;

#[test]
fn guest_calls_render_what_the_host_freetype_renders() {
    assert!(
        Path::new(FONT).is_file(),
        "{FONT} is needed by this test: install fonts-dejavu-core"
    );
    let dir = tempfile::tempdir().unwrap();
    let app0 = dir.path().join("app0");
    std::fs::create_dir_all(app0.join("fonts")).unwrap();
    std::fs::copy(FONT, app0.join("fonts/font.ttf")).unwrap();
    // libkernel maps /app0 to $APS5_APP0, read at its first path lookup.
    unsafe { std::env::set_var("APS5_APP0", &app0) };
    let _k = load(dir.path(), "libkernel.prx");
    let f = load(dir.path(), "libSceFreeType.prx");

    unsafe {
        let init: extern "C" fn(*mut Ft) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Init_FreeType")));
        let new_face: extern "C" fn(Ft, *const c_char, i64, *mut Ft) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_New_Face")));
        let open_face: extern "C" fn(Ft, *const freetype_sys::FT_Open_Args, i64, *mut Ft) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Open_Face")));
        let set_pixel_sizes: extern "C" fn(Ft, u32, u32) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Set_Pixel_Sizes")));
        let char_index: extern "C" fn(Ft, u64) -> u32 =
            std::mem::transmute(sym(f, nid_str!("FT_Get_Char_Index")));
        let load_glyph: extern "C" fn(Ft, u32, i32) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Load_Glyph")));
        let render: extern "C" fn(*mut u8, i32) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Render_Glyph")));
        let kerning: extern "C" fn(Ft, u32, u32, u32, *mut [i64; 2]) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Get_Kerning")));
        let done_face: extern "C" fn(Ft) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Done_Face")));
        let done: extern "C" fn(Ft) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Done_FreeType")));

        let mut lib: Ft = std::ptr::null_mut();
        assert_eq!(init(&mut lib), 0);
        let mut face: Ft = std::ptr::null_mut();
        let path = c"/app0/fonts/font.ttf";
        assert_eq!(new_face(lib, path.as_ptr(), 0, &mut face), 0);
        assert!(!face.is_null());
        // FreeType keeps the name it opened in face->stream->pathname: still valid.
        let stream = (*(face as freetype_sys::FT_Face)).stream;
        let name = std::ffi::CStr::from_ptr((*stream).pathname as *const c_char);
        assert!(
            name.to_str().unwrap().starts_with("/proc/self/fd/"),
            "{name:?}"
        );

        // The host library, called directly on the host file, is the reference.
        let mut hlib: freetype_sys::FT_Library = std::ptr::null_mut();
        assert_eq!(freetype_sys::FT_Init_FreeType(&mut hlib), 0);
        let mut hface: freetype_sys::FT_Face = std::ptr::null_mut();
        let host_path = CString::new(FONT).unwrap();
        assert_eq!(
            freetype_sys::FT_New_Face(hlib, host_path.as_ptr(), 0, &mut hface),
            0
        );
        freetype_sys::FT_Set_Pixel_Sizes(hface, 0, 30);
        assert_eq!(set_pixel_sizes(face, 0, 30), 0);

        let mut compared = 0;
        for ch in "Hello, aps5! {gjy}".chars() {
            let gi = char_index(face, u64::from(ch));
            assert_eq!(
                gi,
                freetype_sys::FT_Get_Char_Index(hface, u64::from(ch) as _)
            );
            assert_eq!(load_glyph(face, gi, 0), 0);
            // face->glyph at +152 of FT_FaceRec, as the guest reads it.
            let slot = *((face as *const u8).add(152) as *const *mut u8);
            assert_eq!(render(slot, 0), 0);
            let got = read_slot(slot);

            assert_eq!(freetype_sys::FT_Load_Glyph(hface, gi, 0), 0);
            let hslot = (*hface).glyph;
            assert_eq!(freetype_sys::FT_Render_Glyph(hslot, 0), 0);
            let want = read_slot(hslot as *const u8);
            assert_eq!(got, want, "glyph {ch:?}");
            if ch != ' ' {
                assert!(got.6.iter().any(|&p| p != 0), "glyph {ch:?} has no ink");
            }
            compared += got.6.len();
        }
        eprintln!("{compared} glyph pixels equal the host FreeType's");

        // A forwarded function with a structure result: kerning of "AV" (DejaVu has it).
        let (a, v) = (char_index(face, 'A' as u64), char_index(face, 'V' as u64));
        let mut k = [0i64; 2];
        assert_eq!(kerning(face, a, v, 0, &mut k), 0);
        let mut hk = freetype_sys::FT_Vector { x: 0, y: 0 };
        freetype_sys::FT_Get_Kerning(hface, a, v, 0, &mut hk);
        assert_eq!(k, [hk.x, hk.y]);
        assert!(k[0] < 0, "A and V are kerned closer: {k:?}");

        // FT_Open_Face with a guest pathname.
        let args = freetype_sys::FT_Open_Args {
            flags: freetype_sys::FT_OPEN_PATHNAME,
            memory_base: std::ptr::null(),
            memory_size: 0,
            pathname: path.as_ptr() as *mut c_char,
            stream: std::ptr::null_mut(),
            driver: std::ptr::null_mut(),
            num_params: 0,
            params: std::ptr::null_mut(),
        };
        let mut face2: Ft = std::ptr::null_mut();
        assert_eq!(open_face(lib, &args, 0, &mut face2), 0);
        // num_glyphs (+32) of both faces of the same file.
        assert_eq!(
            *((face2 as *const u8).add(32) as *const i64),
            (*hface).num_glyphs
        );
        assert_eq!(done_face(face2), 0);

        // A symlink in /app0 to a real font outside it is not followed out: every
        // function that opens a guest path says "cannot open resource" (1), where the
        // host library, given the link, would open the font.
        std::os::unix::fs::symlink(FONT, app0.join("fonts/outside.ttf")).unwrap();
        let escape = c"/app0/fonts/outside.ttf";
        let mut fc: Ft = 1 as Ft;
        assert_eq!(new_face(lib, escape.as_ptr(), 0, &mut fc), 1, "FT_New_Face");
        assert!(fc.is_null());
        let escape_args = freetype_sys::FT_Open_Args {
            pathname: escape.as_ptr() as *mut c_char,
            ..args
        };
        let mut fc: Ft = std::ptr::null_mut();
        assert_eq!(open_face(lib, &escape_args, 0, &mut fc), 1, "FT_Open_Face");
        let attach_file: extern "C" fn(Ft, *const c_char) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Attach_File")));
        let attach_stream: extern "C" fn(Ft, *const freetype_sys::FT_Open_Args) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Attach_Stream")));
        assert_eq!(attach_file(face, escape.as_ptr()), 1, "FT_Attach_File");
        assert_eq!(attach_stream(face, &escape_args), 1, "FT_Attach_Stream");

        // A missing file, a host path and an escape from /app0 are "cannot open resource"
        // (1), and the face pointer is cleared.
        for bad in [c"/app0/fonts/missing.ttf", c"/app0/../app0/fonts/font.ttf"] {
            let mut fc: Ft = 1 as Ft;
            assert_eq!(new_face(lib, bad.as_ptr(), 0, &mut fc), 1, "{bad:?}");
            assert!(fc.is_null());
        }
        let mut fc: Ft = std::ptr::null_mut();
        assert_eq!(new_face(lib, std::ptr::null(), 0, &mut fc), 6, "NULL path");

        assert_eq!(done_face(face), 0);
        assert_eq!(done(lib), 0);
        freetype_sys::FT_Done_Face(hface);
        freetype_sys::FT_Done_FreeType(hlib);
    }
}

/// Every name in the forward list of src/lib.rs resolves (the list is read from the
/// source so that a new entry is checked too).
#[test]
fn every_forwarded_function_is_exported_under_its_nid() {
    let dir = tempfile::tempdir().unwrap();
    let f = load(dir.path(), "libSceFreeType.prx");
    let src = include_str!("../src/lib.rs");
    let list = &src[src.find("forward!(\n").expect("the forward! list")..];
    let list = &list[..list.find(");").unwrap()];
    let names: Vec<&str> = list
        .lines()
        .filter_map(|l| l.trim().strip_prefix('"')?.strip_suffix("\","))
        .collect();
    assert!(names.len() > 150, "{}", names.len());
    for n in names
        .iter()
        .chain(&["FT_New_Face", "FT_Open_Face", "FT_Attach_File"])
    {
        sym(f, &aps5_nid::nid(n));
    }
    eprintln!("{} forwarded + 4 wrapped functions resolve", names.len());
}

#[repr(C)]
struct OutlineFuncs {
    move_to: extern "C" fn(*const [i64; 2], *mut c_void) -> i32,
    line_to: extern "C" fn(*const [i64; 2], *mut c_void) -> i32,
    conic_to: extern "C" fn(*const [i64; 2], *const [i64; 2], *mut c_void) -> i32,
    cubic_to: extern "C" fn(*const [i64; 2], *const [i64; 2], *const [i64; 2], *mut c_void) -> i32,
    shift: i32,
    delta: i64,
}

/// What FT_Outline_Decompose reports, recorded by callbacks (guest code in a real
/// program: the host library calls them directly, same ABI).
#[derive(Debug, Default, PartialEq)]
struct Segments(Vec<(char, i64, i64)>);

extern "C" fn move_to(to: *const [i64; 2], user: *mut c_void) -> i32 {
    let (p, t) = unsafe { (&mut *(user as *mut Segments), *to) };
    p.0.push(('M', t[0], t[1]));
    0
}
extern "C" fn line_to(to: *const [i64; 2], user: *mut c_void) -> i32 {
    let (p, t) = unsafe { (&mut *(user as *mut Segments), *to) };
    p.0.push(('L', t[0], t[1]));
    0
}
extern "C" fn conic_to(_c: *const [i64; 2], to: *const [i64; 2], user: *mut c_void) -> i32 {
    let (p, t) = unsafe { (&mut *(user as *mut Segments), *to) };
    p.0.push(('Q', t[0], t[1]));
    0
}
extern "C" fn cubic_to(
    _c1: *const [i64; 2],
    _c2: *const [i64; 2],
    to: *const [i64; 2],
    user: *mut c_void,
) -> i32 {
    let (p, t) = unsafe { (&mut *(user as *mut Segments), *to) };
    p.0.push(('C', t[0], t[1]));
    0
}

/// Outline, glyph-object and transform functions through the NIDs (a memory face, so no
/// path is involved) give what the host library gives for the same calls.
#[test]
fn outline_and_glyph_functions_match_the_host_library() {
    assert!(
        Path::new(FONT).is_file(),
        "{FONT} is needed by this test: install fonts-dejavu-core"
    );
    let font = std::fs::read(FONT).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let f = load(dir.path(), "libSceFreeType.prx");
    let outline_funcs = OutlineFuncs {
        move_to,
        line_to,
        conic_to,
        cubic_to,
        shift: 0,
        delta: 0,
    };
    unsafe {
        let init: extern "C" fn(*mut Ft) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Init_FreeType")));
        let new_memory_face: extern "C" fn(Ft, *const u8, i64, i64, *mut Ft) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_New_Memory_Face")));
        let set_char_size: extern "C" fn(Ft, i64, i64, u32, u32) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Set_Char_Size")));
        let set_transform: extern "C" fn(Ft, *const [i64; 4], *const [i64; 2]) =
            std::mem::transmute(sym(f, nid_str!("FT_Set_Transform")));
        let load_char: extern "C" fn(Ft, u64, i32) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Load_Char")));
        let outline_cbox: extern "C" fn(*const u8, *mut [i64; 4]) =
            std::mem::transmute(sym(f, nid_str!("FT_Outline_Get_CBox")));
        let decompose: extern "C" fn(*const u8, *const OutlineFuncs, *mut c_void) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Outline_Decompose")));
        let get_glyph: extern "C" fn(*mut u8, *mut Ft) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Get_Glyph")));
        let glyph_to_bitmap: extern "C" fn(*mut Ft, u32, *const [i64; 2], u8) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Glyph_To_Bitmap")));
        let done_glyph: extern "C" fn(Ft) = std::mem::transmute(sym(f, nid_str!("FT_Done_Glyph")));
        let done_face: extern "C" fn(Ft) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Done_Face")));
        let done: extern "C" fn(Ft) -> i32 =
            std::mem::transmute(sym(f, nid_str!("FT_Done_FreeType")));

        let mut lib: Ft = std::ptr::null_mut();
        assert_eq!(init(&mut lib), 0);
        let mut face: Ft = std::ptr::null_mut();
        assert_eq!(
            new_memory_face(lib, font.as_ptr(), font.len() as i64, 0, &mut face),
            0
        );
        let mut hlib: freetype_sys::FT_Library = std::ptr::null_mut();
        assert_eq!(freetype_sys::FT_Init_FreeType(&mut hlib), 0);
        let mut hface: freetype_sys::FT_Face = std::ptr::null_mut();
        assert_eq!(
            freetype_sys::FT_New_Memory_Face(hlib, font.as_ptr(), font.len() as _, 0, &mut hface),
            0
        );
        // 24 pt at 96 dpi, slanted by a shear matrix (16.16), moved by (64, 0) in 26.6.
        let shear = [0x10000i64, 0x4000, 0, 0x10000];
        let delta = [64i64, 0];
        assert_eq!(set_char_size(face, 0, 24 * 64, 96, 96), 0);
        set_transform(face, &shear, &delta);
        freetype_sys::FT_Set_Char_Size(hface, 0, 24 * 64, 96, 96);
        let hm = freetype_sys::FT_Matrix {
            xx: shear[0],
            xy: shear[1],
            yx: shear[2],
            yy: shear[3],
        };
        let hd = freetype_sys::FT_Vector { x: 64, y: 0 };
        freetype_sys::FT_Set_Transform(hface, &hm as *const _ as *mut _, &hd as *const _ as *mut _);

        let mut points = 0;
        for ch in ['g', '&', 'Q'] {
            // FT_LOAD_NO_BITMAP (8): the outline stays in the slot.
            assert_eq!(load_char(face, ch as u64, 8), 0);
            assert_eq!(freetype_sys::FT_Load_Char(hface, ch as _, 8), 0);
            let slot = *((face as *const u8).add(152) as *const *mut u8);
            let hslot = (*hface).glyph;
            // The slot's outline at +200 (FT_GlyphSlotRec.outline, LP64).
            let outline = slot.add(200);
            let mut cbox = [0i64; 4];
            outline_cbox(outline, &mut cbox);
            let mut hbox = freetype_sys::FT_BBox {
                xMin: 0,
                yMin: 0,
                xMax: 0,
                yMax: 0,
            };
            freetype_sys::FT_Outline_Get_CBox(&(*hslot).outline, &mut hbox);
            assert_eq!(cbox, [hbox.xMin, hbox.yMin, hbox.xMax, hbox.yMax], "{ch:?}");

            let mut path = Segments::default();
            assert_eq!(
                decompose(
                    outline,
                    &outline_funcs,
                    &mut path as *mut Segments as *mut c_void
                ),
                0
            );
            let mut hpath = Segments::default();
            freetype_sys::FT_Outline_Decompose(
                &(*hslot).outline as *const _ as *mut _,
                &outline_funcs as *const OutlineFuncs as *const freetype_sys::FT_Outline_Funcs,
                &mut hpath as *mut Segments as *mut c_void,
            );
            assert!(path.0.len() > 4, "{ch:?}: {path:?}");
            assert_eq!(path, hpath, "{ch:?}");
            points += path.0.len();

            // A glyph object rendered to a bitmap glyph.
            let mut glyph: Ft = std::ptr::null_mut();
            assert_eq!(get_glyph(slot, &mut glyph), 0);
            assert_eq!(glyph_to_bitmap(&mut glyph, 0, std::ptr::null(), 1), 0);
            let mut hglyph: freetype_sys::FT_Glyph = std::ptr::null_mut();
            assert_eq!(freetype_sys::FT_Get_Glyph(hslot, &mut hglyph), 0);
            freetype_sys::FT_Glyph_To_Bitmap(&mut hglyph, 0, std::ptr::null_mut(), 1);
            let g = &*(glyph as *const freetype_sys::FT_BitmapGlyphRec);
            let h = &*(hglyph as *const freetype_sys::FT_BitmapGlyphRec);
            assert_eq!((g.left, g.top), (h.left, h.top), "{ch:?}");
            assert_eq!(
                (g.bitmap.rows, g.bitmap.width),
                (h.bitmap.rows, h.bitmap.width)
            );
            let n = g.bitmap.rows as usize * g.bitmap.pitch.unsigned_abs() as usize;
            assert_eq!(
                std::slice::from_raw_parts(g.bitmap.buffer, n),
                std::slice::from_raw_parts(h.bitmap.buffer, n),
                "{ch:?}"
            );
            done_glyph(glyph);
            freetype_sys::FT_Done_Glyph(hglyph);
        }
        eprintln!("3 transformed outlines: {points} path segments equal the host's");
        assert_eq!(done_face(face), 0);
        assert_eq!(done(lib), 0);
        freetype_sys::FT_Done_Face(hface);
        freetype_sys::FT_Done_FreeType(hlib);
    }
}
