//! Host PRX `libSceFreeType.prx`: the PS4's `libSceFreeType` served by the system's
//! FreeType (`libfreetype.so.6`, linked through `freetype-sys`).
//!
//! Sony's library is a build of FreeType 2 that exports FreeType's public API under its
//! own names. The PS4 is LP64 (FreeBSD amd64, SysV calling convention) like x86-64
//! Linux, so every public structure (`FT_FaceRec`, `FT_GlyphSlotRec`, `FT_Bitmap`,
//! `FT_Outline`, `FT_Open_Args`, ...) has the same layout on both; a guest reads them
//! straight from the host library's memory (checked by `tests/layout.rs` against the PS4
//! and FreeBSD targets of clang and the offsets the OpenOrbis keyboard sample reads).
//!
//! So most functions are exported as tail jumps ([`forward!`]): the NID-named symbol
//! jumps to the host function with every register and the stack untouched, whatever its
//! signature. The functions that take a file name ([`ft_new_face`], [`ft_open_face`],
//! [`ft_attach_file`], [`ft_attach_stream`]) are real wrappers: the name is a guest
//! path (`/app0/font.ttf`), opened through libkernel's `open` (its path map and
//! confinement) and handed to FreeType as `/proc/self/fd/N`. FreeType maps the file and
//! closes its own descriptor, so the wrapper closes its one when the call returns.
//!
//! FreeType's internal functions that Sony also exports (`FT_Stream_*`, `FT_Alloc`,
//! `FT_GlyphLoader_*`, ...) are not exported by the host library and are not served:
//! the relinker's stub reports them if a program calls one. See docs/PRX.md.

// The exported functions are called by guest code with raw pointers; their safety contract
// is FreeType's documented C one.
#![allow(clippy::missing_safety_doc)]

// libgcc_s.so.1 bound at first use, not at start-up (aps5_prx_abi::libgcc_s).
aps5_prx_abi::lazy_libgcc_s!();

use std::ffi::{CStr, c_char};
use std::sync::OnceLock;

use aps5_prx_macros::{nid, trampoline_str};
use freetype_sys::{
    FT_Error, FT_Face, FT_Library, FT_Long, FT_OPEN_MEMORY, FT_OPEN_PATHNAME, FT_OPEN_STREAM,
    FT_Open_Args,
};

/// `FT_Err_Cannot_Open_Resource`: what FreeType returns when a file cannot be opened.
pub const FT_ERR_CANNOT_OPEN_RESOURCE: FT_Error = 0x01;
/// `FT_Err_Invalid_Argument`.
pub const FT_ERR_INVALID_ARGUMENT: FT_Error = 0x06;

/// Exports each named FreeType function under its NID as a naked tail jump to the host
/// library's function of the same name (through the PLT). Nothing is touched, so this is
/// exact for any signature; it relies on the PS4 and host ABIs and structure layouts
/// being the same (see the crate docs).
macro_rules! forward {
    ($($name:literal),* $(,)?) => {
        $(
            const _: () = {
                #[unsafe(naked)]
                #[unsafe(export_name = trampoline_str!($name))]
                unsafe extern "C" fn forward() {
                    core::arch::naked_asm!(concat!("jmp ", $name, "@PLT"))
                }
            };
        )*
        /// Names of the functions exported as tail jumps to the host library.
        pub const FORWARDED: &[&str] = &[$($name),*];
    };
}

