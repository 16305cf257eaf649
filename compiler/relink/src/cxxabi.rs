//! The C++ exception runtime of relinked programs: imports of the Itanium C++ ABI's
//! exception functions, the personality routine and the type_info objects/vtables are
//! bound, by their plain names, to the host's `libstdc++.so.6` (see docs/RELINK.md,
//! "C++ exceptions").
//!
//! Why the host library and not a PRX: the guest's own type_info objects point at the
//! `__cxxabiv1::*_type_info` vtables and the personality routine decides what a handler
//! catches by calling through those vtables and comparing type_info objects. The data
//! objects a guest references must therefore *be* the host runtime's objects, which a
//! Rust PRX cannot alias. The PS4/PS5 ABI is the same Itanium ABI on x86-64, so the guest's
//! exception tables, `__cxa_exception` use and type_info layout are the host's.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::PrxLibrary;

/// The file the loader finds the host C++ runtime under (a system library, not shipped).
pub const LIBSTDCXX: &str = "libstdc++.so.6";

/// Console libraries that export these names (libc.sprx and libSceLibcInternal.sprx).
const SERVED_BY: [&str; 2] = ["libc", "libSceLibcInternal"];

/// Functions and objects of the exception runtime, by mangled name.
const NAMES: &[&str] = &[
    // Itanium ABI, exception handling (2.4, 2.5).
    "__cxa_allocate_exception",
    "__cxa_free_exception",
    "__cxa_allocate_dependent_exception",
    "__cxa_free_dependent_exception",
    "__cxa_throw",
    "__cxa_begin_catch",
    "__cxa_end_catch",
    "__cxa_rethrow",
    "__cxa_get_exception_ptr",
    "__cxa_current_exception_type",
    "__cxa_call_unexpected",
    "__cxa_get_globals",
    "__cxa_get_globals_fast",
    "__cxa_bad_cast",
    "__cxa_bad_typeid",
    "__cxa_throw_bad_array_new_length",
    "__cxa_deleted_virtual",
    "__cxa_demangle",
    "__gxx_personality_v0",
    // std:: functions around it.
    "_ZSt9terminatev",
    "_ZSt13set_terminatePFvvE",
    "_ZSt13get_terminatev",
    "_ZSt10unexpectedv",
    "_ZSt14set_unexpectedPFvvE",
    "_ZSt18uncaught_exceptionv",
    "_ZSt19uncaught_exceptionsv",
    "_ZSt15set_new_handlerPFvvE",
    "_ZSt15get_new_handlerv",
    // The vtables of the type_info classes the compiler emits objects of.
    "_ZTVN10__cxxabiv117__class_type_infoE",
    "_ZTVN10__cxxabiv120__si_class_type_infoE",
    "_ZTVN10__cxxabiv121__vmi_class_type_infoE",
    "_ZTVN10__cxxabiv119__pointer_type_infoE",
    "_ZTVN10__cxxabiv129__pointer_to_member_type_infoE",
    "_ZTVN10__cxxabiv123__fundamental_type_infoE",
    "_ZTVN10__cxxabiv117__array_type_infoE",
    "_ZTVN10__cxxabiv120__function_type_infoE",
    "_ZTVN10__cxxabiv116__enum_type_infoE",
    // std::type_info.
    "_ZTISt9type_info",
    "_ZTSSt9type_info",
    "_ZTVSt9type_info",
    "_ZNSt9type_infoD0Ev",
    "_ZNSt9type_infoD1Ev",
    "_ZNSt9type_infoD2Ev",
];

/// The exception classes of `<exception>`, `<new>` and `<typeinfo>` (mangled class name):
/// type_info, its name, vtable, `what()` and destructors each.
const CLASSES: &[&str] = &[
    "St9exception",
    "St9bad_alloc",
    "St20bad_array_new_length",
    "St8bad_cast",
    "St10bad_typeid",
    "St13bad_exception",
];

/// Fundamental types whose type_info objects (also of `T*` and `const T*`) the runtime
/// defines (Itanium ABI 2.9.2): builtin type codes.
const FUNDAMENTAL: &[&str] = &[
    "v", "b", "c", "a", "h", "s", "t", "i", "j", "l", "m", "x", "y", "n", "o", "f", "d", "e", "g",
    "w", "Dn", "Ds", "Di", "Du",
];

