//! mask: an exactly plugin in Rust. One transform, `mask`, that replaces top-level
//! members of JSON record values (card numbers, e-mail addresses, tokens) with a
//! replacement text, optionally leaving the last few characters visible.
//!
//! The crate talks to the host through the C ABI only (`abi.rs`, hand-kept bindings of
//! plugin_abi.h, checked against the header by `cargo test`). Boundary rules:
//! - every `extern "C"` entry point runs its body under `catch_unwind`: a panic becomes
//!   EX_ERR_FATAL with a message, never an unwind into the host;
//! - errors go back as a status plus the caller's `ex_error` (key, message);
//! - structs we fill carry our own `sizeof` in `struct_size`.

mod abi;
mod mask;

use abi::*;
use mask::{Outcome, Settings};
use std::os::raw::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null;

/// A NUL-terminated C string literal (`c"..."` needs Rust 1.77; this crate builds with
/// Debian's 1.63).
macro_rules! cstr {
    ($s:expr) => {
        concat!($s, "\0").as_ptr() as *const c_char
    };
}

// ---------------------------------------------------------------- the descriptor

/// Lets statics hold the raw pointers the descriptor is made of (they point at other
/// statics and are never written).
#[repr(transparent)]
struct Shared<T>(T);
unsafe impl<T> Sync for Shared<T> {}

/// One schema entry; `default` is canonical text or null.
const fn field(
    key: *const c_char,
    ty: ex_config_type,
    required: bool,
    default: *const c_char,
    doc: *const c_char,
    allowed: *const *const c_char,
) -> ex_config_field {
    ex_config_field {
        struct_size: std::mem::size_of::<ex_config_field>() as u32,
        key,
        r#type: ty,
        required: required as i32,
        default_value: default,
        doc,
        allowed,
        flags: 0,
    }
}

static ON_INVALID: Shared<[*const c_char; 3]> = Shared([cstr!("reject"), cstr!("keep"), null()]);

// The schema: the host checks types, required keys and allowed values before create().
static FIELDS: Shared<[ex_config_field; 4]> = Shared([
    field(
        cstr!("fields"),
        EX_CFG_LIST,
        true,
        null(),
        cstr!("top-level members of the JSON value to mask, e.g. [card, email]"),
        null(),
    ),
    field(
        cstr!("replacement"),
        EX_CFG_STRING,
        false,
        cstr!("***"),
        cstr!("text that replaces a masked value"),
        null(),
    ),
    field(
        cstr!("keep.last"),
        EX_CFG_INT,
        false,
        cstr!("0"),
        cstr!("characters of a string left visible at its end, 0-1000 (4 for card numbers)"),
        null(),
    ),
    field(
        cstr!("on.invalid"),
        EX_CFG_STRING,
        false,
        cstr!("reject"),
        cstr!("a value that is not a JSON object: reject (to the error policy) or keep"),
        ON_INVALID.0.as_ptr(),
    ),
]);

/// Optional members stay None: the host skips them.
static VTABLE: ex_transform_vtable = ex_transform_vtable {
    struct_size: std::mem::size_of::<ex_transform_vtable>() as u32,
    create: Some(create),
    destroy: Some(destroy),
    assign: None,
    revoke: None,
    process: Some(process),
    prepare_commit: None,
    commit: None,
    abort: None,
    reconfigure: Some(reconfigure),
    positions: None,
    standby: None,
    validate: None,
};

static COMPONENTS: Shared<[ex_component; 1]> = Shared([ex_component {
    struct_size: std::mem::size_of::<ex_component>() as u32,
    kind: EX_KIND_TRANSFORM,
    name: cstr!("mask"),
    doc: cstr!("Masks top-level members of JSON values (written in Rust)"),
    fields: FIELDS.0.as_ptr(),
    field_count: 4,
    vtable: &VTABLE as *const ex_transform_vtable as *const c_void,
}]);

static DESCRIPTOR: Shared<ex_plugin_descriptor> = Shared(ex_plugin_descriptor {
    struct_size: std::mem::size_of::<ex_plugin_descriptor>() as u32,
    abi_version: EX_ABI_VERSION,
    name: cstr!("mask"),
    version: cstr!("0.1.0"),
    components: COMPONENTS.0.as_ptr(),
    component_count: 1,
    pointer_size: build_facts()[0],
    byte_order: build_facts()[1],
    record_size: build_facts()[2],
    batch_size: build_facts()[3],
    partition_size: build_facts()[4],
    header_size: build_facts()[5],
    config_entry_size: build_facts()[6],
});

