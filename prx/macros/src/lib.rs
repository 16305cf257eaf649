//! `#[nid("name")]`: export an item of a host PRX under the NID of a PS4/PS5 symbol name.
//!
//! The attribute computes `aps5_nid::nid(name)` at compile time and adds
//! `#[unsafe(export_name = "<NID>")]` to the item (a function or a static). The exported
//! dynamic symbol is then the 11-character NID, which no host library can define, so the
//! system loader binds a relinked game's `NID`-named imports to it and nothing else.
//!
//! `#[nid(raw = "hcuQgD53UxM")]` takes a NID directly, for functions whose name is unknown.

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

/// Exports the item under the NID of the given symbol name (see the crate docs).
#[proc_macro_attribute]
pub fn nid(attr: TokenStream, item: TokenStream) -> TokenStream {
    match parse_attr(attr) {
        Ok(nid) => {
            let mut out = export_name_attr(&nid);
            out.extend(item);
            out
        }
        Err(msg) => compile_error(&msg),
    }
}

/// Reads `"name"` or `raw = "NID"` and returns the NID.
fn parse_attr(attr: TokenStream) -> Result<String, String> {
    let tokens = flatten(attr);
    match tokens.as_slice() {
        [TokenTree::Literal(lit)] => Ok(aps5_nid::nid(&unquote(lit)?)),
        [
            TokenTree::Ident(key),
            TokenTree::Punct(eq),
            TokenTree::Literal(lit),
        ] if key.to_string() == "raw" && eq.as_char() == '=' => {
            let raw = unquote(lit)?;
            if aps5_nid::is_nid(&raw) {
                Ok(raw)
            } else {
                Err(format!(
                    "#[nid(raw = ...)]: `{raw}` is not an 11-character NID"
                ))
            }
        }
        _ => Err("expected #[nid(\"symbol_name\")] or #[nid(raw = \"NID\")]".to_owned()),
    }
}

/// Removes the invisible groups `macro_rules!` wraps around `$x:literal` fragments.
fn flatten(ts: TokenStream) -> Vec<TokenTree> {
    let mut out = Vec::new();
    for t in ts {
        match t {
            TokenTree::Group(g) if g.delimiter() == Delimiter::None => {
                out.extend(flatten(g.stream()))
            }
            t => out.push(t),
        }
    }
    out
}

fn unquote(lit: &Literal) -> Result<String, String> {
    let s = lit.to_string();
    if s.len() >= 2 && s.starts_with('"') && s.ends_with('"') && !s.contains('\\') {
        Ok(s[1..s.len() - 1].to_owned())
    } else {
        Err(format!(
            "#[nid]: expected a plain string literal, found {s}"
        ))
    }
}

/// `#[unsafe(export_name = "<nid>")]` as tokens.
fn export_name_attr(nid: &str) -> TokenStream {
    let inner: TokenStream = [
        TokenTree::Ident(Ident::new("export_name", Span::call_site())),
        TokenTree::Punct(Punct::new('=', Spacing::Alone)),
        TokenTree::Literal(Literal::string(nid)),
    ]
    .into_iter()
    .collect();
    let unsafe_call: TokenStream = [
        TokenTree::Ident(Ident::new("unsafe", Span::call_site())),
        TokenTree::Group(Group::new(Delimiter::Parenthesis, inner)),
    ]
    .into_iter()
    .collect();
    [
        TokenTree::Punct(Punct::new('#', Spacing::Alone)),
        TokenTree::Group(Group::new(Delimiter::Bracket, unsafe_call)),
    ]
    .into_iter()
    .collect()
}

fn compile_error(msg: &str) -> TokenStream {
    format!("compile_error!({msg:?});")
        .parse()
        .unwrap_or_default()
}

/// Reads `"name", <n>, path::to::impl` (the form shared by the trampoline macros).
fn parse_trampoline(
    input: TokenStream,
    want_count: bool,
) -> Result<(String, usize, String), String> {
    let mut parts: Vec<Vec<TokenTree>> = vec![Vec::new()];
    for t in input {
        match &t {
            TokenTree::Punct(p) if p.as_char() == ',' => parts.push(Vec::new()),
            _ => parts.last_mut().expect("never empty").push(t),
        }
    }
    parts.retain(|p| !p.is_empty());
    let expect = if want_count { 3 } else { 2 };
    if parts.len() != expect {
        return Err(if want_count {
            "expected variadic!(\"name\", <fixed argument count>, impl_fn)".to_owned()
        } else {
            "expected preserve_scratch!(\"name\", impl_fn)".to_owned()
        });
    }
    let name = match parts[0].as_slice() {
        [TokenTree::Literal(l)] => unquote(l)?,
        _ => return Err("the first argument must be the symbol name as a string".to_owned()),
    };
    let count = if want_count {
        match parts[1].as_slice() {
            [TokenTree::Literal(l)] => l
                .to_string()
                .parse::<usize>()
                .map_err(|_| format!("bad fixed argument count {l}"))?,
            _ => return Err("the second argument must be an integer".to_owned()),
        }
    } else {
        0
    };
    let path: TokenStream = parts[expect - 1].iter().cloned().collect();
    Ok((aps5_nid::nid(&name), count, path.to_string()))
}

