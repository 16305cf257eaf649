//! `libSceSystemService`: what a game asks the system at start and once a frame.
//!
//! The system settings (`sceSystemServiceParamGetInt`/`GetString`) come from the host: the
//! language and date/time formats from the locale variables (`LC_ALL`, `LC_MESSAGES`,
//! `LANG`), the time zone and summer time from the host's local time, the system name from
//! the host name. There is no system UI, so the status never shows an overlay and no system
//! event ever arrives.

use aps5_prx_macros::nid;

/// `SCE_SYSTEM_SERVICE_ERROR_PARAMETER`.
pub const ERROR_PARAMETER: i32 = 0x80A1_0003_u32 as i32;
/// `SCE_SYSTEM_SERVICE_ERROR_NO_EVENT`.
pub const ERROR_NO_EVENT: i32 = 0x80A1_0004_u32 as i32;

/// `SCE_SYSTEM_SERVICE_PARAM_ID_*`.
pub mod param {
    pub const LANG: i32 = 1;
    pub const DATE_FORMAT: i32 = 2;
    pub const TIME_FORMAT: i32 = 3;
    pub const TIME_ZONE: i32 = 4;
    pub const SUMMERTIME: i32 = 5;
    pub const SYSTEM_NAME: i32 = 6;
    pub const GAME_PARENTAL_LEVEL: i32 = 7;
    pub const ENTER_BUTTON_ASSIGN: i32 = 1000;
}

/// `SCE_SYSTEM_PARAM_LANG_*` by locale language (and territory where the SDK tells them
/// apart). Unknown languages are US English, the console's default.
fn language_id(locale: &str) -> i32 {
    let (lang, territory) = split_locale(locale);
    match (lang, territory) {
        ("ja", _) => 0,
        ("en", "GB" | "IE" | "AU" | "NZ" | "IN" | "ZA") => 18,
        ("en", _) => 1,
        ("fr", "CA") => 22,
        ("fr", _) => 2,
        ("es", "ES" | "") => 3,
        ("es", _) => 20,
        ("de", _) => 4,
        ("it", _) => 5,
        ("nl", _) => 6,
        ("pt", "BR") => 17,
        ("pt", _) => 7,
        ("ru", _) => 8,
        ("ko", _) => 9,
        ("zh", "TW" | "HK" | "MO") => 10,
        ("zh", _) => 11,
        ("fi", _) => 12,
        ("sv", _) => 13,
        ("da", _) => 14,
        ("nb" | "nn" | "no", _) => 15,
        ("pl", _) => 16,
        ("tr", _) => 19,
        ("ar", _) => 21,
        ("cs", _) => 23,
        ("hu", _) => 24,
        ("el", _) => 25,
        ("ro", _) => 26,
        ("th", _) => 27,
        ("vi", _) => 28,
        ("id", _) => 29,
        _ => 1,
    }
}

/// `ll_TT.codeset@modifier` -> (`ll`, `TT`).
fn split_locale(locale: &str) -> (&str, &str) {
    let base = locale.split(['.', '@']).next().unwrap_or("");
    let mut parts = base.splitn(2, '_');
    (parts.next().unwrap_or(""), parts.next().unwrap_or(""))
}

/// The host locale that names the user's language, as POSIX orders the variables.
fn host_locale() -> String {
    ["LC_ALL", "LC_MESSAGES", "LANG"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.is_empty())
        .unwrap_or_default()
}

/// `SCE_SYSTEM_PARAM_DATE_FORMAT_*`: YYYYMMDD 0 (East Asia), DDMMYYYY 1, MMDDYYYY 2 (US).
fn date_format(locale: &str) -> i32 {
    match split_locale(locale) {
        ("ja" | "zh" | "ko" | "hu" | "lt" | "sv", _) => 0,
        ("en", "US" | "") | ("", _) => 2,
        _ => 1,
    }
}

/// `SCE_SYSTEM_PARAM_TIME_FORMAT_*`: 12-hour 0 where that is the custom, else 24-hour 1.
fn time_format(locale: &str) -> i32 {
    match split_locale(locale) {
        ("en", "US" | "CA" | "AU" | "NZ" | "IN" | "") | ("", _) => 0,
        _ => 1,
    }
}

