//! Checks src/abi.rs against plugin_abi.h: parses the header for every struct, member,
//! enum value and numeric #define, generates a C program that prints their sizes,
//! offsets, alignments and values as the C compiler sees them, compiles and runs it
//! (`$CC`, default `cc`), and compares with the same facts computed from the Rust
//! definitions. A member the header has and abi.rs lacks fails too (and a member abi.rs
//! has that this table lacks does not compile: the table destructures each struct).
//!
//! The header: `$EXACTLY_ABI_HEADER`, else `../../sdk/include/exactly/plugin_abi.h` from
//! this crate (the exactly source tree).

use super::*;
use std::collections::BTreeSet;
use std::mem::{align_of, size_of, MaybeUninit};
use std::path::PathBuf;
use std::process::Command;
use std::ptr::addr_of;

fn pointee_size<T>(_: *const T) -> usize {
    size_of::<T>()
}

/// (offset, size) of a member; `core::mem::offset_of!` needs Rust 1.77, this 1.51.
macro_rules! member {
    ($s:ident, $f:ident) => {{
        let u = MaybeUninit::<$s>::uninit();
        let base = u.as_ptr();
        // SAFETY: only the address is taken; nothing is read.
        let field = unsafe { addr_of!((*base).$f) };
        (field as usize - base as usize, pointee_size(field))
    }};
}

/// rows!(out; S { a, b, c }) adds "struct S <size> <align>" and "member S.a <offset>
/// <size>" lines, and fails to compile unless a, b, c are all of S's fields.
macro_rules! rows {
    ($out:ident; $( $s:ident { $($f:ident),* $(,)? } )*) => {$(
        #[allow(unused_variables, clippy::unused_unit)]
        let _exhaustive = |v: $s| { let $s { $($f: _),* } = v; };
        $out.push(format!("struct {} {} {}", stringify!($s), size_of::<$s>(), align_of::<$s>()));
        $(
            let (offset, size) = member!($s, $f);
            $out.push(format!(
                "member {}.{} {} {}",
                stringify!($s),
                stringify!($f).trim_start_matches("r#"),
                offset,
                size,
            ));
        )*
    )*};
}

macro_rules! consts {
    ($out:ident; $($c:ident),* $(,)?) => {$(
        $out.push(format!("const {} {}", stringify!($c), $c as i64));
    )*};
}

