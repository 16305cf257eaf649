//! Keyboard keys -> pad buttons: the default mapping, key names, and the `APS5_KEYMAP`
//! override text that `aps5 run` builds from the `[input]` section of `aps5.toml`.
//!
//! This file has no dependencies: `compiler/graph` includes it (`#[path]`) to check
//! `[input]` at `aps5 build`/`run` time with exactly the rules the PRX applies.
//!
//! Key names are X11 keysym names, matched without regard to case: `Up`, `Return`, `x`,
//! `F1`, `Shift_L`, ... ([`KEYS`]). Button names are libScePad's ([`PAD_BUTTONS`]).

/// Pad button names and their `SCE_PAD_BUTTON_*` bits (the names of the input script).
pub const PAD_BUTTONS: &[(&str, u32)] = &[
    ("l3", 0x0002),
    ("r3", 0x0004),
    ("options", 0x0008),
    ("up", 0x0010),
    ("right", 0x0020),
    ("down", 0x0040),
    ("left", 0x0080),
    ("l2", 0x0100),
    ("r2", 0x0200),
    ("l1", 0x0400),
    ("r1", 0x0800),
    ("triangle", 0x1000),
    ("circle", 0x2000),
    ("cross", 0x4000),
    ("square", 0x8000),
    ("touchpad", 0x0010_0000),
];

/// Named keys and their X11 keysyms (letters and digits are added by [`keysym`]).
pub const KEYS: &[(&str, u32)] = &[
    ("BackSpace", 0xff08),
    ("Tab", 0xff09),
    ("Return", 0xff0d),
    ("Escape", 0xff1b),
    ("space", 0x0020),
    ("Home", 0xff50),
    ("Left", 0xff51),
    ("Up", 0xff52),
    ("Right", 0xff53),
    ("Down", 0xff54),
    ("Page_Up", 0xff55),
    ("Page_Down", 0xff56),
    ("End", 0xff57),
    ("Insert", 0xff63),
    ("Delete", 0xffff),
    ("KP_Enter", 0xff8d),
    ("Shift_L", 0xffe1),
    ("Shift_R", 0xffe2),
    ("Control_L", 0xffe3),
    ("Control_R", 0xffe4),
    ("Alt_L", 0xffe9),
    ("Alt_R", 0xffea),
    ("F1", 0xffbe),
    ("F2", 0xffbf),
    ("F3", 0xffc0),
    ("F4", 0xffc1),
    ("F5", 0xffc2),
    ("F6", 0xffc3),
    ("F7", 0xffc4),
    ("F8", 0xffc5),
    ("F9", 0xffc6),
    ("F10", 0xffc7),
    ("F11", 0xffc8),
    ("F12", 0xffc9),
];

/// The default mapping: each button and its keys (docs/HOMEBREW.md lists it too).
pub const DEFAULT: &[(&str, &[&str])] = &[
    ("up", &["Up"]),
    ("down", &["Down"]),
    ("left", &["Left"]),
    ("right", &["Right"]),
    ("cross", &["Return", "x"]),
    ("circle", &["Escape", "c"]),
    ("square", &["z"]),
    ("triangle", &["s"]),
    ("l1", &["q"]),
    ("r1", &["e"]),
    ("l2", &["1"]),
    ("r2", &["3"]),
    ("l3", &["f"]),
    ("r3", &["g"]),
    ("options", &["Tab"]),
    ("touchpad", &["t"]),
];

/// The keysym of a key name (case-insensitive): a [`KEYS`] name, one letter `a`-`z` or one
/// digit `0`-`9`.
pub fn keysym(name: &str) -> Option<u32> {
    if let [c] = name.as_bytes() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            return Some(u32::from(c));
        }
    }
    KEYS.iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, k)| k)
}

/// The `SCE_PAD_BUTTON_*` bit of a button name (case-insensitive).
pub fn button(name: &str) -> Option<u32> {
    PAD_BUTTONS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, b)| b)
}