/// The host's local time offset: (minutes east of UTC without summer time, summer time).
fn host_zone() -> (i32, bool) {
    let now = unsafe { libc::time(std::ptr::null_mut()) };
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    if unsafe { libc::localtime_r(&now, &mut tm) }.is_null() {
        return (0, false);
    }
    let dst = tm.tm_isdst > 0;
    let minutes = (tm.tm_gmtoff / 60) as i32 - if dst { 60 } else { 0 };
    (minutes, dst)
}

/// The integer setting `id`, or None for an unknown id.
pub fn param_int(id: i32) -> Option<i32> {
    let locale = host_locale();
    Some(match id {
        param::LANG => language_id(&locale),
        param::DATE_FORMAT => date_format(&locale),
        param::TIME_FORMAT => time_format(&locale),
        param::TIME_ZONE => host_zone().0,
        param::SUMMERTIME => host_zone().1 as i32,
        // Parental control off.
        param::GAME_PARENTAL_LEVEL => 0,
        // Cross confirms (every PS5, and PS4s outside Japan).
        param::ENTER_BUTTON_ASSIGN => 1,
        _ => return None,
    })
}

/// `sceSystemServiceParamGetInt(paramId, value *)`.
#[nid("sceSystemServiceParamGetInt")]
pub unsafe extern "C" fn sce_system_service_param_get_int(id: i32, value: *mut i32) -> i32 {
    match param_int(id) {
        Some(v) if !value.is_null() => {
            unsafe { value.write_unaligned(v) };
            0
        }
        _ => ERROR_PARAMETER,
    }
}

/// `sceSystemServiceParamGetString(paramId, buf, bufSize)`: only the system name
/// (the host name; the console's names are at most 64 bytes) is a string.
#[nid("sceSystemServiceParamGetString")]
pub unsafe extern "C" fn sce_system_service_param_get_string(
    id: i32,
    buf: *mut u8,
    size: usize,
) -> i32 {
    if id != param::SYSTEM_NAME || buf.is_null() || size == 0 {
        return ERROR_PARAMETER;
    }
    let mut host = [0u8; 65];
    let name: &[u8] = if unsafe { libc::gethostname(host.as_mut_ptr().cast(), host.len() - 1) } == 0
    {
        let n = host.iter().position(|&b| b == 0).unwrap_or(host.len() - 1);
        &host[..n]
    } else {
        b"aps5"
    };
    if name.len() + 1 > size {
        return ERROR_PARAMETER;
    }
    unsafe {
        std::ptr::copy_nonoverlapping(name.as_ptr(), buf, name.len());
        buf.add(name.len()).write(0);
    }
    0
}

/// `sceSystemServiceHideSplashScreen()`: there is no splash screen.
#[nid("sceSystemServiceHideSplashScreen")]
pub extern "C" fn sce_system_service_hide_splash_screen() -> i32 {
    0
}

/// `SceSystemServiceStatus`: eventNum, five flags, 125 reserved bytes (134 bytes written).
const STATUS_BYTES: usize = 4 + 5 + 125;

/// `sceSystemServiceGetStatus(status *)`: no pending event, no system UI over the game, in
/// the foreground, CPU mode "7 CPUs normal".
#[nid("sceSystemServiceGetStatus")]
pub unsafe extern "C" fn sce_system_service_get_status(status: *mut u8) -> i32 {
    if status.is_null() {
        return ERROR_PARAMETER;
    }
    let mut s = [0u8; STATUS_BYTES];
    // isCpuMode7CpuNormal.
    s[6] = 1;
    unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), status, s.len()) };
    0
}

/// `sceSystemServiceReceiveEvent(event *)`: the system never sends one.
#[nid("sceSystemServiceReceiveEvent")]
pub unsafe extern "C" fn sce_system_service_receive_event(event: *mut u8) -> i32 {
    if event.is_null() {
        return ERROR_PARAMETER;
    }
    ERROR_NO_EVENT
}