fn rust_facts() -> Vec<String> {
    let mut out = Vec::new();
    rows!(out;
        ex_bytes { ptr, len }
        ex_error { struct_size, code, key, message }
        ex_header { key, value }
        ex_record { key, value, headers, header_count, partition, offset, timestamp_ms }
        ex_batch { struct_size, record_size, records, count }
        ex_partition { struct_size, id, name, topic, number, start_offset }
        ex_checkpoint { struct_size, format, data }
        ex_config_field { struct_size, key, r#type, required, default_value, doc, allowed, flags }
        ex_config_entry { key, value }
        ex_config { struct_size, entries, count }
        ex_state_info { struct_size, start, end, created }
        ex_host_api {
            struct_size, ctx, pipeline_name, component_id, log, metric, partitions_assigned,
            partitions_revoked, state_supported, state_open, state_read, state_write,
            state_position, standby, hold, release, stopping
        }
        ex_emitter { struct_size, ctx, keep, emit, reject }
        ex_record_errors { struct_size, ctx, reject, reject_record }
        ex_source_vtable {
            struct_size, create, destroy, open, poll, checkpoint, commit, rewind, pause,
            reconfigure, pause_partitions, validate, checkpoint_at
        }
        ex_transform_vtable {
            struct_size, create, destroy, assign, revoke, process, prepare_commit, commit,
            abort, reconfigure, positions, standby, validate
        }
        ex_sink_vtable {
            struct_size, create, destroy, open, assign, revoke, write, prepare_commit, commit,
            abort, reconfigure, state_open, state_read, state_write, state_position,
            validate, completed
        }
        ex_component { struct_size, kind, name, doc, fields, field_count, vtable }
        ex_plugin_descriptor {
            struct_size, abi_version, name, version, components, component_count, pointer_size,
            byte_order, record_size, batch_size, partition_size, header_size, config_entry_size
        }
    );
    consts!(out;
        EX_ABI_VERSION_MAJOR, EX_ABI_VERSION_MINOR, EX_ABI_VERSION,
        EX_OK, EX_ERR_RETRIABLE, EX_ERR_ABORTABLE, EX_ERR_FATAL, EX_ERR_CONFIG, EX_ERR_UNSUPPORTED,
        EX_ERROR_KEY_MAX, EX_ERROR_MESSAGE_MAX, EX_PARTITION_LOST,
        EX_CFG_STRING, EX_CFG_INT, EX_CFG_DOUBLE, EX_CFG_BOOL, EX_CFG_LIST, EX_CFG_DURATION,
        EX_CFG_SIZE, EX_CFG_MAP, EX_CFG_EXCLUSIVE_PATH,
        EX_LOG_DEBUG, EX_LOG_INFO, EX_LOG_WARN, EX_LOG_ERROR,
        EX_METRIC_COUNTER, EX_METRIC_GAUGE,
        EX_KIND_SOURCE, EX_KIND_TRANSFORM, EX_KIND_SINK,
        EX_SINK_STORED_POSITIONS, EX_SINK_POSITIONS_IN_SOURCE, EX_BYTE_ORDER_MARK,
    );
    out.push(format!("symbol {}", EX_PLUGIN_ENTRY_SYMBOL));
    // 1.4: what EX_PLUGIN_BUILD_FACTS expands to in C, in order.
    out.push(format!("facts{}", build_facts().iter().map(|v| format!(" {v}")).collect::<String>()));
    // Function pointer types: only their size is visible to the C side.
    out.push(format!("typedef ex_state_record_fn {}", size_of::<ex_state_record_fn>()));
    out.push(format!("typedef ex_plugin_entry_fn {}", size_of::<ex_plugin_entry_fn>()));
    out
}

// ---------------------------------------------------------------- the header

struct Header {
    structs: Vec<(String, Vec<String>)>,
    constants: Vec<String>,
    fn_typedefs: Vec<String>,
}

fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("/*") {
            rest = r.find("*/").map(|i| &r[i + 2..]).unwrap_or("");
            out.push(' ');
        } else if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map(|i| &r[i..]).unwrap_or("");
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn ident_before(s: &str) -> String {
    let s = s.trim_end();
    let start = s.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    s[start..].to_string()
}

/// The name a declaration declares: `int32_t (*create)(...)` -> create,
/// `char key[EX_ERROR_KEY_MAX]` -> key, `const char* const* allowed` -> allowed.
fn declared_name(decl: &str) -> String {
    if let Some(i) = decl.find("(*") {
        let rest = &decl[i + 2..];
        return rest[..rest.find(')').unwrap()].trim().to_string();
    }
    let d = decl.find('[').map_or(decl, |i| &decl[..i]);
    ident_before(d)
}

/// The `{ ... }` body after `from` with its braces balanced, and the text after it.
fn body(text: &str, from: usize) -> (&str, &str) {
    let open = from + text[from..].find('{').unwrap();
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return (&text[open + 1..open + i], &text[open + i + 1..]);
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced braces in the header");
}

fn parse_header(text: &str) -> Header {
    let text = strip_comments(text);
    let mut h = Header { structs: Vec::new(), constants: Vec::new(), fn_typedefs: Vec::new() };
    let mut pos = 0;
    while let Some(i) = text[pos..].find("typedef ") {
        let at = pos + i;
        let after = &text[at + "typedef ".len()..];
        if after.starts_with("struct ") && after.split('{').next().unwrap().split_whitespace().count() == 2 {
            let name = after["struct ".len()..].split('{').next().unwrap().trim().to_string();
            let (b, _) = body(&text, at);
            let members = b.split(';').map(str::trim).filter(|d| !d.is_empty()).map(declared_name).collect();
            h.structs.push((name, members));
            pos = at + "typedef ".len() + after.find('}').unwrap_or(0);
        } else if after.starts_with("enum ") {
            let (b, _) = body(&text, at);
            for e in b.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                h.constants.push(e.split('=').next().unwrap().trim().to_string());
            }
            pos = at + "typedef ".len() + after.find('}').unwrap_or(0);
        } else {
            // typedef <ret> (*name)(...);
            let decl = &after[..after.find(';').unwrap()];
            if decl.contains("(*") {
                h.fn_typedefs.push(declared_name(decl));
            }
            pos = at + "typedef ".len();
        }
    }
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("#define") {
            continue;
        }
        let name = match words.next() {
            Some(name) => name,
            None => continue,
        };
        if !name.starts_with("EX_") || name.contains('(') || name == "EX_EXPORT" {
            continue;
        }
        match words.next() {
            None => continue,       // a guard without a value
            Some("\\") => continue, // a list over several lines (EX_PLUGIN_BUILD_FACTS), no constant
            Some(_) => {}
        }
        if name != "EX_PLUGIN_ENTRY_SYMBOL" && !h.constants.contains(&name.to_string()) {
            h.constants.push(name.to_string());
        }
    }
    h
}

