//! The guest reads FreeType's structures straight from the host library's memory, so their
//! layout must be the same for a PS4 program as for the host's libfreetype. The same
//! FreeType headers (the system's) are compiled by clang for the PS4 target
//! (`x86_64-scei-ps4`), for FreeBSD amd64 (what the OpenOrbis toolchain targets) and for
//! x86-64 Linux (the host library's ABI), and every size and offset of the public
//! structures is compared; the offsets the OpenOrbis keyboard sample's code reads are
//! checked against the values in its instructions.

use std::path::Path;
use std::process::Command;

/// (structure, field or "" for its size) of every public structure a program may read.
const FIELDS: &[(&str, &[&str])] = &[
    (
        "FT_Bitmap",
        &[
            "rows",
            "width",
            "pitch",
            "buffer",
            "num_grays",
            "pixel_mode",
            "palette_mode",
            "palette",
        ],
    ),
    ("FT_Vector", &["x", "y"]),
    ("FT_Matrix", &["xx", "xy", "yx", "yy"]),
    ("FT_BBox", &["xMin", "yMin", "xMax", "yMax"]),
    ("FT_Generic", &["data", "finalizer"]),
    (
        "FT_Glyph_Metrics",
        &[
            "width",
            "height",
            "horiBearingX",
            "horiBearingY",
            "horiAdvance",
            "vertBearingX",
            "vertBearingY",
            "vertAdvance",
        ],
    ),
    (
        "FT_Outline",
        &[
            "n_contours",
            "n_points",
            "points",
            "tags",
            "contours",
            "flags",
        ],
    ),
    (
        "FT_GlyphSlotRec",
        &[
            "library",
            "face",
            "next",
            "glyph_index",
            "generic",
            "metrics",
            "linearHoriAdvance",
            "linearVertAdvance",
            "advance",
            "format",
            "bitmap",
            "bitmap_left",
            "bitmap_top",
            "outline",
            "num_subglyphs",
            "subglyphs",
            "control_data",
            "control_len",
            "lsb_delta",
            "rsb_delta",
            "other",
            "internal",
        ],
    ),
    (
        "FT_FaceRec",
        &[
            "num_faces",
            "face_index",
            "face_flags",
            "style_flags",
            "num_glyphs",
            "family_name",
            "style_name",
            "num_fixed_sizes",
            "available_sizes",
            "num_charmaps",
            "charmaps",
            "generic",
            "bbox",
            "units_per_EM",
            "ascender",
            "descender",
            "height",
            "max_advance_width",
            "max_advance_height",
            "underline_position",
            "underline_thickness",
            "glyph",
            "size",
            "charmap",
            "driver",
            "memory",
            "stream",
            "sizes_list",
            "autohint",
            "extensions",
            "internal",
        ],
    ),
    (
        "FT_Bitmap_Size",
        &["height", "width", "size", "x_ppem", "y_ppem"],
    ),
    (
        "FT_CharMapRec",
        &["face", "encoding", "platform_id", "encoding_id"],
    ),
    (
        "FT_Size_Metrics",
        &[
            "x_ppem",
            "y_ppem",
            "x_scale",
            "y_scale",
            "ascender",
            "descender",
            "height",
            "max_advance",
        ],
    ),
    ("FT_SizeRec", &["face", "generic", "metrics", "internal"]),
    (
        "FT_Open_Args",
        &[
            "flags",
            "memory_base",
            "memory_size",
            "pathname",
            "stream",
            "driver",
            "num_params",
            "params",
        ],
    ),
    ("FT_Parameter", &["tag", "data"]),
    (
        "FT_StreamRec",
        &[
            "base",
            "size",
            "pos",
            "descriptor",
            "pathname",
            "read",
            "close",
            "memory",
            "cursor",
            "limit",
        ],
    ),
    (
        "struct FT_MemoryRec_",
        &["user", "alloc", "free", "realloc"],
    ),
    (
        "FT_Outline_Funcs",
        &[
            "move_to", "line_to", "conic_to", "cubic_to", "shift", "delta",
        ],
    ),
    ("FT_GlyphRec", &["library", "clazz", "format", "advance"]),
    ("FT_BitmapGlyphRec", &["root", "left", "top", "bitmap"]),
    ("FT_OutlineGlyphRec", &["root", "outline"]),
    (
        "FT_Raster_Params",
        &[
            "target",
            "source",
            "flags",
            "gray_spans",
            "black_spans",
            "bit_test",
            "bit_set",
            "user",
            "clip_box",
        ],
    ),
    ("FT_Span", &["x", "len", "coverage"]),
];