// Every function of Sony's libSceFreeType (firmware 9.00 export list) that the host
// library also exports, except the four that take a file name (wrapped below).
forward!(
    "FT_Activate_Size",
    "FT_Add_Default_Modules",
    "FT_Add_Module",
    "FT_Angle_Diff",
    "FT_Atan2",
    "FT_Bitmap_Convert",
    "FT_Bitmap_Copy",
    "FT_Bitmap_Done",
    "FT_Bitmap_Embolden",
    "FT_Bitmap_New",
    "FT_CeilFix",
    "FT_ClassicKern_Free",
    "FT_ClassicKern_Validate",
    "FT_Cos",
    "FT_DivFix",
    "FT_Done_Face",
    "FT_Done_FreeType",
    "FT_Done_Glyph",
    "FT_Done_Library",
    "FT_Done_Size",
    "FT_Face_CheckTrueTypePatents",
    "FT_Face_GetCharVariantIndex",
    "FT_Face_GetCharVariantIsDefault",
    "FT_Face_GetCharsOfVariant",
    "FT_Face_GetVariantSelectors",
    "FT_Face_GetVariantsOfChar",
    "FT_Face_SetUnpatentedHinting",
    "FT_FloorFix",
    "FT_Get_Advance",
    "FT_Get_Advances",
    "FT_Get_CID_From_Glyph_Index",
    "FT_Get_CID_Is_Internally_CID_Keyed",
    "FT_Get_CID_Registry_Ordering_Supplement",
    "FT_Get_CMap_Format",
    "FT_Get_CMap_Language_ID",
    "FT_Get_Char_Index",
    "FT_Get_Charmap_Index",
    "FT_Get_FSType_Flags",
    "FT_Get_First_Char",
    "FT_Get_Gasp",
    "FT_Get_Glyph",
    "FT_Get_Glyph_Name",
    "FT_Get_Kerning",
    "FT_Get_MM_Var",
    "FT_Get_Module",
    "FT_Get_Multi_Master",
    "FT_Get_Name_Index",
    "FT_Get_Next_Char",
    "FT_Get_PFR_Advance",
    "FT_Get_PFR_Kerning",
    "FT_Get_PFR_Metrics",
    "FT_Get_PS_Font_Info",
    "FT_Get_PS_Font_Private",
    "FT_Get_PS_Font_Value",
    "FT_Get_Postscript_Name",
    "FT_Get_Renderer",
    "FT_Get_Sfnt_Name",
    "FT_Get_Sfnt_Name_Count",
    "FT_Get_Sfnt_Table",
    "FT_Get_SubGlyph_Info",
    "FT_Get_Track_Kerning",
    "FT_Get_TrueType_Engine_Type",
    "FT_Get_X11_Font_Format",
    "FT_GlyphSlot_Embolden",
    "FT_GlyphSlot_Oblique",
    "FT_GlyphSlot_Own_Bitmap",
    "FT_Glyph_Copy",
    "FT_Glyph_Get_CBox",
    "FT_Glyph_Stroke",
    "FT_Glyph_StrokeBorder",
    "FT_Glyph_To_Bitmap",
    "FT_Glyph_Transform",
    "FT_Has_PS_Glyph_Names",
    "FT_Init_FreeType",
    "FT_Library_SetLcdFilter",
    "FT_Library_SetLcdFilterWeights",
    "FT_Library_Version",
    "FT_List_Add",
    "FT_List_Finalize",
    "FT_List_Find",
    "FT_List_Insert",
    "FT_List_Iterate",
    "FT_List_Remove",
    "FT_List_Up",
    "FT_Load_Char",
    "FT_Load_Glyph",
    "FT_Load_Sfnt_Table",
    "FT_Matrix_Invert",
    "FT_Matrix_Multiply",
    "FT_MulDiv",
    "FT_MulFix",
    "FT_New_Library",
    "FT_New_Memory_Face",
    "FT_New_Size",
    "FT_OpenType_Free",
    "FT_OpenType_Validate",
    "FT_Outline_Check",
    "FT_Outline_Copy",
    "FT_Outline_Decompose",
    "FT_Outline_Done",
    "FT_Outline_Embolden",
    "FT_Outline_EmboldenXY",
    "FT_Outline_GetInsideBorder",
    "FT_Outline_GetOutsideBorder",
    "FT_Outline_Get_BBox",
    "FT_Outline_Get_Bitmap",
    "FT_Outline_Get_CBox",
    "FT_Outline_Get_Orientation",
    "FT_Outline_New",
    "FT_Outline_Render",
    "FT_Outline_Reverse",
    "FT_Outline_Transform",
    "FT_Outline_Translate",
    "FT_Property_Get",
    "FT_Property_Set",
    "FT_Reference_Face",
    "FT_Reference_Library",
    "FT_Remove_Module",
    "FT_Render_Glyph",
    "FT_Request_Size",
    "FT_RoundFix",
    "FT_Select_Charmap",
    "FT_Select_Size",
    "FT_Set_Char_Size",
    "FT_Set_Charmap",
    "FT_Set_Debug_Hook",
    "FT_Set_MM_Blend_Coordinates",
    "FT_Set_MM_Design_Coordinates",
    "FT_Set_Pixel_Sizes",
    "FT_Set_Renderer",
    "FT_Set_Transform",
    "FT_Set_Var_Blend_Coordinates",
    "FT_Set_Var_Design_Coordinates",
    "FT_Sfnt_Table_Info",
    "FT_Sin",
    "FT_Stroker_BeginSubPath",
    "FT_Stroker_ConicTo",
    "FT_Stroker_CubicTo",
    "FT_Stroker_Done",
    "FT_Stroker_EndSubPath",
    "FT_Stroker_Export",
    "FT_Stroker_ExportBorder",
    "FT_Stroker_GetBorderCounts",
    "FT_Stroker_GetCounts",
    "FT_Stroker_LineTo",
    "FT_Stroker_New",
    "FT_Stroker_ParseOutline",
    "FT_Stroker_Rewind",
    "FT_Stroker_Set",
    "FT_Tan",
    "FT_TrueTypeGX_Free",
    "FT_TrueTypeGX_Validate",
    "FT_Vector_From_Polar",
    "FT_Vector_Length",
    "FT_Vector_Polarize",
    "FT_Vector_Rotate",
    "FT_Vector_Transform",
    "FT_Vector_Unit",
);