fn c_program(h: &Header) -> String {
    let mut c = String::from(
        "#include <exactly/plugin_abi.h>\n#include <stdio.h>\n#include <stddef.h>\n\
         #include <stdalign.h>\nint main(void) {\n",
    );
    for (s, members) in &h.structs {
        c += &format!("  printf(\"struct {s} %zu %zu\\n\", sizeof({s}), alignof({s}));\n");
        for m in members {
            c += &format!(
                "  printf(\"member {s}.{m} %zu %zu\\n\", offsetof({s}, {m}), sizeof((({s}*)0)->{m}));\n"
            );
        }
    }
    for k in &h.constants {
        c += &format!("  printf(\"const {k} %lld\\n\", (long long)({k}));\n");
    }
    c += "  printf(\"symbol %s\\n\", EX_PLUGIN_ENTRY_SYMBOL);\n";
    c += "  { const uint32_t f[] = {EX_PLUGIN_BUILD_FACTS};\n    printf(\"facts\");\n    \
          for (size_t i = 0; i < sizeof f / sizeof f[0]; ++i) printf(\" %u\", (unsigned)f[i]);\n    \
          printf(\"\\n\"); }\n";
    for t in &h.fn_typedefs {
        c += &format!("  printf(\"typedef {t} %zu\\n\", sizeof({t}));\n");
    }
    c + "  return 0;\n}\n"
}

fn header_path() -> PathBuf {
    match std::env::var_os("EXACTLY_ABI_HEADER") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sdk/include/exactly/plugin_abi.h"),
    }
}

fn c_facts(header: &std::path::Path, h: &Header) -> Vec<String> {
    // header = <include dir>/exactly/plugin_abi.h
    let include = header.parent().and_then(|p| p.parent()).expect("header path has no include dir");
    let dir = std::env::temp_dir().join(format!("exactly-abi-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("layout.c");
    let exe = dir.join("layout");
    std::fs::write(&src, c_program(h)).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-I")
        .arg(include)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler '{cc}' (set CC): {e}"));
    assert!(status.success(), "the generated layout program did not compile: {}", src.display());
    let out = Command::new(&exe).output().expect("cannot run the layout program");
    assert!(out.status.success());
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn bindings_match_plugin_abi_h() {
    let header = header_path();
    let text = std::fs::read_to_string(&header)
        .unwrap_or_else(|e| panic!("cannot read {} (set EXACTLY_ABI_HEADER): {e}", header.display()));
    let h = parse_header(&text);
    // A parser that found nothing would pass vacuously.
    assert!(h.structs.len() >= 19, "parsed only {} structs from {}", h.structs.len(), header.display());
    assert!(h.structs.iter().any(|(s, m)| s == "ex_host_api" && m.iter().any(|x| x == "release")));

    let c: BTreeSet<String> = c_facts(&header, &h).into_iter().collect();
    let rust: BTreeSet<String> = rust_facts().into_iter().collect();
    let only_c: Vec<_> = c.difference(&rust).collect();
    let only_rust: Vec<_> = rust.difference(&c).collect();
    assert!(
        only_c.is_empty() && only_rust.is_empty(),
        "src/abi.rs differs from {}\n  as the C compiler sees the header:\n    {}\n  as src/abi.rs has it:\n    {}\n",
        header.display(),
        only_c.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n    "),
        only_rust.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n    "),
    );
    println!("{} facts of {} agree with src/abi.rs", c.len(), header.display());
}

#[test]
fn parser_reads_declarations() {
    assert_eq!(declared_name("int32_t (*create)(const ex_host_api* host, void** out)"), "create");
    assert_eq!(declared_name("char key[EX_ERROR_KEY_MAX]"), "key");
    assert_eq!(declared_name("const char* const* allowed"), "allowed");
    assert_eq!(declared_name("int64_t start_offset"), "start_offset");
}
