//! Rust mirror of `sdk/include/exactly/plugin_abi.h` (ABI 1.4), kept by hand.
//!
//! Every struct of the header is here with the same members in the same order, as
//! `#[repr(C)]`; function pointers are `Option<unsafe extern "C" fn ...>` (NULL = None).
//! C enums are plain integer constants: a value this plugin does not know must never
//! become an invalid Rust enum. `cargo test` (the `layout` test below) compiles a C
//! program generated from the header itself and fails when a struct, member, size,
//! offset, alignment or constant here differs from the header, or when the header has a
//! member this file lacks. Function pointer signatures are not checked by it: compare
//! them by eye when the header changes (docs/abi-policy.md lists what changed when).
//!
//! Copy this file into another Rust plugin as it is; it has no dependencies.
#![allow(non_camel_case_types, dead_code)]

use std::os::raw::{c_char, c_void};

// ---------------------------------------------------------------- versions

pub const EX_ABI_VERSION_MAJOR: u32 = 1;
pub const EX_ABI_VERSION_MINOR: u32 = 6;
pub const EX_ABI_VERSION: u32 = (EX_ABI_VERSION_MAJOR << 16) | EX_ABI_VERSION_MINOR;
/// The exported symbol's name (without the NUL).
pub const EX_PLUGIN_ENTRY_SYMBOL: &str = "exactly_plugin_descriptor";

// ---------------------------------------------------------------- handles (1.4)

/// Declares an opaque handle as the header does: a pointer to a struct nobody defines,
/// so that handles of different owners do not mix (see the header for who owns which).
macro_rules! handle {
    ($($name:ident / $target:ident),* $(,)?) => {$(
        #[repr(C)]
        pub struct $target {
            _opaque: [u8; 0],
        }
        pub type $name = *mut $target;
    )*};
}
handle!(
    ex_host_ctx / ex_host_ctx_s,
    ex_emitter_ctx / ex_emitter_ctx_s,
    ex_record_errors_ctx / ex_record_errors_ctx_s,
    ex_state_read_ctx / ex_state_read_ctx_s,
    ex_source_self / ex_source_self_s,
    ex_transform_self / ex_transform_self_s,
    ex_sink_self / ex_sink_self_s,
);

// ---------------------------------------------------------------- basic types

/// A byte view; `ptr == NULL` means absent (a null key), unlike empty (`len == 0`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ex_bytes {
    pub ptr: *const u8,
    pub len: usize,
}

pub type ex_status = i32;
pub const EX_OK: ex_status = 0;
pub const EX_ERR_RETRIABLE: ex_status = 1;
pub const EX_ERR_ABORTABLE: ex_status = 2;
pub const EX_ERR_FATAL: ex_status = 3;
pub const EX_ERR_CONFIG: ex_status = 4;
pub const EX_ERR_UNSUPPORTED: ex_status = 5;

pub const EX_ERROR_KEY_MAX: usize = 128;
pub const EX_ERROR_MESSAGE_MAX: usize = 1024;

#[repr(C)]
pub struct ex_error {
    pub struct_size: u32,
    pub code: i32,
    pub key: [c_char; EX_ERROR_KEY_MAX],
    pub message: [c_char; EX_ERROR_MESSAGE_MAX],
}