/// libkernel's `open` (FreeBSD flags; guest paths mapped and confined), found by NID at
/// first use; the host `open` when libkernel is not loaded (then the path is a host path).
fn guest_open(path: *const c_char) -> i32 {
    static F: OnceLock<usize> = OnceLock::new();
    let f = *F.get_or_init(|| {
        let nid = c"wuCroIGjt2g"; // aps5_nid::nid("open"), checked by a unit test
        unsafe { libc::dlsym(libc::RTLD_DEFAULT, nid.as_ptr()) as usize }
    });
    if f == 0 {
        unsafe { libc::open(path, libc::O_RDONLY | libc::O_CLOEXEC) }
    } else {
        // O_RDONLY is 0 on FreeBSD too.
        let f: extern "C" fn(*const c_char, i32, u32) -> i32 = unsafe { std::mem::transmute(f) };
        f(path, 0, 0)
    }
}

/// A guest file opened for FreeType: `/proc/self/fd/N` names it for the host library;
/// the descriptor is closed on drop (FreeType keeps its own mapping of the file).
struct GuestFile {
    fd: i32,
    host_name: &'static CStr,
}

/// `/proc/self/fd/N`, kept for the life of the process: FreeType stores the name's pointer
/// in the face's stream (`face->stream->pathname`), so it must stay valid after the call.
/// One string per descriptor number, so this stays as small as the descriptor table.
fn fd_name(fd: i32) -> &'static CStr {
    static NAMES: std::sync::Mutex<Vec<Option<&'static CStr>>> = std::sync::Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let i = fd as usize;
    if names.len() <= i {
        names.resize(i + 1, None);
    }
    names[i].get_or_insert_with(|| {
        let s = std::ffi::CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL");
        Box::leak(s.into_boxed_c_str())
    })
}

impl GuestFile {
    /// Opens the guest path, or returns the FreeType error for an unopenable resource.
    fn open(path: *const c_char) -> Result<GuestFile, FT_Error> {
        if path.is_null() {
            return Err(FT_ERR_INVALID_ARGUMENT);
        }
        let fd = guest_open(path);
        if fd < 0 {
            return Err(FT_ERR_CANNOT_OPEN_RESOURCE);
        }
        Ok(GuestFile {
            fd,
            host_name: fd_name(fd),
        })
    }
}

impl Drop for GuestFile {
    fn drop(&mut self) {
        unsafe { libc::close(self.fd) };
    }
}

/// The guest path as text, for diagnostics.
fn show(path: *const c_char) -> String {
    if path.is_null() {
        return "(null)".into();
    }
    unsafe { CStr::from_ptr(path) }
        .to_string_lossy()
        .into_owned()
}