/// Checks one button's key list; the error names the button and the bad key.
pub fn check_entry(button_name: &str, keys: &[String]) -> Result<(), String> {
    if button(button_name).is_none() {
        return Err(format!(
            "unknown pad button `{button_name}` (known: {})",
            PAD_BUTTONS
                .iter()
                .map(|b| b.0)
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    for k in keys {
        if keysym(k).is_none() {
            return Err(format!(
                "{button_name}: unknown key `{k}` (a letter, a digit or one of: {})",
                KEYS.iter().map(|k| k.0).collect::<Vec<_>>().join(" ")
            ));
        }
    }
    Ok(())
}

/// Renders overrides as `APS5_KEYMAP` text: `button=Key,Key;button=;...` (an empty list
/// leaves the button without keys).
pub fn to_env<'a>(overrides: impl IntoIterator<Item = (&'a str, &'a [String])>) -> String {
    overrides
        .into_iter()
        .map(|(b, keys)| format!("{b}={}", keys.join(",")))
        .collect::<Vec<_>>()
        .join(";")
}

/// A complete mapping: (keysym, button bits) pairs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keymap(pub Vec<(u32, u32)>);

impl Keymap {
    /// The default mapping with the overrides of an `APS5_KEYMAP` text applied: a button
    /// named there gets exactly the keys listed (replacing its defaults).
    pub fn parse(overrides: &str) -> Result<Keymap, String> {
        let mut map: Vec<(String, Vec<String>)> = DEFAULT
            .iter()
            .map(|(b, keys)| (b.to_string(), keys.iter().map(|k| k.to_string()).collect()))
            .collect();
        for entry in overrides
            .split(';')
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let Some((b, keys)) = entry.split_once('=') else {
                return Err(format!("`{entry}`: expected button=Key,Key"));
            };
            let b = b.trim().to_ascii_lowercase();
            let keys: Vec<String> = keys
                .split(',')
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .map(str::to_owned)
                .collect();
            check_entry(&b, &keys)?;
            match map.iter_mut().find(|(n, _)| *n == b) {
                Some(slot) => slot.1 = keys,
                None => map.push((b, keys)),
            }
        }
        let mut pairs = Vec::new();
        for (b, keys) in &map {
            let bit = button(b).expect("checked above");
            for k in keys {
                pairs.push((keysym(k).expect("checked above"), bit));
            }
        }
        Ok(Keymap(pairs))
    }

    /// The buttons held while the keys in `down` (keysyms) are held.
    pub fn buttons(&self, down: &[u32]) -> u32 {
        self.0
            .iter()
            .filter(|(k, _)| down.contains(k))
            .fold(0, |acc, &(_, b)| acc | b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_mapping_is_valid_and_covers_every_button() {
        let m = Keymap::parse("").unwrap();
        for (name, bit) in PAD_BUTTONS {
            assert!(m.0.iter().any(|&(_, b)| b == *bit), "{name} has no key");
        }
        // Arrows drive the d-pad, Return and x press cross.
        assert_eq!(m.buttons(&[0xff52]), 0x10);
        assert_eq!(m.buttons(&[0xff0d]), 0x4000);
        assert_eq!(m.buttons(&[u32::from(b'x'), 0xff51]), 0x4000 | 0x80);
        assert_eq!(m.buttons(&[0xffc9]), 0);
    }

    #[test]
    fn overrides_replace_a_buttons_keys() {
        let m = Keymap::parse("cross=space, KP_Enter; circle=").unwrap();
        assert_eq!(m.buttons(&[0xff0d]), 0, "Return no longer presses cross");
        assert_eq!(m.buttons(&[0x20]), 0x4000);
        assert_eq!(m.buttons(&[0xff8d]), 0x4000);
        assert_eq!(m.buttons(&[0xff1b]), 0, "circle has no keys");
        assert_eq!(m.buttons(&[0xff52]), 0x10, "others keep their defaults");
        assert_eq!(keysym("RETURN"), Some(0xff0d));
        assert_eq!(keysym("Q"), Some(u32::from(b'q')));
    }

    #[test]
    fn errors_name_the_button_and_the_key() {
        let e = Keymap::parse("cross=Retrun").unwrap_err();
        assert!(e.contains("cross: unknown key `Retrun`"), "{e}");
        let e = Keymap::parse("jump=x").unwrap_err();
        assert!(e.contains("unknown pad button `jump`"), "{e}");
        assert!(Keymap::parse("cross").unwrap_err().contains("button=Key"));
    }

    #[test]
    fn env_text_round_trips() {
        let keys = ["space".to_string(), "x".to_string()];
        let none: Vec<String> = Vec::new();
        let text = to_env([("cross", &keys[..]), ("circle", &none[..])]);
        assert_eq!(text, "cross=space,x;circle=");
        let m = Keymap::parse(&text).unwrap();
        assert_eq!(m.buttons(&[0x20, 0xff1b]), 0x4000);
    }
}