// ---------------------------------------------------------------- records

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ex_header {
    pub key: ex_bytes,
    pub value: ex_bytes,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ex_record {
    pub key: ex_bytes,
    pub value: ex_bytes,
    pub headers: *const ex_header,
    pub header_count: u32,
    pub partition: i32,
    pub offset: i64,
    pub timestamp_ms: i64,
}

#[repr(C)]
pub struct ex_batch {
    pub struct_size: u32,
    pub record_size: u32,
    pub records: *const ex_record,
    pub count: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ex_partition {
    pub struct_size: u32,
    pub id: i32,
    pub name: ex_bytes,
    pub topic: ex_bytes,
    pub number: i32,
    pub start_offset: i64,
}

pub const EX_PARTITION_LOST: i64 = -2;

#[repr(C)]
pub struct ex_checkpoint {
    pub struct_size: u32,
    pub format: ex_bytes,
    pub data: ex_bytes,
}

// ---------------------------------------------------------------- configuration

pub type ex_config_type = i32;
pub const EX_CFG_STRING: ex_config_type = 1;
pub const EX_CFG_INT: ex_config_type = 2;
pub const EX_CFG_DOUBLE: ex_config_type = 3;
pub const EX_CFG_BOOL: ex_config_type = 4;
pub const EX_CFG_LIST: ex_config_type = 5;
pub const EX_CFG_DURATION: ex_config_type = 6;
pub const EX_CFG_SIZE: ex_config_type = 7;
pub const EX_CFG_MAP: ex_config_type = 8;

/// ex_config_field.flags (1.6): the value is the path of a file one component holds alone.
pub const EX_CFG_EXCLUSIVE_PATH: u32 = 1;

#[repr(C)]
pub struct ex_config_field {
    pub struct_size: u32,
    pub key: *const c_char,
    pub r#type: i32,
    pub required: i32,
    pub default_value: *const c_char,
    pub doc: *const c_char,
    pub allowed: *const *const c_char,
    /// 1.6: EX_CFG_* flags.
    pub flags: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ex_config_entry {
    pub key: ex_bytes,
    pub value: ex_bytes,
}

#[repr(C)]
pub struct ex_config {
    pub struct_size: u32,
    pub entries: *const ex_config_entry,
    pub count: usize,
}

// ---------------------------------------------------------------- state changelogs (1.1)

#[repr(C)]
pub struct ex_state_info {
    pub struct_size: u32,
    pub start: i64,
    pub end: i64,
    pub created: i32,
}

pub type ex_state_record_fn =
    Option<unsafe extern "C" fn(ctx: ex_state_read_ctx, position: i64, key: ex_bytes, value: ex_bytes) -> i32>;

// ---------------------------------------------------------------- host services

pub type ex_log_level = i32;
pub const EX_LOG_DEBUG: ex_log_level = 0;
pub const EX_LOG_INFO: ex_log_level = 1;
pub const EX_LOG_WARN: ex_log_level = 2;
pub const EX_LOG_ERROR: ex_log_level = 3;

pub type ex_metric_kind = i32;
pub const EX_METRIC_COUNTER: ex_metric_kind = 1;
pub const EX_METRIC_GAUGE: ex_metric_kind = 2;

type PartsFn = Option<
    unsafe extern "C" fn(ctx: ex_host_ctx, parts: *const ex_partition, n: usize, err: *mut ex_error) -> i32,
>;

#[repr(C)]
pub struct ex_host_api {
    pub struct_size: u32,
    pub ctx: ex_host_ctx,
    pub pipeline_name: *const c_char,
    pub component_id: *const c_char,
    pub log: Option<unsafe extern "C" fn(ctx: ex_host_ctx, level: i32, msg: *const c_char, len: usize)>,
    pub metric: Option<
        unsafe extern "C" fn(
            ctx: ex_host_ctx,
            kind: i32,
            name: *const c_char,
            labels: *const c_char,
            value: f64,
        ),
    >,
    pub partitions_assigned: PartsFn,
    pub partitions_revoked: PartsFn,
    // 1.1 (check struct_size first)
    pub state_supported: Option<unsafe extern "C" fn(ctx: ex_host_ctx) -> i32>,
    pub state_open: Option<
        unsafe extern "C" fn(
            ctx: ex_host_ctx,
            store: ex_bytes,
            part: *const ex_partition,
            info: *mut ex_state_info,
            err: *mut ex_error,
        ) -> i32,
    >,
    pub state_read: Option<
        unsafe extern "C" fn(
            ctx: ex_host_ctx,
            store: ex_bytes,
            part: *const ex_partition,
            from: i64,
            f: ex_state_record_fn,
            fn_ctx: ex_state_read_ctx,
            err: *mut ex_error,
        ) -> i32,
    >,
    pub state_write: Option<
        unsafe extern "C" fn(
            ctx: ex_host_ctx,
            store: ex_bytes,
            part: *const ex_partition,
            key: ex_bytes,
            value: ex_bytes,
            err: *mut ex_error,
        ) -> i32,
    >,
    pub state_position:
        Option<unsafe extern "C" fn(ctx: ex_host_ctx, store: ex_bytes, part: *const ex_partition) -> i64>,
    // 1.2 (check struct_size first)
    pub standby: PartsFn,
    pub hold:
        Option<unsafe extern "C" fn(ctx: ex_host_ctx, part: *const ex_partition, err: *mut ex_error) -> i32>,
    pub release: Option<unsafe extern "C" fn(ctx: ex_host_ctx, part: *const ex_partition)>,
    // 1.5 (check struct_size first)
    pub stopping: Option<unsafe extern "C" fn(ctx: ex_host_ctx) -> i32>,
}

// ---------------------------------------------------------------- emitters

type RejectFn<C> = Option<unsafe extern "C" fn(ctx: C, input_index: usize, reason: *const c_char, len: usize) -> i32>;

#[repr(C)]
pub struct ex_emitter {
    pub struct_size: u32,
    pub ctx: ex_emitter_ctx,
    pub keep: Option<unsafe extern "C" fn(ctx: ex_emitter_ctx, input_index: usize) -> i32>,
    pub emit: Option<unsafe extern "C" fn(ctx: ex_emitter_ctx, borrowed: *const ex_record) -> i32>,
    pub reject: RejectFn<ex_emitter_ctx>,
}

#[repr(C)]
pub struct ex_record_errors {
    pub struct_size: u32,
    pub ctx: ex_record_errors_ctx,
    pub reject: RejectFn<ex_record_errors_ctx>,
    // 1.4
    pub reject_record: Option<
        unsafe extern "C" fn(
            ctx: ex_record_errors_ctx,
            borrowed: *const ex_record,
            reason: *const c_char,
            len: usize,
        ) -> i32,
    >,
}

// ---------------------------------------------------------------- components

pub type ex_component_kind = i32;
pub const EX_KIND_SOURCE: ex_component_kind = 1;
pub const EX_KIND_TRANSFORM: ex_component_kind = 2;
pub const EX_KIND_SINK: ex_component_kind = 3;

// `S` is the component's own handle: ex_source_self, ex_transform_self or ex_sink_self.
pub type CreateFn<S> = Option<
    unsafe extern "C" fn(
        host: *const ex_host_api,
        config: *const ex_config,
        out_self: *mut S,
        err: *mut ex_error,
    ) -> i32,
>;
pub type DestroyFn<S> = Option<unsafe extern "C" fn(this: S)>;
pub type SelfPartsFn<S> =
    Option<unsafe extern "C" fn(this: S, parts: *const ex_partition, n: usize, err: *mut ex_error) -> i32>;
pub type SelfFn<S> = Option<unsafe extern "C" fn(this: S, err: *mut ex_error) -> i32>;
pub type ReconfigureFn<S> =
    Option<unsafe extern "C" fn(this: S, config: *const ex_config, err: *mut ex_error) -> i32>;
/// 1.3: a component's side-effect-free check of a config (NULL: schema check only).
pub type ValidateFn = Option<unsafe extern "C" fn(config: *const ex_config, err: *mut ex_error) -> i32>;
pub type CheckpointInFn<S> =
    Option<unsafe extern "C" fn(this: S, positions: *const ex_checkpoint, err: *mut ex_error) -> i32>;

#[repr(C)]
pub struct ex_source_vtable {
    pub struct_size: u32,
    pub create: CreateFn<ex_source_self>,
    pub destroy: DestroyFn<ex_source_self>,
    pub open: CheckpointInFn<ex_source_self>,
    pub poll: Option<
        unsafe extern "C" fn(
            this: ex_source_self,
            timeout_ms: i32,
            out: *mut ex_batch,
            end_of_input: *mut i32,
            err: *mut ex_error,
        ) -> i32,
    >,
    pub checkpoint:
        Option<unsafe extern "C" fn(this: ex_source_self, out: *mut ex_checkpoint, err: *mut ex_error) -> i32>,
    pub commit: CheckpointInFn<ex_source_self>,
    pub rewind: CheckpointInFn<ex_source_self>,
    pub pause: Option<unsafe extern "C" fn(this: ex_source_self, paused: i32, err: *mut ex_error) -> i32>,
    pub reconfigure: ReconfigureFn<ex_source_self>,
    // 1.2
    pub pause_partitions: Option<
        unsafe extern "C" fn(
            this: ex_source_self,
            parts: *const ex_partition,
            n: usize,
            paused: i32,
            err: *mut ex_error,
        ) -> i32,
    >,
    // 1.3
    pub validate: ValidateFn,
    // 1.4
    pub checkpoint_at: Option<
        unsafe extern "C" fn(
            this: ex_source_self,
            parts: *const ex_partition,
            n: usize,
            out: *mut ex_checkpoint,
            err: *mut ex_error,
        ) -> i32,
    >,
}

#[repr(C)]
pub struct ex_transform_vtable {
    pub struct_size: u32,
    pub create: CreateFn<ex_transform_self>,
    pub destroy: DestroyFn<ex_transform_self>,
    pub assign: SelfPartsFn<ex_transform_self>,
    pub revoke: SelfPartsFn<ex_transform_self>,
    pub process: Option<
        unsafe extern "C" fn(
            this: ex_transform_self,
            input: *const ex_batch,
            out: *const ex_emitter,
            err: *mut ex_error,
        ) -> i32,
    >,
    pub prepare_commit: SelfFn<ex_transform_self>,
    pub commit: SelfFn<ex_transform_self>,
    pub abort: SelfFn<ex_transform_self>,
    pub reconfigure: ReconfigureFn<ex_transform_self>,
    // 1.1
    pub positions: SelfPartsFn<ex_transform_self>,
    // 1.2
    pub standby: SelfPartsFn<ex_transform_self>,
    // 1.3
    pub validate: ValidateFn,
}

pub const EX_SINK_STORED_POSITIONS: u32 = 1;
pub const EX_SINK_POSITIONS_IN_SOURCE: u32 = 2;

#[repr(C)]
pub struct ex_sink_vtable {
    pub struct_size: u32,
    pub create: CreateFn<ex_sink_self>,
    pub destroy: DestroyFn<ex_sink_self>,
    pub open: Option<
        unsafe extern "C" fn(
            this: ex_sink_self,
            stored: *mut ex_checkpoint,
            has_stored: *mut i32,
            err: *mut ex_error,
        ) -> i32,
    >,
    pub assign: SelfPartsFn<ex_sink_self>,
    pub revoke: SelfPartsFn<ex_sink_self>,
    pub write: Option<
        unsafe extern "C" fn(
            this: ex_sink_self,
            input: *const ex_batch,
            errors: *const ex_record_errors,
            err: *mut ex_error,
        ) -> i32,
    >,
    pub prepare_commit: SelfFn<ex_sink_self>,
    pub commit: Option<
        unsafe extern "C" fn(
            this: ex_sink_self,
            positions: *const ex_checkpoint,
            flags: *mut u32,
            err: *mut ex_error,
        ) -> i32,
    >,
    pub abort: SelfFn<ex_sink_self>,
    pub reconfigure: ReconfigureFn<ex_sink_self>,
    // 1.1: all four or none
    pub state_open: Option<
        unsafe extern "C" fn(
            this: ex_sink_self,
            store: ex_bytes,
            part: *const ex_partition,
            info: *mut ex_state_info,
            err: *mut ex_error,
        ) -> i32,
    >,
    pub state_read: Option<
        unsafe extern "C" fn(
            this: ex_sink_self,
            store: ex_bytes,
            part: *const ex_partition,
            from: i64,
            f: ex_state_record_fn,
            fn_ctx: ex_state_read_ctx,
            err: *mut ex_error,
        ) -> i32,
    >,
    pub state_write: Option<
        unsafe extern "C" fn(
            this: ex_sink_self,
            store: ex_bytes,
            part: *const ex_partition,
            key: ex_bytes,
            value: ex_bytes,
            err: *mut ex_error,
        ) -> i32,
    >,
    pub state_position:
        Option<unsafe extern "C" fn(this: ex_sink_self, store: ex_bytes, part: *const ex_partition) -> i64>,
    // 1.3
    pub validate: ValidateFn,
    // 1.4
    pub completed: Option<
        unsafe extern "C" fn(
            this: ex_sink_self,
            parts: *mut ex_partition,
            n: usize,
            errors: *const ex_record_errors,
            err: *mut ex_error,
        ) -> i32,
    >,
}

#[repr(C)]
pub struct ex_component {
    pub struct_size: u32,
    pub kind: i32,
    pub name: *const c_char,
    pub doc: *const c_char,
    pub fields: *const ex_config_field,
    pub field_count: usize,
    pub vtable: *const c_void,
}

#[repr(C)]
pub struct ex_plugin_descriptor {
    pub struct_size: u32,
    pub abi_version: u32,
    pub name: *const c_char,
    pub version: *const c_char,
    pub components: *const ex_component,
    pub component_count: usize,
    // 1.4: build facts, checked by the host at load (see `build_facts` below)
    pub pointer_size: u32,
    pub byte_order: u32,
    pub record_size: u32,
    pub batch_size: u32,
    pub partition_size: u32,
    pub header_size: u32,
    pub config_entry_size: u32,
}

/// Read back as another number by a host of the other byte order.
pub const EX_BYTE_ORDER_MARK: u32 = 0x01020304;

/// The 1.4 build facts of this build, in descriptor order (EX_PLUGIN_BUILD_FACTS in C):
/// `ex_plugin_descriptor { pointer_size: f[0], byte_order: f[1], ... }`.
pub const fn build_facts() -> [u32; 7] {
    use std::mem::size_of;
    [
        size_of::<*const c_void>() as u32,
        EX_BYTE_ORDER_MARK,
        size_of::<ex_record>() as u32,
        size_of::<ex_batch>() as u32,
        size_of::<ex_partition>() as u32,
        size_of::<ex_header>() as u32,
        size_of::<ex_config_entry>() as u32,
    ]
}

pub type ex_plugin_entry_fn =
    Option<unsafe extern "C" fn(host_abi_version: u32) -> *const ex_plugin_descriptor>;

// ---------------------------------------------------------------- the check against the header

#[cfg(test)]
mod layout;