/// Says on stderr that a font file could not be opened (FreeType itself only returns an
/// error code, and a missing font is the usual reason a ported program shows no text).
fn report_unopenable(func: &str, path: *const c_char) {
    let line = format!(
        "aps5: {func}: cannot open {:?} (guest path; /app0 is the app0/ folder of the build)\n",
        show(path)
    );
    unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
}

/// `FT_New_Face(library, filepathname, face_index, aface)`: `filepathname` is a guest
/// path.
#[nid("FT_New_Face")]
pub unsafe extern "C" fn ft_new_face(
    library: FT_Library,
    path: *const c_char,
    face_index: FT_Long,
    aface: *mut FT_Face,
) -> FT_Error {
    match GuestFile::open(path) {
        Ok(f) => unsafe {
            freetype_sys::FT_New_Face(library, f.host_name.as_ptr(), face_index, aface)
        },
        Err(e) => {
            report_unopenable("FT_New_Face", path);
            if !aface.is_null() {
                unsafe { *aface = std::ptr::null_mut() };
            }
            e
        }
    }
}

/// Calls `f` with `args`, whose `pathname` (when it is what FreeType will open) is
/// replaced by the host name of the opened guest file.
unsafe fn with_mapped_args(
    func: &str,
    args: *const FT_Open_Args,
    f: impl FnOnce(*const FT_Open_Args) -> FT_Error,
) -> FT_Error {
    if args.is_null() {
        return f(args);
    }
    let a = unsafe { args.read() };
    // FreeType opens `pathname` only when neither memory nor a stream is given.
    if a.flags & (FT_OPEN_MEMORY | FT_OPEN_STREAM) != 0 || a.flags & FT_OPEN_PATHNAME == 0 {
        return f(args);
    }
    match GuestFile::open(a.pathname) {
        Ok(file) => {
            let mapped = FT_Open_Args {
                pathname: file.host_name.as_ptr() as *mut c_char,
                ..a
            };
            f(&mapped)
        }
        Err(e) => {
            report_unopenable(func, a.pathname);
            e
        }
    }
}

/// `FT_Open_Face(library, args, face_index, aface)`: an `FT_OPEN_PATHNAME` name is a
/// guest path.
#[nid("FT_Open_Face")]
pub unsafe extern "C" fn ft_open_face(
    library: FT_Library,
    args: *const FT_Open_Args,
    face_index: FT_Long,
    aface: *mut FT_Face,
) -> FT_Error {
    unsafe {
        with_mapped_args("FT_Open_Face", args, |a| {
            freetype_sys::FT_Open_Face(library, a, face_index, aface)
        })
    }
}

/// `FT_Attach_File(face, filepathname)`: `filepathname` is a guest path.
#[nid("FT_Attach_File")]
pub unsafe extern "C" fn ft_attach_file(face: FT_Face, path: *const c_char) -> FT_Error {
    match GuestFile::open(path) {
        Ok(f) => unsafe { freetype_sys::FT_Attach_File(face, f.host_name.as_ptr()) },
        Err(e) => {
            report_unopenable("FT_Attach_File", path);
            e
        }
    }
}

/// `FT_Attach_Stream(face, parameters)`: an `FT_OPEN_PATHNAME` name is a guest path.
#[nid("FT_Attach_Stream")]
pub unsafe extern "C" fn ft_attach_stream(face: FT_Face, args: *mut FT_Open_Args) -> FT_Error {
    unsafe {
        with_mapped_args("FT_Attach_Stream", args, |a| {
            freetype_sys::FT_Attach_Stream(face, a as *mut FT_Open_Args)
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_open_nid_is_libkernels() {
        assert_eq!(aps5_prx_macros::nid_str!("open"), "wuCroIGjt2g");
    }

    #[test]
    fn forwarded_names_are_sorted_and_unique_and_exclude_the_wrapped_ones() {
        let f = super::FORWARDED;
        assert!(f.windows(2).all(|w| w[0] < w[1]), "keep the list sorted");
        for wrapped in [
            "FT_New_Face",
            "FT_Open_Face",
            "FT_Attach_File",
            "FT_Attach_Stream",
        ] {
            assert!(!f.contains(&wrapped));
        }
        assert_eq!(f.len(), 158);
    }
}