/// Emits an exported naked function `NID(name)` for a C variadic function with `n`
/// fixed integer/pointer arguments (1..=5). It spills the argument registers into a SysV
/// register save area, builds a `va_list` for the variable part and calls
/// `impl_fn(fixed..., va_list *)`; the return value passes through.
///
/// `variadic!("printf", 1, printf_impl);` exports `hcuQgD53UxM`, which calls
/// `printf_impl(fmt, ap)` where `ap: *mut VaListRaw`.
#[proc_macro]
pub fn variadic(input: TokenStream) -> TokenStream {
    let (nid, fixed, path) = match parse_trampoline(input, true) {
        Ok(v) => v,
        Err(e) => return compile_error(&e),
    };
    const REGS: [&str; 6] = ["rdi", "rsi", "rdx", "rcx", "r8", "r9"];
    if fixed == 0 || fixed >= REGS.len() {
        return compile_error("variadic!: the fixed argument count must be 1..=5");
    }
    let ap_reg = REGS[fixed];
    let gp = fixed * 8;
    let asm = format!(
        r#"#[unsafe(naked)]
#[unsafe(export_name = "{export}")]
#[doc(hidden)]
pub unsafe extern "C" fn {ident}() {{ ::core::arch::naked_asm!(
    "push rbp",
    "mov rbp, rsp",
    "sub rsp, 208",
    "mov [rsp], rdi",
    "mov [rsp+8], rsi",
    "mov [rsp+16], rdx",
    "mov [rsp+24], rcx",
    "mov [rsp+32], r8",
    "mov [rsp+40], r9",
    "test al, al",
    "je 2f",
    "movaps [rsp+48], xmm0",
    "movaps [rsp+64], xmm1",
    "movaps [rsp+80], xmm2",
    "movaps [rsp+96], xmm3",
    "movaps [rsp+112], xmm4",
    "movaps [rsp+128], xmm5",
    "movaps [rsp+144], xmm6",
    "movaps [rsp+160], xmm7",
    "2:",
    "mov dword ptr [rsp+176], {gp}",
    "mov dword ptr [rsp+180], 48",
    "lea rax, [rbp+16]",
    "mov [rsp+184], rax",
    "mov [rsp+192], rsp",
    "lea {ap_reg}, [rsp+176]",
    "call {{imp}}",
    "leave",
    "ret",
    imp = sym {path},
) }}"#,
        ident = ident(&nid),
        export = trampoline_symbol(&nid),
    );
    asm.parse()
        .unwrap_or_else(|_| compile_error("variadic!: internal token error"))
}

/// Emits an exported naked function `NID(name)` that calls `impl_fn` with the same
/// arguments but keeps r8-r11 intact for the caller. OpenOrbis' crt0 keeps argc/argv in
/// r8-r10 across its calls to `_init_env` and `atexit`, which Sony's libc tolerates.
#[proc_macro]
pub fn preserve_scratch(input: TokenStream) -> TokenStream {
    let (nid, _, path) = match parse_trampoline(input, false) {
        Ok(v) => v,
        Err(e) => return compile_error(&e),
    };
    let asm = format!(
        r#"#[unsafe(naked)]
#[unsafe(export_name = "{export}")]
#[doc(hidden)]
pub unsafe extern "C" fn {ident}() {{ ::core::arch::naked_asm!(
    "push r8",
    "push r9",
    "push r10",
    "push r11",
    "sub rsp, 8",
    "call {{imp}}",
    "add rsp, 8",
    "pop r11",
    "pop r10",
    "pop r9",
    "pop r8",
    "ret",
    imp = sym {path},
) }}"#,
        ident = ident(&nid),
        export = trampoline_symbol(&nid),
    );
    asm.parse()
        .unwrap_or_else(|_| compile_error("preserve_scratch!: internal token error"))
}

/// The pre-rename symbol of a trampoline made by `variadic!` / `preserve_scratch!`, as a
/// string literal (for tests that call the trampoline inside the crate).
#[proc_macro]
pub fn trampoline_str(input: TokenStream) -> TokenStream {
    let tokens = flatten(input);
    match tokens.as_slice() {
        [TokenTree::Literal(l)] => match unquote(l) {
            Ok(name) => {
                TokenTree::Literal(Literal::string(&trampoline_symbol(&aps5_nid::nid(&name))))
                    .into()
            }
            Err(e) => compile_error(&e),
        },
        _ => compile_error("expected trampoline_str!(\"symbol_name\")"),
    }
}

/// A NID as a string literal (for tests and tables).
#[proc_macro]
pub fn nid_str(input: TokenStream) -> TokenStream {
    let tokens = flatten(input);
    match tokens.as_slice() {
        [TokenTree::Literal(l)] => match unquote(l) {
            Ok(name) => TokenTree::Literal(Literal::string(&aps5_nid::nid(&name))).into(),
            Err(e) => compile_error(&e),
        },
        _ => compile_error("expected nid_str!(\"symbol_name\")"),
    }
}

/// The symbol a naked trampoline is exported under before the post-link rename.
///
/// rustc writes a naked function's symbol into assembly unquoted, so a NID containing `+`
/// or `-` cannot be its name. Trampolines are therefore exported as
/// `__aps5_nid_<NID with + -> _P and - -> _M>` and the PRX build renames them to the
/// NID afterwards (`aps5_relink::prxfix`; a NID never contains `_`, so this is reversible).
fn trampoline_symbol(nid: &str) -> String {
    let mut s = String::from(TRAMPOLINE_PREFIX);
    for c in nid.chars() {
        match c {
            '+' => s.push_str("_P"),
            '-' => s.push_str("_M"),
            c => s.push(c),
        }
    }
    s
}

/// Prefix of trampoline symbols awaiting the post-link rename.
const TRAMPOLINE_PREFIX: &str = "__aps5_nid_";

/// A Rust identifier unique to a NID (NIDs contain `+` and `-`).
fn ident(nid: &str) -> String {
    let hex: String = nid.bytes().map(|b| format!("{b:02x}")).collect();
    format!("aps5_trampoline_{hex}")
}