/// The one exported symbol (a cdylib exports only `#[no_mangle] pub extern` items).
/// NULL refuses a host of another ABI major.
#[no_mangle]
pub extern "C" fn exactly_plugin_descriptor(host_abi_version: u32) -> *const ex_plugin_descriptor {
    if host_abi_version >> 16 != EX_ABI_VERSION_MAJOR {
        return null();
    }
    &DESCRIPTOR.0
}

// ---------------------------------------------------------------- the boundary

struct Failure {
    code: ex_status,
    key: String,
    message: String,
}

impl Failure {
    fn fatal(message: impl Into<String>) -> Failure {
        Failure { code: EX_ERR_FATAL, key: String::new(), message: message.into() }
    }
}

impl From<mask::ConfigError> for Failure {
    fn from(e: mask::ConfigError) -> Failure {
        Failure { code: EX_ERR_CONFIG, key: e.key.to_string(), message: e.message }
    }
}

/// Copies `text` into a fixed C buffer, cut at a character boundary, NUL-terminated.
fn copy_cstr(dst: &mut [c_char], text: &str) {
    let mut n = text.len().min(dst.len() - 1);
    while !text.is_char_boundary(n) {
        n -= 1;
    }
    for (d, s) in dst.iter_mut().zip(&text.as_bytes()[..n]) {
        *d = *s as c_char;
    }
    dst[n] = 0;
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(no message)"
    }
}

/// Runs one ABI call: a panic or an error becomes a status and the caller's ex_error.
fn guard(err: *mut ex_error, f: impl FnOnce() -> Result<(), Failure>) -> i32 {
    let result = catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|p| Err(Failure::fatal(format!("panic in the mask plugin: {}", panic_text(&*p)))));
    match result {
        Ok(()) => EX_OK,
        Err(f) => {
            // SAFETY: the host hands a valid, caller-allocated ex_error (or NULL).
            if let Some(e) = unsafe { err.as_mut() } {
                e.code = f.code;
                copy_cstr(&mut e.key, &f.key);
                copy_cstr(&mut e.message, &f.message);
            }
            f.code
        }
    }
}

unsafe fn slice<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(ptr, len)
    }
}

unsafe fn config_entries(config: *const ex_config) -> Vec<(String, String)> {
    let c = match config.as_ref() {
        Some(c) => c,
        None => return Vec::new(),
    };
    let text = |b: ex_bytes| String::from_utf8_lossy(slice(b.ptr, b.len)).into_owned();
    slice(c.entries, c.count).iter().map(|e| (text(e.key), text(e.value))).collect()
}

// ---------------------------------------------------------------- the transform

struct Mask {
    host: *const ex_host_api, // lives as long as the instance
    settings: Settings,
    out: Vec<u8>,
}

impl Mask {
    fn log(&self, level: ex_log_level, msg: &str) {
        // SAFETY: the host api outlives the instance; `log` is a 1.0 member.
        if let Some(h) = unsafe { self.host.as_ref() } {
            if let Some(log) = h.log {
                unsafe { log(h.ctx, level, msg.as_ptr() as *const c_char, msg.len()) };
            }
        }
    }

    fn counter(&self, name: *const c_char, value: f64) {
        if let Some(h) = unsafe { self.host.as_ref() } {
            if let Some(metric) = h.metric {
                unsafe { metric(h.ctx, EX_METRIC_COUNTER, name, cstr!(""), value) };
            }
        }
    }
}

unsafe extern "C" fn create(
    host: *const ex_host_api,
    config: *const ex_config,
    out_self: *mut ex_transform_self,
    err: *mut ex_error,
) -> i32 {
    guard(err, || {
        let settings = Settings::parse(&config_entries(config))?;
        let m = Mask { host, settings, out: Vec::new() };
        m.log(
            EX_LOG_INFO,
            &format!("masking {:?}, {} last character(s) visible", m.settings.fields, m.settings.keep_last),
        );
        *out_self = Box::into_raw(Box::new(m)) as ex_transform_self;
        Ok(())
    })
}

unsafe extern "C" fn destroy(this: ex_transform_self) {
    if !this.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(this as *mut Mask))));
    }
}