/// `sceSystemServiceGetDisplaySafeAreaInfo(info *)`: `{ float ratio; u8 reserved[128]; }`,
/// the whole screen is safe (ratio 1.0).
#[nid("sceSystemServiceGetDisplaySafeAreaInfo")]
pub unsafe extern "C" fn sce_system_service_get_display_safe_area_info(info: *mut u8) -> i32 {
    if info.is_null() {
        return ERROR_PARAMETER;
    }
    let mut s = [0u8; 4 + 128];
    s[..4].copy_from_slice(&1.0f32.to_le_bytes());
    unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), info, s.len()) };
    0
}

/// `sceSystemServicePowerTick()`: keeps the console awake; the host decides that.
#[nid("sceSystemServicePowerTick")]
pub extern "C" fn sce_system_service_power_tick() -> i32 {
    0
}

/// `sceSystemServiceDisableMusicPlayer()`: there is no background music player.
#[nid("sceSystemServiceDisableMusicPlayer")]
pub extern "C" fn sce_system_service_disable_music_player() -> i32 {
    0
}

/// `sceSystemServiceReenableMusicPlayer()`.
#[nid("sceSystemServiceReenableMusicPlayer")]
pub extern "C" fn sce_system_service_reenable_music_player() -> i32 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_follow_the_sdk_numbering() {
        assert_eq!(language_id("ja_JP.UTF-8"), 0);
        assert_eq!(language_id("en_US.UTF-8"), 1);
        assert_eq!(language_id("en_GB.UTF-8"), 18);
        assert_eq!(language_id("fr_CA"), 22);
        assert_eq!(language_id("de_DE.UTF-8@euro"), 4);
        assert_eq!(language_id("pt_BR"), 17);
        assert_eq!(language_id("zh_TW.UTF-8"), 10);
        assert_eq!(language_id("zh_CN.UTF-8"), 11);
        assert_eq!(language_id("C.UTF-8"), 1);
        assert_eq!(language_id(""), 1);
    }

    #[test]
    fn formats_follow_the_locale() {
        assert_eq!(date_format("en_US.UTF-8"), 2);
        assert_eq!(date_format("de_DE.UTF-8"), 1);
        assert_eq!(date_format("ja_JP.UTF-8"), 0);
        assert_eq!(time_format("en_US.UTF-8"), 0);
        assert_eq!(time_format("fr_FR.UTF-8"), 1);
    }

    #[test]
    fn calls_check_their_arguments() {
        let mut v = -7;
        assert_eq!(
            unsafe { sce_system_service_param_get_int(param::GAME_PARENTAL_LEVEL, &mut v) },
            0
        );
        assert_eq!(v, 0);
        assert_eq!(
            unsafe { sce_system_service_param_get_int(param::ENTER_BUTTON_ASSIGN, &mut v) },
            0
        );
        assert_eq!(v, 1);
        assert_eq!(
            unsafe { sce_system_service_param_get_int(12345, &mut v) },
            ERROR_PARAMETER
        );
        assert_eq!(
            unsafe { sce_system_service_param_get_int(param::LANG, std::ptr::null_mut()) },
            ERROR_PARAMETER
        );
        let mut name = [0xFFu8; 65];
        assert_eq!(
            unsafe {
                sce_system_service_param_get_string(param::SYSTEM_NAME, name.as_mut_ptr(), 65)
            },
            0
        );
        assert!(name.contains(&0));
        assert_eq!(
            unsafe {
                sce_system_service_param_get_string(param::SYSTEM_NAME, name.as_mut_ptr(), 1)
            },
            ERROR_PARAMETER
        );
        // The status is written up to its last reserved byte and not beyond.
        let mut status = [0xAAu8; STATUS_BYTES + 2];
        assert_eq!(
            unsafe { sce_system_service_get_status(status.as_mut_ptr()) },
            0
        );
        assert_eq!(&status[..4], &[0, 0, 0, 0]);
        assert_eq!(status[6], 1);
        assert_eq!(&status[STATUS_BYTES..], &[0xAA, 0xAA]);
        let mut event = [0u8; 8196];
        assert_eq!(
            unsafe { sce_system_service_receive_event(event.as_mut_ptr()) },
            ERROR_NO_EVENT
        );
    }
}