/// Every host name the relinker binds to `libstdc++.so.6`.
pub fn host_names() -> Vec<String> {
    let mut v: Vec<String> = NAMES.iter().map(|s| (*s).to_owned()).collect();
    for c in CLASSES {
        for pre in ["_ZTI", "_ZTS", "_ZTV"] {
            v.push(format!("{pre}{c}"));
        }
        let (ns, rest) = c.split_at(2); // "St" + length-prefixed name
        v.push(format!("_ZNK{ns}{rest}4whatEv"));
        for d in ["D0Ev", "D1Ev", "D2Ev"] {
            v.push(format!("_ZN{ns}{rest}{d}"));
        }
    }
    for t in FUNDAMENTAL {
        for ptr in ["", "P", "PK"] {
            v.push(format!("_ZTI{ptr}{t}"));
            // libstdc++ does not export the name strings of the `D*` types.
            if !t.starts_with('D') {
                v.push(format!("_ZTS{ptr}{t}"));
            }
        }
    }
    v
}

/// The host C++ runtime as libraries of the set: one per console library that exports
/// these names, each NID mapped to the host name.
pub(crate) fn libraries() -> Vec<PrxLibrary> {
    let map: BTreeMap<String, String> = host_names()
        .into_iter()
        .map(|n| (aps5_nid::nid(&n), n))
        .collect();
    let map = Arc::new(map);
    SERVED_BY
        .iter()
        .map(|lib| PrxLibrary {
            library: (*lib).to_owned(),
            file_name: LIBSTDCXX.to_owned(),
            bytes: Arc::new(Vec::new()),
            exports: map.keys().cloned().collect(),
            host_names: Some(map.clone()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name is defined by the host's libstdc++ (what ld.so will bind it to).
    #[test]
    fn every_name_is_defined_by_the_host_runtime() {
        let so = std::ffi::CString::new(LIBSTDCXX).unwrap();
        let h = unsafe { libc::dlopen(so.as_ptr(), libc::RTLD_NOW) };
        assert!(!h.is_null(), "{LIBSTDCXX} is not installed on this host");
        let names = host_names();
        let missing: Vec<&String> = names
            .iter()
            .filter(|n| {
                let c = std::ffi::CString::new(n.as_str()).unwrap();
                unsafe { libc::dlsym(h, c.as_ptr()) }.is_null()
            })
            .collect();
        assert!(missing.is_empty(), "not in {LIBSTDCXX}: {missing:?}");
        assert!(names.len() > 150, "{} names", names.len());
    }

    /// In the installed set, a C++ ABI NID imported from either console library binds to
    /// libstdc++ by name; a NID libc.prx implements (operator new) stays with libc.prx;
    /// the host runtime is not among the files shipped in `libs/`.
    #[test]
    fn installed_set_binds_the_abi_to_the_host_runtime() {
        let set = crate::PrxSet::installed().unwrap();
        let throw = aps5_nid::nid("__cxa_throw");
        for lib in SERVED_BY {
            let l = set.find(lib, &throw).expect("bound");
            assert_eq!(l.file_name, LIBSTDCXX);
            let name = l.host_names.as_ref().and_then(|m| m.get(&throw));
            assert_eq!(name.map(String::as_str), Some("__cxa_throw"));
        }
        let new = set
            .find("libc", &aps5_nid::nid("_Znwm"))
            .expect("operator new");
        assert_eq!(new.file_name, "libc.prx");
        assert!(set.files().iter().all(|(f, _)| *f != LIBSTDCXX));
    }

    /// The NIDs are the console's (values from the ps4libdoc export tables of libc.sprx).
    #[test]
    fn nids_are_the_consoles() {
        let libs = libraries();
        assert_eq!(libs.len(), 2);
        let map = libs[0].host_names.as_ref().unwrap();
        for (nid, name) in [
            ("vkuuLfhnSZI", "__cxa_throw"),
            ("XwLA5cTHjt4", "__gxx_personality_v0"),
            ("St4apgcBNfo", "_ZTIi"),
            ("I4y33AOamns", "_ZTIPKc"),
            ("byV+FWlAnB4", "_ZTVN10__cxxabiv117__class_type_infoE"),
            ("DwH3gdbYfZo", "_ZTISt9bad_alloc"),
            ("apPZ6HKZWaQ", "_ZNKSt9exception4whatEv"),
            ("qYhnoevd9bI", "_ZSt9terminatev"),
            ("3cUUypQzMiI", "__cxa_begin_catch"),
        ] {
            assert_eq!(map.get(nid).map(String::as_str), Some(name), "{nid}");
        }
    }
}