unsafe extern "C" fn process(
    this: ex_transform_self,
    input: *const ex_batch,
    out: *const ex_emitter,
    err: *mut ex_error,
) -> i32 {
    guard(err, || {
        let m = &mut *(this as *mut Mask);
        let (batch, emitter) = (&*input, &*out);
        let stride = batch.record_size as usize;
        if batch.count > 0 && stride < std::mem::size_of::<ex_record>() {
            return Err(Failure::fatal(format!("records of {stride} bytes, expected an ex_record")));
        }
        let (keep, emit, reject) = match (emitter.keep, emitter.emit, emitter.reject) {
            (Some(k), Some(e), Some(r)) => (k, e, r),
            _ => return Err(Failure::fatal("the host's emitter lacks keep/emit/reject")),
        };
        let mut masked = 0usize;
        for i in 0..batch.count {
            // The producer's record_size is the stride (records may grow in a later major).
            let r = &*((batch.records as *const u8).add(i * stride) as *const ex_record);
            if r.value.ptr.is_null() {
                keep(emitter.ctx, i); // a tombstone: nothing to mask
                continue;
            }
            m.out.clear();
            match m.settings.mask(slice(r.value.ptr, r.value.len), &mut m.out) {
                Outcome::Unchanged => {
                    keep(emitter.ctx, i); // forwarded as it is, no copy
                }
                Outcome::Masked(n) => {
                    // Same key, headers and origin (partition, offset); the host copies
                    // the bytes during the call, so `out` may be reused.
                    let copy = ex_record { value: ex_bytes { ptr: m.out.as_ptr(), len: m.out.len() }, ..*r };
                    emit(emitter.ctx, &copy);
                    masked += n;
                }
                Outcome::Invalid(why) if m.settings.reject_invalid => {
                    reject(emitter.ctx, i, why.as_ptr() as *const c_char, why.len());
                }
                Outcome::Invalid(_) => {
                    keep(emitter.ctx, i);
                }
            }
        }
        if masked > 0 {
            m.counter(cstr!("mask_fields_masked_total"), masked as f64);
        }
        Ok(())
    })
}

/// Hot reload: the whole new config is validated before anything changes.
unsafe extern "C" fn reconfigure(this: ex_transform_self, config: *const ex_config, err: *mut ex_error) -> i32 {
    guard(err, || {
        let m = &mut *(this as *mut Mask);
        m.settings = Settings::parse(&config_entries(config))?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn new_error() -> ex_error {
        ex_error {
            struct_size: std::mem::size_of::<ex_error>() as u32,
            code: 0,
            key: [0; 128],
            message: [0; 1024],
        }
    }

    fn text(buf: &[c_char]) -> String {
        unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned()
    }

    #[test]
    fn a_panic_becomes_a_fatal_status() {
        let mut e = new_error();
        let rc = guard(&mut e, || panic!("boom"));
        assert_eq!(rc, EX_ERR_FATAL);
        assert_eq!(e.code, EX_ERR_FATAL);
        assert_eq!(text(&e.message), "panic in the mask plugin: boom");
    }

    #[test]
    fn a_config_error_names_the_key() {
        let entries = [("fields", "a"), ("keep.last", "-3")].map(|(k, v)| ex_config_entry {
            key: ex_bytes { ptr: k.as_ptr(), len: k.len() },
            value: ex_bytes { ptr: v.as_ptr(), len: v.len() },
        });
        let config = ex_config {
            struct_size: std::mem::size_of::<ex_config>() as u32,
            entries: entries.as_ptr(),
            count: 2,
        };
        let mut e = new_error();
        let mut out: ex_transform_self = std::ptr::null_mut();
        let rc = unsafe { create(null(), &config, &mut out, &mut e) };
        assert_eq!(rc, EX_ERR_CONFIG);
        assert_eq!(text(&e.key), "keep.last");
        assert!(out.is_null());
    }

    #[test]
    fn long_messages_are_cut_at_a_character_boundary() {
        let mut buf = [1 as c_char; 4];
        copy_cstr(&mut buf, "aé");
        assert_eq!(text(&buf), "aé");
        copy_cstr(&mut buf, "aaé");
        assert_eq!(text(&buf), "aa");
    }

    #[test]
    fn the_descriptor_declares_the_schema() {
        let d = unsafe { &*exactly_plugin_descriptor(EX_ABI_VERSION) };
        assert_eq!(d.abi_version, EX_ABI_VERSION);
        assert_eq!(d.struct_size as usize, std::mem::size_of::<ex_plugin_descriptor>());
        let facts = [
            d.pointer_size,
            d.byte_order,
            d.record_size,
            d.batch_size,
            d.partition_size,
            d.header_size,
            d.config_entry_size,
        ];
        assert_eq!(facts, build_facts());
        let c = unsafe { &*d.components };
        assert_eq!(unsafe { CStr::from_ptr(c.name) }.to_str().unwrap(), "mask");
        let keys: Vec<_> = unsafe { slice(c.fields, c.field_count) }
            .iter()
            .map(|f| unsafe { CStr::from_ptr(f.key) }.to_str().unwrap())
            .collect();
        assert_eq!(keys, ["fields", "replacement", "keep.last", "on.invalid"]);
        assert!(exactly_plugin_descriptor(2 << 16).is_null());
    }
}