/// Names of the values in the order the C program lists them.
fn names() -> Vec<String> {
    let mut v = Vec::new();
    for (ty, fields) in FIELDS {
        v.push(format!("sizeof({ty})"));
        v.extend(fields.iter().map(|f| format!("{ty}.{f}")));
    }
    v
}

fn c_program() -> String {
    let mut c = String::from(
        "#include <stddef.h>\n#include <ft2build.h>\n#include FT_FREETYPE_H\n\
         #include FT_GLYPH_H\n#include FT_OUTLINE_H\n#include FT_SYSTEM_H\n\
         #include FT_IMAGE_H\n\nconst unsigned long long aps5_layout[] = {\n",
    );
    for (ty, fields) in FIELDS {
        c.push_str(&format!("    sizeof({ty}),\n"));
        for f in *fields {
            c.push_str(&format!("    offsetof({ty}, {f}),\n"));
        }
    }
    c.push_str("};\n");
    c
}

/// Compiles the program for `target` and reads the array back from the object file.
fn layout_for(dir: &Path, target: &str) -> Vec<u64> {
    let src = dir.join("layout.c");
    std::fs::write(&src, c_program()).unwrap();
    let obj = dir.join(format!("{target}.o"));
    let include = Path::new("/usr/include/freetype2");
    assert!(
        include.join("ft2build.h").is_file(),
        "the FreeType headers are needed (/usr/include/freetype2): install libfreetype-dev"
    );
    let out = Command::new("clang-14")
        .arg(format!("--target={target}"))
        .args(["-c", "-O0", "-o"])
        .arg(&obj)
        .arg("-I")
        .arg(include)
        // FreeType's configuration includes a few C library headers (string.h, setjmp.h):
        // the host's are fine, none of their types is part of a public FreeType structure.
        .args([
            "-isystem",
            "/usr/include",
            "-isystem",
            "/usr/include/x86_64-linux-gnu",
        ])
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("clang-14 is needed by this test ({e}): install clang-14"));
    assert!(
        out.status.success(),
        "clang-14 --target={target} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&obj).unwrap();
    let elf = goblin::elf::Elf::parse(&bytes).unwrap();
    let sym = elf
        .syms
        .iter()
        .find(|s| elf.strtab.get_at(s.st_name) == Some("aps5_layout"))
        .expect("aps5_layout in the object");
    let section = &elf.section_headers[sym.st_shndx];
    let data = &bytes[section.sh_offset as usize..][..section.sh_size as usize];
    let start = sym.st_value as usize;
    let n = names().len();
    data[start..start + 8 * n]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn public_structures_have_the_same_layout_on_ps4_freebsd_and_linux() {
    let dir = tempfile::tempdir().unwrap();
    let names = names();
    let linux = layout_for(dir.path(), "x86_64-unknown-linux-gnu");
    let mut checked = 0;
    for target in ["x86_64-scei-ps4", "x86_64-unknown-freebsd12"] {
        let guest = layout_for(dir.path(), target);
        let diff: Vec<String> = names
            .iter()
            .zip(guest.iter().zip(&linux))
            .filter(|(_, (g, l))| g != l)
            .map(|(n, (g, l))| format!("{n}: {target} {g}, linux {l}"))
            .collect();
        assert!(diff.is_empty(), "layouts differ:\n{}", diff.join("\n"));
        checked += guest.len();
    }
    eprintln!(
        "{checked}/{checked} sizes and offsets equal ({} per target, {} structures)",
        names.len(),
        FIELDS.len()
    );

    // What the OpenOrbis keyboard sample's instructions read (docs/HOMEBREW.md): the
    // glyph slot pointer of the face, and the bitmap and metrics of the slot.
    let at = |n: &str| linux[names.iter().position(|x| x == n).unwrap()];
    assert_eq!(at("FT_FaceRec.glyph"), 152);
    let bitmap = at("FT_GlyphSlotRec.bitmap");
    assert_eq!(bitmap + at("FT_Bitmap.rows"), 152);
    assert_eq!(bitmap + at("FT_Bitmap.width"), 156);
    assert_eq!(bitmap + at("FT_Bitmap.buffer"), 168);
    assert_eq!(at("FT_GlyphSlotRec.bitmap_left"), 192);
    assert_eq!(at("FT_GlyphSlotRec.bitmap_top"), 196);
    assert_eq!(at("FT_GlyphSlotRec.advance"), 128);
}
